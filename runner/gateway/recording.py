"""Recordings: one JSONL file per route, each line one exchange, written in ``record`` mode and
answered from in ``replay`` mode (docs/gateway.md, "Recordings and replay").

A line keeps the request's place in the conversation (API, side request, position, the tool
results it carried, model), the redacted request and response, and the call record. Replay
finds the recorded answer by (side request?, position); a request that does not match what
was recorded is a :class:`ReplayMismatch`, never a guess.

A route opened with a task key (``trialhouse run``: the hashes of the stage prompt, the
case, the repository tree and the harness settings) starts its recording with a ``task``
line; replaying it for a route whose key differs is refused when the route opens, naming
what differs (:func:`task_differences`), before any agent starts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner.gateway.records import CallRecord
from runner.gateway.script import Answer
from runner.gateway.settings import GatewayConfigError
from runner.gateway.wire import RequestInfo

RECORDING_VERSION = 1
RECORD_BODY_LIMIT = 4 * 1024 * 1024
"""Bodies above this are stored truncated in recordings (with their full size and hash)."""
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "proxy-authorization", "api-key", "cookie",
                            "set-cookie", "openai-organization", "openai-project", "x-goog-api-key"})
"""Request headers stored as ``[REDACTED]`` whatever their value."""


class ReplayMismatch(LookupError):
    """The request is not the one recorded at its place in the conversation."""


def route_key(trial_id: str, stage: str | None = None, attempt: int | None = None) -> str:
    """How a route is named (and its recording): the trial id, plus ``/stage/attempt``."""
    if stage is None and attempt is None:
        return trial_id
    return f"{trial_id}/{stage or '-'}/{attempt or 1}"


def recording_path(recording_dir: Path, trial_id: str) -> Path:
    """One JSONL file per trial; the name is the trial id made path-safe, plus a short hash."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", trial_id)[:80]
    return Path(recording_dir) / f"{safe}-{hashlib.sha256(trial_id.encode()).hexdigest()[:8]}.jsonl"


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


def exchange(*, info: RequestInfo, call: CallRecord, path: str, request_headers: Mapping[str, str],
             request_body: bytes, status: int | None, response_headers: Mapping[str, str], response_body: bytes,
             variables: Mapping[str, str], redact: Callable[[str], str]) -> dict[str, Any]:
    """One recording line: the call at ``call.call_index``, its request and response redacted."""
    return {
        "v": RECORDING_VERSION,
        "index": call.call_index,
        "api": info.api,
        "side": info.side,
        "position": info.position,
        "tool_result_ids": list(info.tool_result_ids),
        "model": info.model,
        "stream": info.stream,
        "request": {
            "path": path,
            "headers": {k: ("[REDACTED]" if k.lower() in SECRET_HEADERS else redact(v))
                        for k, v in request_headers.items()},
            **_body(request_body, redact),
        },
        "response": {
            "status": status,
            "content_type": next((v for k, v in response_headers.items() if k.lower() == "content-type"), None),
            "headers": {k: redact(v) for k, v in response_headers.items()
                        if k.lower() in ("request-id", "x-request-id", "content-type")},
            **_body(response_body, redact, variables),
        },
        "call": call.model_dump(mode="json"),
    }


def _body(body: bytes, redact: Callable[[str], str], variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    text = body[:RECORD_BODY_LIMIT].decode("utf-8", errors="replace")
    if variables:
        text = templated(text, variables)
    return {"body": redact(text), "body_bytes": len(body), "body_truncated": len(body) > RECORD_BODY_LIMIT}


TASK_FIELDS = {"prompt_sha256": "the prompt differs", "case_sha256": "the case differs",
               "tree": "the repository tree differs", "harness_sha256": "the harness settings differ"}
"""Task-key fields → what they name in a mismatch (``runner.task_key`` computes them)."""


def task_line(task: Mapping[str, Any]) -> dict[str, Any]:
    """The first line of a recording made for a task."""
    return {"v": RECORDING_VERSION, "task": dict(task)}


def task_differences(recorded: Mapping[str, Any] | None, now: Mapping[str, Any]) -> list[str]:
    """What differs between the task a recording was made for and the one replaying it."""
    if recorded is None:
        return ["the recording carries no task key (made outside trialhouse run, or before "
                "recordings were keyed to their task): record it again"]
    out = []
    for name, what in TASK_FIELDS.items():
        if recorded.get(name) != now.get(name):
            out.append(f"{what} (recorded {str(recorded.get(name))[:12]}, now {str(now.get(name))[:12]})")
            if name == "harness_sha256":
                out[-1] += _settings_diff(recorded.get("harness"), now.get("harness"))
    return out


def _settings_diff(old: object, new: object) -> str:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return ""
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return ": " + ", ".join(f"{k} {new.get(k)!r} (recorded {old.get(k)!r})" for k in keys[:5]) if keys else ""


class Replay:
    """A recording indexed by (side request?, position); attempts walk each list in order."""

    def __init__(self, path: Path, exchanges: list[dict[str, Any]], task: dict[str, Any] | None = None) -> None:
        self.path = path
        self.task = task
        """The task key the recording was made for (None: made without one)."""
        self.by_key: dict[tuple[bool, int], list[dict[str, Any]]] = {}
        for recorded in exchanges:
            self.by_key.setdefault((bool(recorded["side"]), int(recorded["position"])), []).append(recorded)

    @classmethod
    def load(cls, path: Path) -> Replay:
        if not path.is_file():
            raise GatewayConfigError(f"{path}: no recording for this trial (record it first)")
        exchanges, task = [], None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                recorded = json.loads(line)
                if recorded.get("v") != RECORDING_VERSION:
                    raise ValueError(f"recording version {recorded.get('v')!r}, expected {RECORDING_VERSION}")
                if number == 1 and isinstance(recorded.get("task"), dict):
                    task = recorded["task"]
                    continue
                for name in ("api", "side", "position", "tool_result_ids", "model", "response"):
                    if name not in recorded:
                        raise ValueError(f"missing field {name!r}")
            except (ValueError, AttributeError) as exc:
                raise GatewayConfigError(f"{path}:{number}: not a gateway recording line ({exc})") from None
            exchanges.append(recorded)
        return cls(path, exchanges, task)

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
        recorded = found[min(attempt, len(found) - 1)]
        problems = []
        if recorded["api"] != info.api:
            problems.append(f"api {info.api} != recorded {recorded['api']}")
        if recorded["model"] != info.model:
            problems.append(f"model {info.model!r} != recorded {recorded['model']!r}")
        if not info.side and list(info.tool_result_ids) != recorded["tool_result_ids"]:
            problems.append(f"tool results for {list(info.tool_result_ids)} != recorded {recorded['tool_result_ids']}")
        if problems:
            raise ReplayMismatch(f"request at position {info.position} does not match recording "
                                 f"{self.path.name}: " + "; ".join(problems))
        response = recorded["response"]
        status = response.get("status") or 502
        kind = response.get("content_type") or "application/json"
        headers = {k: v for k, v in (response.get("headers") or {}).items() if k.lower() != "content-type"}
        return Answer(status, kind, [(0.0, (response.get("body") or "").encode())], headers)
