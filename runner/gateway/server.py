"""The model gateway: a loopback HTTP proxy between agents and model providers.

One gateway serves a whole run. Each trial gets its own route, ``/t/<token>``, with a
random token the agent cannot guess for another trial; the agent's base URL is
``<gateway>/t/<token>`` and it calls ``/v1/messages``, ``/v1/responses`` or
``/v1/chat/completions`` under it. Every such call becomes one
:class:`~runner.gateway.records.CallRecord`, handed to ``on_call`` (from the gateway's
thread) and kept per trial.

Modes:

``forward``  pass the call to the real provider, streaming through as it arrives
             (:mod:`runner.gateway.forward`; the provider key never reaches the agent).
``record``   forward, and append every exchange (redacted) to the trial's recording
             (:mod:`runner.gateway.recording`).
``replay``   answer from a recording, by conversation position; a request that does
             not match the recording gets a clear error (``gateway_error``).
``scripted`` answer from a :class:`~runner.gateway.script.Script`.

The gateway never retries on its own: retries are the agent's behaviour, and they are
counted (``CallRecord.retries``). It runs its aiohttp server and client on an event loop
in a background thread, so synchronous runner code uses it as a context manager.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets as _secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from contract.redact import compile_redactor
from runner.agents.agent_report import short
from runner.gateway import sse
from runner.gateway.calls import AGENT_GONE, CallBook, TrialRoute, call_fields
from runner.gateway.forward import Forwarder
from runner.gateway.http import MAX_REQUEST_BYTES, api_error, json_error
from runner.gateway.recording import Replay, ReplayMismatch, recording_path, route_key, untemplated
from runner.gateway.records import CallRecord, GatewayMode, Provider
from runner.gateway.script import Answer, Script, ScriptMismatch, pick, render
from runner.gateway.settings import DEFAULT_UPSTREAMS, MODES, GatewayConfigError, Upstream
from runner.gateway.wire import ROUTES, BadRequest, RequestInfo, ResponseTap, read_request


class Gateway:
    """Start with ``with Gateway(...) as gw:``; ``gw.open_trial(id)`` returns the agent's base URL."""

    def __init__(
        self,
        mode: GatewayMode,
        *,
        upstreams: Mapping[Provider, Upstream] | None = None,
        script: Script | None = None,
        recording_dir: Path | None = None,
        on_call: Callable[[CallRecord], None] | None = None,
        env: Mapping[str, str] | None = None,
        secret_env: Sequence[str] = (),
        secrets: Sequence[str] = (),
        host: str = "127.0.0.1",
        port: int = 0,
        upstream_timeout_s: float = 900.0,
        idle_timeout_s: float = 300.0,
    ) -> None:
        if mode not in MODES:
            raise GatewayConfigError(f"mode {mode!r} is unknown; use one of {', '.join(MODES)}")
        if mode in ("record", "replay") and recording_dir is None:
            raise GatewayConfigError(f"mode {mode!r} needs recording_dir")
        self.mode = mode
        self.upstreams = dict(DEFAULT_UPSTREAMS if upstreams is None else upstreams)
        self.script = script
        self.recording_dir = Path(recording_dir) if recording_dir is not None else None
        env = dict(os.environ if env is None else env)
        keys = [env.get(u.api_key_env, "") for u in self.upstreams.values() if u.api_key_env]
        # ``secrets``: values the caller redacts everywhere else (a run's Redactor), so the
        # recordings and error texts hide exactly what the run's other evidence hides.
        redactor = compile_redactor([env.get(n, "") for n in secret_env] + keys + list(secrets))
        if mode in ("forward", "record"):
            missing = sorted({u.api_key_env for u in self.upstreams.values()
                              if u.api_key_env and not env.get(u.api_key_env)})
            self.missing_keys = missing
        else:
            self.missing_keys = []
        self.host, self.port = host, port
        self.upstream_timeout_s, self.idle_timeout_s = upstream_timeout_s, idle_timeout_s
        self._trials: dict[str, TrialRoute] = {}
        self._by_token: dict[str, TrialRoute] = {}
        self._lock = threading.Lock()
        self._book = CallBook(redactor, on_call, self._lock)
        self._forwarder = Forwarder(self.upstreams, env, self._book, upstream_timeout_s=upstream_timeout_s,
                                    idle_timeout_s=idle_timeout_s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.base_url: str | None = None

    @property
    def on_call(self) -> Callable[[CallRecord], None] | None:
        """Called (from the gateway's thread) with every call record as it is made."""
        return self._book.on_call

    @on_call.setter
    def on_call(self, callback: Callable[[CallRecord], None] | None) -> None:
        self._book.on_call = callback

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Bind (port 0 = any free port), start serving, return the gateway's base URL."""
        if self._thread is not None:
            return self._served_url()
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_server())
            except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="trialhouse-gateway", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            self._thread = None
            raise GatewayConfigError(f"gateway could not start on {self.host}:{self.port}: {failure[0]}")
        return self._served_url()

    def _served_url(self) -> str:
        assert self.base_url is not None  # set by _start_server before start() returns
        return self.base_url

    async def _start_server(self) -> None:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        app.router.add_route("*", "/t/{token}/{tail:.*}", self._handle)
        app.router.add_route("*", "/{tail:.*}", self._no_route)
        # handler_cancellation: an agent that hangs up (killed at its timeout) cancels the
        # call, so a slow upstream or scripted delay never outlives it; shutdown waits 2 s.
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True,
                                     shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.port = port
        self.base_url = f"http://{host}:{port}"
        if self.mode in ("forward", "record"):
            self._forwarder.open_session()

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return

        async def shutdown() -> None:
            await self._forwarder.close_session()
            if self._runner is not None:
                await self._runner.cleanup()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._thread = None

    # ------------------------------------------------------------ trials

    def open_trial(self, trial_id: str, *, stage: str | None = None, attempt: int | None = None,
                   variables: Mapping[str, str] | None = None, script: Script | None = None,
                   replay_from: str | None = None) -> str:
        """Open a route for one trial (or one stage invocation of it); return its base URL.

        Append ``/v1`` for OpenAI clients. With ``stage``/``attempt`` the route (and its
        recording) is that stage's, and every record carries them; close it when the
        stage ends and open the next. ``variables`` fill ``{name}`` in a script; ``script``
        overrides the gateway's; ``replay_from`` names the recorded route to replay
        (``route_key(trial, stage, attempt)``; default: this one).
        """
        if self.base_url is None:
            raise GatewayConfigError("start the gateway before opening trials")
        if self.mode == "scripted" and (script or self.script) is None:
            raise GatewayConfigError("scripted mode needs a script (Gateway(script=...) or open_trial(script=...))")
        key = route_key(trial_id, stage, attempt)
        replay = None
        if self.mode == "replay":
            replay = Replay.load(recording_path(self._recording_dir(), replay_from or key))
        recording = None
        if self.mode == "record":
            recording = recording_path(self._recording_dir(), key)
            recording.parent.mkdir(parents=True, exist_ok=True)
            recording.write_text("")
        trial = TrialRoute(trial_id, stage, attempt, _secrets.token_urlsafe(12), dict(variables or {}),
                       script or self.script, replay, recording)
        with self._lock:
            if key in self._trials:
                raise GatewayConfigError(f"route {key!r} is already open")
            self._trials[key] = trial
            self._by_token[trial.token] = trial
        return f"{self.base_url}/t/{trial.token}"

    def _recording_dir(self) -> Path:
        assert self.recording_dir is not None  # record and replay modes need one (checked in __init__)
        return self.recording_dir

    def calls(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> list[CallRecord]:
        with self._lock:
            return list(self._trials[route_key(trial_id, stage, attempt)].calls)

    def close_trial(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> list[CallRecord]:
        """Forget the route (later calls get 404) and return its calls."""
        with self._lock:
            trial = self._trials.pop(route_key(trial_id, stage, attempt))
            self._by_token.pop(trial.token, None)
            return list(trial.calls)

    # ------------------------------------------------------------ serving

    async def _no_route(self, request: web.Request) -> web.Response:
        return json_error(404, "not_found_error",
                           f"no trial route: call {request.path} under the /t/<token> base URL "
                           "the runner gave the agent")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            trial = self._by_token.get(request.match_info["token"])
        if trial is None:
            return json_error(404, "not_found_error", "unknown or closed trial route")
        path = "/" + request.match_info["tail"]
        api = ROUTES.get(path.rstrip("/"))
        if api is None or request.method != "POST":
            if self.mode in ("forward", "record"):
                return await self._forwarder.forward_other(request, path)
            return json_error(404, "not_found_error", f"{request.method} {path} is not served in {self.mode} mode")
        arrived = time.monotonic()
        ts = datetime.now(UTC)
        body = await request.read()
        digest = hashlib.sha256(body).hexdigest()
        try:
            info = read_request(api, body)
        except BadRequest as exc:
            response = api_error(api, 400, "invalid_request_error", str(exc))
            self._book.finish(trial, call_fields(trial, ts, self.mode, api, None, digest, arrived,
                                                 status=400, error=str(exc), gateway_error="bad_request"))
            return response
        key = (info.api, info.side, info.position, info.tool_result_ids)
        attempt = trial.attempts[key]
        trial.attempts[key] += 1
        base = call_fields(trial, ts, self.mode, api, info, digest, arrived, retries=attempt)
        if self.mode == "scripted":
            return await self._scripted(request, trial, info, attempt, base)
        if self.mode == "replay":
            return await self._replayed(request, trial, info, attempt, base)
        return await self._forwarder.forward(request, trial, info, path, body, base)

    # -- scripted / replay

    async def _scripted(self, request: web.Request, trial: TrialRoute, info: RequestInfo, attempt: int,
                        base: dict[str, Any]) -> web.StreamResponse:
        script = trial.script
        assert script is not None
        try:
            reply, _ = pick(script, info.position, attempt, info.side)
        except ScriptMismatch as exc:
            return self._refuse(trial, info, base, "script_mismatch", str(exc))
        model = script.response_model or info.model or "scripted-model"
        answer = render(info.api, reply, stream=info.stream, model=model, position=info.position,
                        attempt=attempt, variables=trial.variables)
        return await self._send(request, trial, info, answer, base)

    async def _replayed(self, request: web.Request, trial: TrialRoute, info: RequestInfo, attempt: int,
                        base: dict[str, Any]) -> web.StreamResponse:
        assert trial.replay is not None
        try:
            answer = trial.replay.answer(info, attempt)
        except ReplayMismatch as exc:
            return self._refuse(trial, info, base, "replay_mismatch", str(exc))
        if trial.variables:
            answer = replace(answer, chunks=[(w, untemplated(c.decode("utf-8", "replace"), trial.variables).encode())
                                             for w, c in answer.chunks])
        return await self._send(request, trial, info, answer, base)

    def _refuse(self, trial: TrialRoute, info: RequestInfo, base: dict[str, Any], kind: str,
                message: str) -> web.Response:
        # 400: clients do not retry it, so the run ends quickly with the reason visible.
        response = api_error(info.api, 400, f"trialhouse_{kind}", message)
        self._book.finish(trial, {**base, "status": 400, "error_type": f"trialhouse_{kind}",
                                  "error": short(message, 500), "gateway_error": kind})
        return response

    async def _send(self, request: web.Request, trial: TrialRoute, info: RequestInfo, answer: Answer,
                    base: dict[str, Any]) -> web.StreamResponse:
        tap = ResponseTap(info.api)
        arrived = base.pop("_arrived")
        response = web.StreamResponse(status=answer.status, headers={"Content-Type": answer.content_type,
                                                                     **answer.headers})
        streamed = answer.content_type.startswith("text/event-stream")
        decoder = sse.SseDecoder()
        first: float | None = None
        body = bytearray()
        started = False
        done = False
        try:
            for wait, chunk in answer.chunks:
                if wait:
                    await asyncio.sleep(wait)
                if not started:
                    await response.prepare(request)
                    started = True
                await response.write(chunk)
                body += chunk
                if streamed:
                    for event in decoder.feed(chunk):
                        if tap.on_event(event) and first is None:
                            first = time.monotonic()
            if not started:
                await response.prepare(request)
            # The record exists before the agent sees the end of the answer, so whoever
            # reads the calls after the agent exits never misses its last one.
            done = True
            self._book.finish_tapped(trial, base, tap, info, answer.status, answer.headers, arrived, first,
                                     streamed, decoder, bytes(body))
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError, asyncio.CancelledError) as exc:
            if not done:  # what was sent before the agent hung up still counts
                self._book.finish_tapped(trial, {**base, "error": AGENT_GONE}, tap, info,
                                         answer.status if started else None, answer.headers, arrived, first,
                                         streamed, decoder, bytes(body))
            if isinstance(exc, asyncio.CancelledError):
                raise
        return response
