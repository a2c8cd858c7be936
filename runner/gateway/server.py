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
import json
import os
import secrets as _secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from contract.redact import compile_redactor
from runner.gateway.answers import replayed, scripted
from runner.gateway.calls import CallBook, RouteReport, TrialRoute, call_fields
from runner.gateway.forward import Forwarder
from runner.gateway.http import MAX_REQUEST_BYTES, api_error, json_error
from runner.gateway.links import (
    DEFAULT_MAX_TCP_CONNECTIONS,
    Breach,
    Caps,
    Counter,
    LinkRoot,
    OnceLog,
    counted,
    open_link,
    quiet_floods,
)
from runner.gateway.loop import LoopThread
from runner.gateway.proxy import Proxy
from runner.gateway.recording import Replay, recording_path, route_key, task_differences, task_line
from runner.gateway.records import CallRecord, ConnectionRecord, GatewayMode, Provider
from runner.gateway.script import Script
from runner.gateway.settings import DEFAULT_UPSTREAMS, MODES, GatewayConfigError, Upstream
from runner.gateway.wire import ROUTES, BadRequest, read_request
from runner.sandbox.forwarder import MODEL_PORT


class Gateway(LoopThread):
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
        caps: Caps | None = None,
        allow_hosts: Sequence[str] = (),
        max_tcp_connections: int = DEFAULT_MAX_TCP_CONNECTIONS,
    ) -> None:
        super().__init__()
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
        self._runner: web.AppRunner | None = None
        self.base_url: str | None = None
        self.caps = caps or Caps()
        self.allow_hosts = list(allow_hosts)
        self._links = LinkRoot()
        self._tcp = Counter(max_tcp_connections)
        self._tcp_live: set[asyncio.BaseTransport] = set()
        self._tcp_server: asyncio.AbstractServer | None = None
        self._once = OnceLog()

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
        if self.running:
            return self._served_url()
        quiet_floods()
        failure = self.start_loop(self._start_server, "trialhouse-gateway")
        if failure is not None:
            raise GatewayConfigError(f"gateway could not start on {self.host}:{self.port}: {failure}")
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
        server = self._runner.server
        assert server is not None
        # The TCP listener (open networks, judges, library use) holds a run-wide number of
        # connections at once: an idle connection names no route, so no trial can be charged.
        factory = counted(server, self._tcp, self._tcp_live, lambda: self._once.warn(
            "tcp", f"model gateway: {self._tcp.cap} connections open at once on its TCP port; "
                   "further connections are refused"))
        self._tcp_server = await asyncio.get_running_loop().create_server(
            factory, self.host, self.port, family=socket.AF_INET)
        host, port = self._tcp_server.sockets[0].getsockname()[:2]
        self.port = port
        self.base_url = f"http://{host}:{port}"
        if self.mode in ("forward", "record"):
            self._forwarder.open_session()

    def stop(self) -> None:
        if not self.running:
            return

        async def shutdown() -> None:
            with self._lock:
                links = [t.link for t in self._trials.values() if t.link is not None]
            for link in links:
                await link.close()
            if self._tcp_server is not None:
                self._tcp_server.close()
            for transport in list(self._tcp_live):
                transport.abort()  # type: ignore[attr-defined]
            await self._forwarder.close_session()
            if self._runner is not None:
                await self._runner.cleanup()

        self.stop_loop(shutdown())
        self._links.remove()

    # ------------------------------------------------------------ trials

    def open_trial(self, trial_id: str, *, stage: str | None = None, attempt: int | None = None,
                   variables: Mapping[str, str] | None = None, script: Script | None = None,
                   replay_from: str | None = None, linked: bool = False,
                   task: Mapping[str, Any] | None = None, main_loop: tuple[str, str | None] = ("tools", None)
                   ) -> str:
        """Open a route for one trial (or one stage invocation of it); return its base URL.

        Append ``/v1`` for OpenAI clients. With ``stage``/``attempt`` the route (and its
        recording) is that stage's, and every record carries them; close it when the
        stage ends and open the next. ``variables`` fill ``{name}`` in a script; ``script``
        overrides the gateway's; ``replay_from`` names the recorded route to replay
        (``route_key(trial, stage, attempt)``; default: this one). ``linked``: the route is
        reached through its own socket directory (``link_of``) by a sandbox with its own
        network; the URL returned is then the forwarder's on the sandbox's loopback.
        ``task``: the stage's task key (``runner.task_key``): written first into a recording;
        in replay compared with the recording's, a difference refused here, naming it.
        ``main_loop``: (rule, the variant's model) saying which calls are side requests
        (``TrialRoute.classify``).
        """
        if self.base_url is None:
            raise GatewayConfigError("start the gateway before opening trials")
        if self.mode == "scripted" and (script or self.script) is None:
            raise GatewayConfigError("scripted mode needs a script (Gateway(script=...) or open_trial(script=...))")
        key = route_key(trial_id, stage, attempt)
        replay = None
        if self.mode == "replay":
            replay = Replay.load(recording_path(self._recording_dir(), replay_from or key))
            differs = task_differences(replay.task, task) if task is not None else []
            if differs:
                raise GatewayConfigError(f"replay_mismatch: recording {replay.path.name} was made for another "
                                         "task: " + "; ".join(differs))
        recording = None
        if self.mode == "record":
            recording = recording_path(self._recording_dir(), key)
            recording.parent.mkdir(parents=True, exist_ok=True)
            head = json.dumps(task_line(task), ensure_ascii=False) + "\n" if task is not None else ""
            recording.write_text(self._book.redact(head), encoding="utf-8")
        trial = TrialRoute(trial_id, stage, attempt, _secrets.token_urlsafe(12), dict(variables or {}),
                           script or self.script, replay, recording, main_loop=main_loop[0], main_model=main_loop[1])
        with self._lock:
            if key in self._trials:
                raise GatewayConfigError(f"route {key!r} is already open")
            self._trials[key] = trial
            self._by_token[trial.token] = trial
        if not linked:
            return f"{self.base_url}/t/{trial.token}"
        try:
            trial.link = self.call(self._open_link(trial))
        except OSError as exc:
            with self._lock:
                self._trials.pop(key, None)
                self._by_token.pop(trial.token, None)
            raise GatewayConfigError(f"could not open the route's sockets: {exc}") from None
        return f"http://127.0.0.1:{MODEL_PORT}/t/{trial.token}"

    async def _open_link(self, trial: TrialRoute) -> Any:
        server = self._runner.server if self._runner is not None else None
        assert server is not None
        proxy = Proxy(self.allow_hosts, lambda fields: self._connection(trial, fields), lambda: self.admit(trial))
        return await open_link(self._links.new_dir(), self.caps, server, proxy,
                               lambda link: self._breach(trial, "connections", link.counter.cap))

    def link_of(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> Path | None:
        """The socket directory of a linked route (mounted into its sandbox), else None."""
        with self._lock:
            trial = self._trials.get(route_key(trial_id, stage, attempt))
        return trial.link.dir if trial is not None and trial.link is not None else None

    def _recording_dir(self) -> Path:
        assert self.recording_dir is not None  # record and replay modes need one (checked in __init__)
        return self.recording_dir

    def calls(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> list[CallRecord]:
        with self._lock:
            return list(self._trials[route_key(trial_id, stage, attempt)].calls)

    def close_trial(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> list[CallRecord]:
        """Forget the route (later calls get 404) and return its calls."""
        return self.close_route(trial_id, stage, attempt).calls

    def close_route(self, trial_id: str, stage: str | None = None, attempt: int | None = None) -> RouteReport:
        """Forget the route (its sockets closed, later calls 404): its calls, proxy
        connections and the first cap it went over."""
        key = route_key(trial_id, stage, attempt)
        with self._lock:
            trial = self._trials[key]
        if trial.link is not None and self.running:
            self.call(trial.link.close())
        with self._lock:
            self._trials.pop(key, None)
            self._by_token.pop(trial.token, None)
            breach = trial.breach
            if breach is not None and breach.kind == "connections" and trial.link is not None:
                breach.refused = trial.link.counter.refused
                breach.used = breach.limit + breach.refused
            return RouteReport(list(trial.calls), list(trial.connections), breach)

    # ------------------------------------------------------------ caps and proxy records

    def admit(self, trial: TrialRoute) -> str | None:
        """Count one request of the route; why it is refused when it is over ``max_requests``."""
        with self._lock:
            trial.requests += 1
            over = trial.requests > self.caps.max_requests
        if over:
            self._breach(trial, "requests", self.caps.max_requests)
            return f"over this trial's request cap (gateway.max_requests={self.caps.max_requests})"
        return None

    def _breach(self, trial: TrialRoute, kind: str, limit: int) -> None:
        with self._lock:
            if trial.breach is None:
                trial.breach = Breach(kind, limit, limit + 1)
            elif trial.breach.kind == kind and kind == "requests":
                trial.breach.used = trial.requests
        where = f"{trial.trial_id}" + (f" ({trial.stage})" if trial.stage else "")
        self._once.warn(f"{where}:{kind}", f"model gateway: trial {where} went over its {kind} cap of {limit}; "
                                           f"every one beyond it is refused (the trial ends budget_exhausted)")

    def _connection(self, trial: TrialRoute, fields: dict[str, Any]) -> None:
        record = ConnectionRecord(trial_id=trial.trial_id, stage=trial.stage, attempt=trial.attempt, **fields)
        with self._lock:
            trial.connections.append(record)

    # ------------------------------------------------------------ serving

    async def _no_route(self, request: web.Request) -> web.Response:
        return json_error(404, "not_found_error",
                           f"no trial route: call {request.path} under the /t/<token> base URL "
                           "the runner gave the agent")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            trial = self._by_token.get(request.match_info["token"])
        # A linked route answers only on its own socket: a token seen elsewhere opens nothing.
        if trial is None or (trial.link is not None and
                             request.transport is not None and
                             request.transport.get_extra_info("sockname") != trial.link.model_socket):
            return json_error(404, "not_found_error", "unknown or closed trial route")
        capped = self.admit(trial)
        if capped is not None:
            return json_error(429, "rate_limit_error", f"trialhouse gateway: {capped}")
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
            info = trial.classify(read_request(api, body))
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
            return await scripted(self._book, request, trial, info, attempt, base)
        if self.mode == "replay":
            return await replayed(self._book, request, trial, info, attempt, base)
        return await self._forwarder.forward(request, trial, info, path, body, base)
