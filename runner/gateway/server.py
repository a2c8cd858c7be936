"""The model gateway: a loopback HTTP proxy between agents and model providers.

One gateway serves a whole run. Each trial gets its own route, ``/t/<token>``, with a
random token the agent cannot guess for another trial; the agent's base URL is
``<gateway>/t/<token>`` and it calls ``/v1/messages``, ``/v1/responses`` or
``/v1/chat/completions`` under it. Every such call becomes one
:class:`~runner.gateway.records.CallRecord`, handed to ``on_call`` (from the gateway's
thread) and kept per trial.

Modes:

``forward``  pass the call to the real provider, streaming through as it arrives.
             The provider key comes from the gateway's own environment
             (``Upstream.api_key_env``) and replaces whatever key the agent sent, so the
             agent can run with a dummy key; it is never stored.
``record``   forward, and append every exchange (redacted) to the trial's recording.
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
import json
import logging
import os
import re
import secrets as _secrets
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from contract.redact import compile_redactor
from contract.redact import replacement as _redacted  # same replacement text as stored stdout
from runner.agents.agent_report import short
from runner.gateway import sse
from runner.gateway.records import Api, CallRecord, GatewayMode, Provider
from runner.gateway.script import Answer, Script, ScriptMismatch, pick, render
from runner.gateway.wire import ROUTES, BadRequest, RequestInfo, ResponseTap, read_request

log = logging.getLogger(__name__)

MODES: tuple[GatewayMode, ...] = ("forward", "record", "replay", "scripted")
MAX_REQUEST_BYTES = 64 * 1024 * 1024
"""Long agent sessions resend the whole conversation: aiohttp's 1 MiB default is too small."""
RECORD_BODY_LIMIT = 4 * 1024 * 1024
"""Bodies above this are stored truncated in recordings (with their full size and hash)."""
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "api-key", "cookie",
                            "set-cookie", "openai-organization", "openai-project", "x-goog-api-key"})
HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                         "proxy-connection", "host", "content-length", "content-encoding",
                         "accept-encoding"})
RECORDING_VERSION = 1
AGENT_GONE = "agent closed the connection before the answer was complete"


@dataclass(frozen=True)
class Upstream:
    """Where ``forward``/``record`` send a provider's calls, and which key they add."""

    base_url: str
    """e.g. ``https://api.anthropic.com``; the agent's ``/v1/...`` path is appended."""
    api_key_env: str | None = None
    """Variable of the gateway's environment holding the key. When set, the agent's own
    ``x-api-key``/``authorization`` is dropped and this key sent instead; when None the
    agent's header passes through (and is still never stored)."""


DEFAULT_UPSTREAMS: dict[Provider, Upstream] = {
    "anthropic": Upstream("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": Upstream("https://api.openai.com", "OPENAI_API_KEY"),
}


class GatewayConfigError(ValueError):
    """The gateway was set up wrongly (the runner reports it before any trial starts)."""


class ReplayMismatch(LookupError):
    pass


@dataclass
class _Trial:
    trial_id: str
    stage: str | None
    attempt: int | None
    token: str
    variables: dict[str, str]
    script: Script | None
    replay: _Replay | None
    recording: Path | None
    calls: list[CallRecord] = field(default_factory=list)
    attempts: Counter[tuple[str, bool, int, tuple[str, ...]]] = field(default_factory=Counter)


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
        self.on_call = on_call
        self._env = dict(os.environ if env is None else env)
        keys = [self._env.get(u.api_key_env, "") for u in self.upstreams.values() if u.api_key_env]
        # ``secrets``: values the caller redacts everywhere else (a run's Redactor), so the
        # recordings and error texts hide exactly what the run's other evidence hides.
        self._redactor = compile_redactor([self._env.get(n, "") for n in secret_env] + keys + list(secrets))
        if mode in ("forward", "record"):
            missing = sorted({u.api_key_env for u in self.upstreams.values()
                              if u.api_key_env and not self._env.get(u.api_key_env)})
            self.missing_keys = missing
        else:
            self.missing_keys = []
        self.host, self.port = host, port
        self.upstream_timeout_s, self.idle_timeout_s = upstream_timeout_s, idle_timeout_s
        self._trials: dict[str, _Trial] = {}
        self._by_token: dict[str, _Trial] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.base_url: str | None = None

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> Gateway:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> str:
        """Bind (port 0 = any free port), start serving, return the gateway's base URL."""
        if self._thread is not None:
            return self.base_url  # type: ignore[return-value]
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
        return self.base_url  # type: ignore[return-value]

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
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0),
                timeout=aiohttp.ClientTimeout(total=self.upstream_timeout_s, sock_read=self.idle_timeout_s),
            )

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return

        async def shutdown() -> None:
            if self._session is not None:
                await self._session.close()
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
            replay = _Replay.load(recording_path(self.recording_dir, replay_from or key))  # type: ignore[arg-type]
        recording = None
        if self.mode == "record":
            recording = recording_path(self.recording_dir, key)  # type: ignore[arg-type]
            recording.parent.mkdir(parents=True, exist_ok=True)
            recording.write_text("")
        trial = _Trial(trial_id, stage, attempt, _secrets.token_urlsafe(12), dict(variables or {}),
                       script or self.script, replay, recording)
        with self._lock:
            if key in self._trials:
                raise GatewayConfigError(f"route {key!r} is already open")
            self._trials[key] = trial
            self._by_token[trial.token] = trial
        return f"{self.base_url}/t/{trial.token}"

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
        return _json_error(404, "not_found_error",
                           f"no trial route: call {request.path} under the /t/<token> base URL "
                           "the runner gave the agent")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            trial = self._by_token.get(request.match_info["token"])
        if trial is None:
            return _json_error(404, "not_found_error", "unknown or closed trial route")
        path = "/" + request.match_info["tail"]
        api = ROUTES.get(path.rstrip("/"))
        if api is None or request.method != "POST":
            if self.mode in ("forward", "record"):
                return await self._forward_other(request, path)
            return _json_error(404, "not_found_error", f"{request.method} {path} is not served in {self.mode} mode")
        arrived = time.monotonic()
        ts = datetime.now(UTC)
        body = await request.read()
        digest = hashlib.sha256(body).hexdigest()
        try:
            info = read_request(api, body)
        except BadRequest as exc:
            response = _api_error(api, 400, "invalid_request_error", str(exc))
            self._finish(trial, _call_fields(trial, ts, self.mode, api, None, digest, arrived,
                                             status=400, error=str(exc), gateway_error="bad_request"))
            return response
        key = (info.api, info.side, info.position, info.tool_result_ids)
        attempt = trial.attempts[key]
        trial.attempts[key] += 1
        base = _call_fields(trial, ts, self.mode, api, info, digest, arrived, retries=attempt)
        if self.mode == "scripted":
            return await self._scripted(request, trial, info, attempt, base)
        if self.mode == "replay":
            return await self._replayed(request, trial, info, attempt, base)
        return await self._forward(request, trial, info, path, body, base)

    # -- scripted / replay

    async def _scripted(self, request, trial: _Trial, info: RequestInfo, attempt: int, base: dict[str, Any]):
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

    async def _replayed(self, request, trial: _Trial, info: RequestInfo, attempt: int, base: dict[str, Any]):
        assert trial.replay is not None
        try:
            answer = trial.replay.answer(info, attempt)
        except ReplayMismatch as exc:
            return self._refuse(trial, info, base, "replay_mismatch", str(exc))
        if trial.variables:
            answer = replace(answer, chunks=[(w, untemplated(c.decode("utf-8", "replace"), trial.variables).encode())
                                             for w, c in answer.chunks])
        return await self._send(request, trial, info, answer, base)

    def _refuse(self, trial: _Trial, info: RequestInfo, base: dict[str, Any], kind: str, message: str):
        # 400: clients do not retry it, so the run ends quickly with the reason visible.
        response = _api_error(info.api, 400, f"trialhouse_{kind}", message)
        self._finish(trial, {**base, "status": 400, "error_type": f"trialhouse_{kind}",
                             "error": short(message, 500), "gateway_error": kind})
        return response

    async def _send(self, request, trial: _Trial, info: RequestInfo, answer: Answer, base: dict[str, Any]):
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
            self._finish_tapped(trial, base, tap, info, answer.status, answer.headers, arrived, first, streamed,
                                decoder, bytes(body))
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError, asyncio.CancelledError) as exc:
            if not done:  # what was sent before the agent hung up still counts
                self._finish_tapped(trial, {**base, "error": AGENT_GONE}, tap, info,
                                    answer.status if started else None, answer.headers, arrived, first,
                                    streamed, decoder, bytes(body))
            if isinstance(exc, asyncio.CancelledError):
                raise
        return response

    def _finish_tapped(self, trial: _Trial, base: dict[str, Any], tap: ResponseTap, info: RequestInfo,
                       status: int | None, headers: Mapping[str, str], arrived: float, first: float | None,
                       streamed: bool, decoder: sse.SseDecoder, body: bytes) -> dict[str, Any]:
        if streamed:
            for event in decoder.close():
                tap.on_event(event)
        else:
            tap.on_body(body, status or 0)
        fields = self._tap_fields(base, tap, info, status, headers, arrived, first, streamed, decoder)
        self._finish(trial, fields)
        return fields

    # -- forward / record

    async def _forward(self, request: web.Request, trial: _Trial, info: RequestInfo, path: str, body: bytes,
                       base: dict[str, Any]):
        arrived = base.pop("_arrived")
        upstream = self.upstreams.get(info.provider)
        if upstream is None:
            message = f"no upstream configured for provider {info.provider}"
            self._finish(trial, {**base, "status": 502, "error": message, "gateway_error": "upstream_unreachable",
                                 "latency_s": time.monotonic() - arrived})
            return _api_error(info.api, 502, "api_error", message)
        headers = self._upstream_headers(request, info.provider, upstream)
        url = upstream.base_url.rstrip("/") + path + (f"?{request.query_string}" if request.query_string else "")
        assert self._session is not None
        tap = ResponseTap(info.api)
        decoder = sse.SseDecoder()
        first: float | None = None
        kept = bytearray()
        response: web.StreamResponse | None = None
        status: int | None = None
        up_headers: dict[str, str] = {}
        streamed = False
        done = False
        try:
            async with self._session.post(url, data=body, headers=headers) as up:
                status = up.status
                up_headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_HEADERS}
                streamed = up.headers.get("Content-Type", "").startswith("text/event-stream")
                response = web.StreamResponse(status=up.status, headers=up_headers)
                await response.prepare(request)
                async for chunk in up.content.iter_any():
                    await response.write(chunk)
                    if len(kept) < RECORD_BODY_LIMIT:
                        kept += chunk[: RECORD_BODY_LIMIT - len(kept)]
                    if streamed:
                        for event in decoder.feed(chunk):
                            if tap.on_event(event) and first is None:
                                first = time.monotonic()
                done = True
                fields = self._finish_tapped(trial, base, tap, info, status, up_headers, arrived, first, streamed,
                                             decoder, bytes(kept))
                self._record(trial, info, request, body, status, up_headers, bytes(kept), fields)
                await response.write_eof()
                return response
        except asyncio.CancelledError:
            # The agent hung up (often right after the last event, before the upstream's
            # end): the tokens and tools already seen are still the call's.
            if not done:
                fields = self._finish_tapped(trial, {**base, "error": AGENT_GONE}, tap, info, status, up_headers,
                                             arrived, first, streamed, decoder, bytes(kept))
                self._record(trial, info, request, body, status, up_headers, bytes(kept), fields)
            raise
        except TimeoutError:
            base.update(gateway_error="upstream_timeout",
                        error=f"upstream sent nothing for {self.idle_timeout_s:g} s or took over "
                              f"{self.upstream_timeout_s:g} s")
        except (ConnectionResetError, aiohttp.ClientConnectionResetError) as exc:
            if response is None:
                base.update(gateway_error="upstream_unreachable", error=short(f"upstream reset: {exc}", 500))
            else:
                base.update(error="connection reset mid-stream")
        except aiohttp.ClientError as exc:
            base.update(gateway_error="upstream_unreachable", error=short(f"{type(exc).__name__}: {exc}", 500))
        if done:  # the agent went away while the answer's end was being written
            return response  # type: ignore[return-value]
        if response is None:
            gateway_status = 504 if base.get("gateway_error") == "upstream_timeout" else 502
            message = self._redact(base.get("error") or "upstream failed")
            fields = {**base, "status": gateway_status, "latency_s": time.monotonic() - arrived, "error": message}
            self._finish(trial, fields)
            self._record(trial, info, request, body, gateway_status, {}, b"", fields)
            return _api_error(info.api, gateway_status, "api_error", message)
        # Failed mid-stream: record what arrived, then end the (truncated) answer.
        fields = self._finish_tapped(trial, base, tap, info, status, up_headers, arrived, first, streamed,
                                     decoder, bytes(kept))
        self._record(trial, info, request, body, status, up_headers, bytes(kept), fields)
        try:
            await response.write_eof()
        except (ConnectionResetError, aiohttp.ClientConnectionResetError):
            pass
        return response

    async def _forward_other(self, request: web.Request, path: str) -> web.StreamResponse:
        """Anything else under /v1 (model lists, token counts): passed through, not a model call."""
        provider: Provider = "anthropic" if "anthropic-version" in request.headers else "openai"
        upstream = self.upstreams.get(provider)
        if upstream is None or self._session is None:
            return _json_error(404, "not_found_error", f"{path}: no upstream for {provider}")
        url = upstream.base_url.rstrip("/") + path + (f"?{request.query_string}" if request.query_string else "")
        body = await request.read()
        try:
            async with self._session.request(request.method, url, data=body or None,
                                             headers=self._upstream_headers(request, provider, upstream)) as up:
                data = await up.read()
                headers = {k: v for k, v in up.headers.items() if k.lower() not in HOP_HEADERS}
                return web.Response(status=up.status, body=data, headers=headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return _json_error(502, "api_error", self._redact(f"upstream failed: {exc}"))

    def _upstream_headers(self, request: web.Request, provider: Provider, upstream: Upstream) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        headers["Accept-Encoding"] = "identity"
        if upstream.api_key_env:
            for name in list(headers):
                if name.lower() in ("x-api-key", "authorization"):
                    del headers[name]
            key = self._env.get(upstream.api_key_env, "")
            if provider == "anthropic":
                headers["x-api-key"] = key
            else:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    # ------------------------------------------------------------ records

    def _tap_fields(self, base, tap: ResponseTap, info: RequestInfo, status, headers: Mapping[str, str],
                    arrived: float, first: float | None, streamed: bool, decoder: sse.SseDecoder) -> dict[str, Any]:
        tokens = tap.tokens()
        note = None
        if tap.cut_short:
            note = "stream ended before the final usage: output tokens unknown"
        elif status is not None and status < 400 and all(v is None for v in tokens.values()):
            if tap.unparsed and (tap.events == tap.unparsed or not streamed):
                note = "response is not in the API's format: tokens unknown"
            elif streamed and decoder.lines == 0:
                note = "empty or non-SSE stream: tokens unknown"
            else:
                note = "response carried no usage: tokens unknown"
        lower = {k.lower(): v for k, v in headers.items()}
        request_id = lower.get("request-id") or lower.get("x-request-id") or tap.response_id
        fields = {
            **base,
            "status": status,
            "request_id": request_id,
            "response_id": tap.response_id,
            "response_model": tap.response_model,
            "stop_reason": tap.stop_reason,
            "tool_calls": tap.tool_calls,
            **tokens,
            "provider_usage": tap.usage,
            "latency_s": max(time.monotonic() - arrived, 0.0),
            "ttft_s": None if first is None else max(first - arrived, 0.0),
            "usage_note": note,
        }
        if tap.error_type or tap.error:
            fields["error_type"] = tap.error_type
            fields["error"] = self._redact(tap.error) if tap.error else fields.get("error")
        return fields

    def _finish(self, trial: _Trial, fields: dict[str, Any]) -> None:
        arrived = fields.pop("_arrived", None)
        if "latency_s" not in fields:
            fields["latency_s"] = max(time.monotonic() - arrived, 0.0) if arrived is not None else 0.0
        with self._lock:
            call = CallRecord(**fields, call_index=len(trial.calls))
            trial.calls.append(call)
        if self.on_call is not None:
            try:
                self.on_call(call)
            except Exception:  # noqa: BLE001 - a callback bug must not break the agent's call
                log.exception("gateway on_call callback failed")

    def _redact(self, text: str) -> str:
        return self._redactor.sub(_redacted, text)

    def _record(self, trial: _Trial, info: RequestInfo, request: web.Request, body: bytes, status: int | None,
                headers: Mapping[str, str], response_body: bytes, fields: dict[str, Any]) -> None:
        if trial.recording is None:
            return
        exchange = {
            "v": RECORDING_VERSION,
            "index": len(trial.calls) - 1,
            "api": info.api,
            "side": info.side,
            "position": info.position,
            "tool_result_ids": list(info.tool_result_ids),
            "model": info.model,
            "stream": info.stream,
            "request": {
                "path": request.match_info["tail"],
                "headers": {k: ("[REDACTED]" if k.lower() in SECRET_HEADERS else self._redact(v))
                            for k, v in request.headers.items()},
                **self._body_for_record(body),
            },
            "response": {
                "status": status,
                "content_type": next((v for k, v in headers.items() if k.lower() == "content-type"), None),
                "headers": {k: self._redact(v) for k, v in headers.items()
                            if k.lower() in ("request-id", "x-request-id", "content-type")},
                **self._body_for_record(response_body, trial.variables),
            },
            "call": trial.calls[-1].model_dump(mode="json"),
        }
        with open(trial.recording, "a", encoding="utf-8") as out:
            out.write(json.dumps(exchange, ensure_ascii=False) + "\n")

    def _body_for_record(self, body: bytes, variables: Mapping[str, str] | None = None) -> dict[str, Any]:
        text = body[:RECORD_BODY_LIMIT].decode("utf-8", errors="replace")
        if variables:
            text = templated(text, variables)
        return {"body": self._redact(text), "body_bytes": len(body), "body_truncated": len(body) > RECORD_BODY_LIMIT}


def _call_fields(trial: _Trial, ts: datetime, mode: GatewayMode, api: Api, info: RequestInfo | None,
                 digest: str, arrived: float, **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "trial_id": trial.trial_id,
        "stage": trial.stage,
        "attempt": trial.attempt,
        "ts": ts,
        "mode": mode,
        "provider": "anthropic" if api == "messages" else "openai",
        "api": api,
        "request_sha256": digest,
        "_arrived": arrived,
    }
    if info is not None:
        fields.update(model=info.model, streamed=info.stream, position=info.position, side_request=info.side,
                      service_tier=info.service_tier)
    if "status" in extra:
        extra["latency_s"] = time.monotonic() - arrived
    fields.update(extra)
    return fields


def _json_error(status: int, kind: str, message: str) -> web.Response:
    return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def _api_error(api: Api, status: int, kind: str, message: str) -> web.Response:
    if api == "messages":
        return _json_error(status, kind, message)
    return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": kind}},
                             status=status)


# ---------------------------------------------------------------- recordings


def templated(text: str, variables: Mapping[str, str]) -> str:
    """A recorded answer with the route's variable values written as ``{name}``.

    A trial's workspace is a different directory in every run, and harnesses name files by
    absolute path (Claude's ``Read``/``Edit``): recorded as ``{workspace}``, an answer
    replays into the new trial's workspace instead of the recorded run's."""
    for name, value in sorted(variables.items(), key=lambda kv: -len(kv[1])):
        if len(value) >= 4:
            text = text.replace(value, "{" + name + "}")
    return text


def untemplated(text: str, variables: Mapping[str, str]) -> str:
    """The inverse of :func:`templated` for the replaying route's variables."""
    for name, value in variables.items():
        text = text.replace("{" + name + "}", value)
    return text


def route_key(trial_id: str, stage: str | None = None, attempt: int | None = None) -> str:
    """How a route is named (and its recording): the trial id, plus ``/stage/attempt``."""
    if stage is None and attempt is None:
        return trial_id
    return f"{trial_id}/{stage or '-'}/{attempt or 1}"


def recording_path(recording_dir: Path, trial_id: str) -> Path:
    """One JSONL file per trial; the name is the trial id made path-safe, plus a short hash."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", trial_id)[:80]
    return Path(recording_dir) / f"{safe}-{hashlib.sha256(trial_id.encode()).hexdigest()[:8]}.jsonl"


class _Replay:
    """A recording indexed by (side request?, position); attempts walk each list in order."""

    def __init__(self, path: Path, exchanges: list[dict[str, Any]]) -> None:
        self.path = path
        self.by_key: dict[tuple[bool, int], list[dict[str, Any]]] = {}
        for exchange in exchanges:
            self.by_key.setdefault((bool(exchange["side"]), int(exchange["position"])), []).append(exchange)

    @classmethod
    def load(cls, path: Path) -> _Replay:
        if not path.is_file():
            raise GatewayConfigError(f"{path}: no recording for this trial (record it first)")
        exchanges = []
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                exchange = json.loads(line)
                if exchange.get("v") != RECORDING_VERSION:
                    raise ValueError(f"recording version {exchange.get('v')!r}, expected {RECORDING_VERSION}")
                for name in ("api", "side", "position", "tool_result_ids", "model", "response"):
                    if name not in exchange:
                        raise ValueError(f"missing field {name!r}")
            except (ValueError, AttributeError) as exc:
                raise GatewayConfigError(f"{path}:{number}: not a gateway recording line ({exc})") from None
            exchanges.append(exchange)
        return cls(path, exchanges)

    def answer(self, info: RequestInfo, attempt: int) -> Answer:
        found = self.by_key.get((info.side, info.position))
        if found is None and info.side:
            # Side requests (titles, probes) do not steer the loop: any recorded one will do.
            found = next((v for (side, _), v in sorted(self.by_key.items()) if side), None)
        if found is None:
            positions = sorted(p for side, p in self.by_key if not side)
            raise ReplayMismatch(
                f"recording {self.path.name} has no {'side request' if info.side else 'call'} at conversation "
                f"position {info.position}; recorded positions: {positions}")
        exchange = found[min(attempt, len(found) - 1)]
        problems = []
        if exchange["api"] != info.api:
            problems.append(f"api {info.api} != recorded {exchange['api']}")
        if exchange["model"] != info.model:
            problems.append(f"model {info.model!r} != recorded {exchange['model']!r}")
        if not info.side and list(info.tool_result_ids) != exchange["tool_result_ids"]:
            problems.append(f"tool results for {list(info.tool_result_ids)} != recorded {exchange['tool_result_ids']}")
        if problems:
            raise ReplayMismatch(f"request at position {info.position} does not match recording "
                                 f"{self.path.name}: " + "; ".join(problems))
        response = exchange["response"]
        status = response.get("status") or 502
        kind = response.get("content_type") or "application/json"
        headers = {k: v for k, v in (response.get("headers") or {}).items() if k.lower() != "content-type"}
        return Answer(status, kind, [(0.0, (response.get("body") or "").encode())], headers)
