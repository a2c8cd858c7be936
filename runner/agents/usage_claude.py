"""Parsers for Claude Code headless output (``-p --output-format json|stream-json``).

See FORMATS.md §9. Tokens prefer the ``modelUsage`` sums (they include subagents,
``usage`` covers the main loop only); the three input buckets are disjoint.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from runner.agents.usage import AgentReport, add, amount, count, iter_json_lines, short
from runner.events import Usage

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
BUDGET_SUBTYPES = frozenset({"error_max_turns", "error_max_budget_usd"})
INFRA_SUBTYPES = frozenset({"error_during_execution"})
_WHOLE_FILE_LIMIT = 64 * 1024 * 1024
"""Above this, json mode only looks for the result object line by line."""

_MODEL_USAGE_KEYS = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadInputTokens",
    "cache_write_tokens": "cacheCreationInputTokens",
}
_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_write_tokens": "cache_creation_input_tokens",
}


def parse_claude_json(path: Path) -> AgentReport:
    """``--output-format json``: one result object, or an array of messages (verbose)."""
    result, malformed = _find_result(path)
    if result is None:
        return _no_result("claude-json", malformed, _plain_text_hint(path))
    return _from_result(result, "claude-json", malformed_lines=malformed)


def parse_claude_stream_json(path: Path) -> AgentReport:
    """``--output-format stream-json``: JSONL; the final result line wins when present.

    Without it, assistant usage is summed once per ``message.id`` (parallel tool calls
    repeat one message with the same usage) and steps = distinct message ids.
    """
    result: dict[str, Any] | None = None
    per_message: dict[str, dict[str, Any]] = {}
    malformed = 0
    first_ts: datetime | None = None
    first_edit: float | None = None
    last_error: str | None = None
    for obj in iter_json_lines(Path(path)):
        if obj is None:
            malformed += 1
            continue
        ts = _timestamp(obj.get("timestamp"))
        if ts is not None and first_ts is None:
            first_ts = ts
        kind = obj.get("type")
        if kind == "result":
            result = obj
        elif kind == "assistant":
            message = obj.get("message")
            if not isinstance(message, dict):
                malformed += 1
                continue
            if isinstance(obj.get("error"), str):
                last_error = obj["error"]
            msg_id = message.get("id")
            if isinstance(msg_id, str) and isinstance(message.get("usage"), dict):
                per_message[msg_id] = message["usage"]
            elif isinstance(msg_id, str):
                per_message.setdefault(msg_id, {})
            if first_edit is None and _has_edit(message) and ts is not None and first_ts is not None:
                first_edit = max((ts - first_ts).total_seconds(), 0.0)
    if result is not None:
        report = _from_result(result, "claude-stream-json", malformed_lines=malformed)
        usage = report.usage
        if usage.steps is None and per_message:
            usage = usage.model_copy(update={"steps": len(per_message)})
        if all(getattr(usage, f) is None for f in _USAGE_KEYS):
            usage = usage.model_copy(update=_sum_usages(per_message.values()))
        return AgentReport(
            usage=usage.model_copy(update={"time_to_first_edit_s": first_edit}),
            status=report.status,
            infra_error=report.infra_error,
            budget_hit=report.budget_hit,
            message=report.message,
            malformed_lines=malformed,
        )
    usage = Usage(
        **_sum_usages(per_message.values()),
        steps=len(per_message) or None,
        time_to_first_edit_s=first_edit,
        source="claude-stream-json",
    )
    message = f"no result line (last assistant error: {last_error})" if last_error else "no result line"
    return AgentReport(
        usage=usage, status="no_result", infra_error=True, message=message, malformed_lines=malformed
    )


# ---------------------------------------------------------------- helpers


def _find_result(path: Path) -> tuple[dict[str, Any] | None, int]:
    """The last ``type == "result"`` object of a json-mode file, and malformed line count."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        return None, 0
    if size <= _WHOLE_FILE_LIMIT:
        try:
            doc = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
        except ValueError:
            doc = None
        if doc is not None:
            return _last_result(doc if isinstance(doc, list) else [doc]), 0
    # Not one JSON document (truncated, or log lines around it): look line by line.
    found: dict[str, Any] | None = None
    malformed = 0
    for obj in iter_json_lines(path):
        if obj is None:
            malformed += 1
        elif obj.get("type") == "result":
            found = obj
    return found, malformed


def _last_result(items: list[Any]) -> dict[str, Any] | None:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("type") == "result":
            return item
    return None


def _from_result(result: dict[str, Any], source: str, malformed_lines: int) -> AgentReport:
    tokens = _tokens(result)
    cost = amount(result.get("total_cost_usd"))
    if cost == 0 and any(tokens.values()):
        cost = None  # 0 next to real tokens means "unpriced", not free
    usage = Usage(**tokens, cost_usd=cost, steps=count(result.get("num_turns")), source=source)
    subtype = result.get("subtype") if isinstance(result.get("subtype"), str) else None
    is_error = result.get("is_error") is True
    api_status = count(result.get("api_error_status"))
    infra = subtype in INFRA_SUBTYPES or (
        subtype == "success" and (is_error or (api_status is not None and api_status >= 400))
    )
    errors = result.get("errors")
    message = None
    if isinstance(errors, list) and errors:
        message = short("; ".join(str(e) for e in errors))
    elif is_error or subtype != "success":
        message = short(result.get("result"))
    if message is None and api_status is not None:
        message = f"api_error_status {api_status}"
    return AgentReport(
        usage=usage,
        status=subtype,
        infra_error=infra,
        budget_hit=subtype in BUDGET_SUBTYPES,
        message=message,
        malformed_lines=malformed_lines,
    )


def _tokens(result: dict[str, Any]) -> dict[str, int | None]:
    model_usage = result.get("modelUsage")
    if isinstance(model_usage, dict) and model_usage:
        sums: dict[str, int | None] = dict.fromkeys(_MODEL_USAGE_KEYS)
        for per_model in model_usage.values():
            if isinstance(per_model, dict):
                for ours, theirs in _MODEL_USAGE_KEYS.items():
                    sums[ours] = add(sums[ours], count(per_model.get(theirs)))  # type: ignore[assignment]
        if any(v is not None for v in sums.values()):
            return sums
    usage = result.get("usage")
    return _sum_usages([usage] if isinstance(usage, dict) else [])


def _sum_usages(usages: Any) -> dict[str, int | None]:
    sums: dict[str, int | None] = dict.fromkeys(_USAGE_KEYS)
    for usage in usages:
        for ours, theirs in _USAGE_KEYS.items():
            sums[ours] = add(sums[ours], count(usage.get(theirs)))  # type: ignore[assignment]
    return sums


def _has_edit(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(c, dict) and c.get("type") == "tool_use" and c.get("name") in EDIT_TOOLS
        for c in content
    )


def _timestamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo is not None else None


def _no_result(source: str, malformed: int, hint: str | None) -> AgentReport:
    return AgentReport(
        usage=Usage(source=source),
        status="no_result",
        infra_error=True,
        message=hint or "no result object in stdout",
        malformed_lines=malformed,
    )


def _plain_text_hint(path: Path) -> str | None:
    """First line of a non-JSON stdout (e.g. a CLI usage error) for the message."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(2000).decode("utf-8", errors="replace")
    except OSError:
        return None
    line = next((ln for ln in head.splitlines() if ln.strip()), None)
    if line is None or line.lstrip().startswith(("{", "[")):
        return None
    return short(f"no result object; stdout starts: {line}", 300)
