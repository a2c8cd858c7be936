"""From what went over the wire to call records: the per-trial routes and their book-keeping.

Every model call that reaches a trial's route ends as exactly one
:class:`~runner.gateway.records.CallRecord` (``CallBook.finish``), whatever happened to it:
answered, refused, cut short by the agent hanging up, failed upstream. In ``record`` mode the
exchange is appended to the route's recording too (``runner.gateway.recording``). Error texts
and recordings are redacted with the gateway's secrets (docs/gateway.md).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from contract.redact import replacement
from runner.gateway import recording, sse
from runner.gateway.links import Breach, RouteLink
from runner.gateway.recording import Replay
from runner.gateway.records import Api, CallRecord, ConnectionRecord, GatewayMode
from runner.gateway.script import Script
from runner.gateway.wire import RequestInfo, ResponseTap

log = logging.getLogger(__name__)

AGENT_GONE = "agent closed the connection before the answer was complete"


@dataclass
class TrialRoute:
    """One open route (a trial, or one stage invocation of it) and the calls it has seen."""

    trial_id: str
    stage: str | None
    attempt: int | None
    token: str
    variables: dict[str, str]
    script: Script | None
    replay: Replay | None
    recording: Path | None
    calls: list[CallRecord] = field(default_factory=list)
    attempts: Counter[tuple[str, bool, int, tuple[str, ...]]] = field(default_factory=Counter)
    link: RouteLink | None = None
    """The route's socket directory, when its sandbox reaches the gateway through one."""
    requests: int = 0
    """Requests so far (model calls, other paths, proxy connections), against ``max_requests``."""
    breach: Breach | None = None
    """The first cap the route went over (its trial ends ``budget_exhausted``)."""
    connections: list[ConnectionRecord] = field(default_factory=list)
    main_loop: str = "tools"
    """Which calls are the main loop: ``tools`` (offering tools), ``model`` (asking for
    ``main_model``) or ``all`` (``runner.manifest.Agent.main_loop``)."""
    main_model: str | None = None

    def classify(self, info: RequestInfo) -> RequestInfo:
        """``info`` with ``side`` set by the route's ``main_loop`` rule."""
        if self.main_loop == "all":
            return replace(info, side=False)
        if self.main_loop == "model" and self.main_model:
            want = self.main_model.rsplit("/", 1)[-1]
            return replace(info, side=(info.model or "").rsplit("/", 1)[-1] != want)
        return info


@dataclass(frozen=True)
class RouteReport:
    """What a closed route leaves: its model calls, its proxy connections, a cap it went over."""

    calls: list[CallRecord]
    connections: list[ConnectionRecord]
    breach: Breach | None


def call_fields(trial: TrialRoute, ts: datetime, mode: GatewayMode, api: Api, info: RequestInfo | None,
                digest: str, arrived: float, **extra: Any) -> dict[str, Any]:
    """The fields every record of a call starts from (``_arrived``: its monotonic arrival)."""
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


class CallBook:
    """Turns a call's fields into its record, hands it to ``on_call`` and keeps recordings."""

    def __init__(self, redactor: re.Pattern[str], on_call: Callable[[CallRecord], None] | None,
                 lock: threading.Lock) -> None:
        self._redactor = redactor
        self.on_call = on_call
        self._lock = lock

    def redact(self, text: str) -> str:
        return self._redactor.sub(replacement, text)

    def finish(self, trial: TrialRoute, fields: dict[str, Any]) -> None:
        """Record the call (numbered in its route) and tell ``on_call``; never raises for it."""
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

    def finish_tapped(self, trial: TrialRoute, base: dict[str, Any], tap: ResponseTap, info: RequestInfo,
                      status: int | None, headers: Mapping[str, str], arrived: float, first: float | None,
                      streamed: bool, decoder: sse.SseDecoder, body: bytes) -> dict[str, Any]:
        """Finish a call whose answer went through ``tap`` (all of it, or what arrived)."""
        if streamed:
            for event in decoder.close():
                tap.on_event(event)
        else:
            tap.on_body(body, status or 0)
        fields = self._tap_fields(base, tap, status, headers, arrived, first, streamed, decoder)
        self.finish(trial, fields)
        return fields

    def _tap_fields(self, base: dict[str, Any], tap: ResponseTap, status: int | None, headers: Mapping[str, str],
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
            fields["error"] = self.redact(tap.error) if tap.error else fields.get("error")
        return fields

    def record(self, trial: TrialRoute, info: RequestInfo, path: str, request_headers: Mapping[str, str],
               body: bytes, status: int | None, headers: Mapping[str, str], response_body: bytes) -> None:
        """Append the route's last call to its recording (``record`` mode; else nothing)."""
        if trial.recording is None:
            return
        line = recording.exchange(info=info, call=trial.calls[-1], path=path, request_headers=request_headers,
                                  request_body=body, status=status, response_headers=headers,
                                  response_body=response_body, variables=trial.variables, redact=self.redact)
        with open(trial.recording, "a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
