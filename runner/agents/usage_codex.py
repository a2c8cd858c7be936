"""Parser for OpenAI Codex CLI ``codex exec --json`` (FORMATS.md §10).

``turn.completed.usage`` is the thread's cumulative total, so the last one is the
run's usage; ``input_tokens`` includes ``cached_input_tokens``. Codex reports no cost.
Steps = completed tool-using items (``command_execution``, ``file_change``,
``mcp_tool_call``): the actions the agent took, comparable to Claude's turns only
loosely. The legacy protocol (``{"id", "msg"}`` lines, before openai/codex#4525 in
late September 2025) is read too: usage from ``token_count.info.total_token_usage``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from runner.agents.usage import AgentReport, count, iter_json_lines, short
from runner.events import Usage

STEP_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call"})
LEGACY_STEP_MSGS = frozenset({"exec_command_end", "patch_apply_end", "mcp_tool_call_end"})

_CONTEXT = re.compile(r"context[ _-]?(window|length)|maximum context|too many tokens|prompt is too long", re.I)


def classify_failure(message: str | None) -> bool:
    """True when a Codex failure message is infrastructure, not the agent's own limit.

    Context-window exhaustion is the agent's doing (not infra). Rate/usage limits,
    5xx, auth and network errors are infra, and so is anything unrecognised
    (FORMATS.md §10): the message is kept so a reader can see why.
    """
    return not (message and _CONTEXT.search(message))


def parse_codex_json(path: Path) -> AgentReport:
    """Read ``codex exec --json`` stdout (either protocol); never raises on bad lines."""
    lines = iter_json_lines(Path(path))
    malformed = 0
    buffered: list[dict[str, Any]] = []
    for obj in lines:  # sniff: the first line that is an event decides the protocol
        if obj is None:
            malformed += 1
            continue
        buffered.append(obj)
        if "type" in obj or "msg" in obj:
            break
    if buffered and "msg" in buffered[-1] and "type" not in buffered[-1]:
        return _parse_legacy(buffered, lines, malformed)
    return _parse_exec(buffered, lines, malformed)


def _parse_exec(head: list[dict[str, Any]], rest: Any, malformed: int) -> AgentReport:
    last_usage: dict[str, Any] | None = None
    terminal: str | None = None
    failure: str | None = None
    stream_error: str | None = None
    step_ids: set[str] = set()
    anonymous_steps = 0

    def handle(obj: dict[str, Any]) -> None:
        nonlocal last_usage, terminal, failure, stream_error, anonymous_steps
        kind = obj.get("type")
        if kind == "turn.completed":
            terminal = "turn.completed"
            if isinstance(obj.get("usage"), dict):
                last_usage = obj["usage"]
        elif kind == "turn.failed":
            terminal = "turn.failed"
            error = obj.get("error")
            failure = str(error.get("message")) if isinstance(error, dict) else short(error)
        elif kind == "error":
            stream_error = short(obj.get("message"))
        elif kind == "item.completed" and isinstance(obj.get("item"), dict):
            item = obj["item"]
            item_type = item.get("type", item.get("item_type"))
            if item_type in STEP_ITEMS:
                if isinstance(item.get("id"), str):
                    step_ids.add(item["id"])
                else:
                    anonymous_steps += 1

    for obj in head:
        handle(obj)
    for obj in rest:
        if obj is None:
            malformed += 1
        else:
            handle(obj)

    tokens = _tokens(last_usage) if last_usage is not None else {}
    steps = len(step_ids) + anonymous_steps
    usage = Usage(
        **tokens,
        steps=steps if (steps or terminal is not None) else None,
        source="codex-json",
    )
    if terminal == "turn.completed":
        return AgentReport(usage=usage, status="turn.completed", malformed_lines=malformed)
    if terminal == "turn.failed":
        return AgentReport(
            usage=usage,
            status="turn.failed",
            infra_error=classify_failure(failure),
            message=short(failure),
            malformed_lines=malformed,
        )
    return AgentReport(
        usage=usage,
        status="no_result",
        infra_error=True,
        message=stream_error or "no turn.completed or turn.failed event",
        malformed_lines=malformed,
    )


def _tokens(usage: dict[str, Any]) -> dict[str, int | None]:
    total_in = count(usage.get("input_tokens"))
    cached = count(usage.get("cached_input_tokens"))
    uncached = None
    if total_in is not None:
        uncached = max(total_in - (cached or 0), 0)
    return {
        "input_tokens": uncached,
        "output_tokens": count(usage.get("output_tokens")),
        "cache_read_tokens": cached,
        "cache_write_tokens": count(usage.get("cache_write_input_tokens")),
    }


def _parse_legacy(head: list[dict[str, Any]], rest: Any, malformed: int) -> AgentReport:
    """Pre-#4525 protocol. Only ``info.total_token_usage`` (cumulative) is trusted:
    early builds printed flat per-response ``token_count`` fields whose meaning is not
    documented, so those leave tokens unknown rather than guessed."""
    last_total: dict[str, Any] | None = None
    flat_seen = False
    status: str | None = None
    failure: str | None = None
    steps = 0

    def handle(obj: dict[str, Any]) -> None:
        nonlocal last_total, flat_seen, status, failure, steps
        msg = obj.get("msg")
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "token_count":
            info = msg.get("info")
            if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
                last_total = info["total_token_usage"]
            elif "input_tokens" in msg:
                flat_seen = True
        elif kind == "task_complete":
            status = "task_complete"
        elif kind == "error":
            status = "error"
            failure = short(msg.get("message"))
        elif kind in LEGACY_STEP_MSGS:
            steps += 1

    for obj in head:
        handle(obj)
    for obj in rest:
        if obj is None:
            malformed += 1
        else:
            handle(obj)
    tokens = _tokens(last_total) if last_total is not None else {}
    usage = Usage(**tokens, steps=steps if (steps or status) else None, source="codex-json-legacy")
    note = "codex legacy --json protocol (before late Sept 2025, openai/codex#4525)"
    if last_total is None and flat_seen:
        note += "; flat token_count fields not trusted, tokens left unknown: upgrade codex"
    if status == "task_complete":
        return AgentReport(usage=usage, status="task_complete", message=note, malformed_lines=malformed)
    if status == "error":
        return AgentReport(
            usage=usage,
            status="error",
            infra_error=classify_failure(failure),
            message=short(f"{failure} ({note})"),
            malformed_lines=malformed,
        )
    return AgentReport(
        usage=usage, status="no_result", infra_error=True, message=note, malformed_lines=malformed
    )
