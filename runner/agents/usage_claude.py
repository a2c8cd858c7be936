"""Parsers for Claude Code headless output (``-p --output-format json|stream-json``).

See docs/agents.md ("Usage formats"); every rule below was checked on real output of Claude Code 2.1.197
and 2.1.332 (tests/runner/agents/fixtures/real/claude-code-*):

* Tokens prefer the ``modelUsage`` sums (they include subagents; ``usage`` covers the
  main loop only); the three input buckets are disjoint.
* The cost claim (``total_cost_usd``) is taken as reported only when its basis is
  known: ``modelUsage.<model>.costBasis == "list"`` (2.1.332+), or — for versions that
  do not say — every model is a Claude model. Claude Code prices model names it does
  not know at a made-up rate (never 0), so such a claim is ``reported_unknown_basis``
  and the trial's cost stays unknown.
* Without a result line (a killed process), ``assistant`` lines carry the usage of
  ``message_start``: the input buckets are right, ``output_tokens`` is the start value
  (1), so output tokens are unknown unless ``--include-partial-messages`` gave the
  final ``message_delta`` counts.
* Time to first edit is measured from the stage start the caller passes, to the first
  edit that took effect (its ``tool_result`` line; 2.1.197 puts timestamps only on
  those), never from the first line of output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from contract.stage_events import Usage
from runner.agents.agent_report import (
    AgentReport,
    TokenName,
    Tokens,
    add,
    amount,
    count,
    iter_json_lines,
    no_tokens,
    short,
    timestamp,
)
from runner.agents.harness_result import (
    CONTEXT_EXHAUSTED,
    CostBasis,
    HarnessResult,
    PermissionDenial,
    seconds_since,
    stderr_excerpt,
)

__all__ = ["cost_claim", "parse_claude_json", "parse_claude_stream_json", "read_claude", "timestamp"]

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
BUDGET_SUBTYPES = frozenset({"error_max_turns", "error_max_budget_usd"})
INFRA_SUBTYPES = frozenset({"error_during_execution"})
CLAUDE_MODEL = re.compile(r"^(anthropic[./])?claude-(opus|sonnet|haiku|instant|\d)", re.I)
"""Model ids Claude Code has list prices for, when its output does not say (pre-costBasis)."""
_WHOLE_FILE_LIMIT = 64 * 1024 * 1024
"""Above this, json mode only looks for the result object line by line."""

_MODEL_USAGE_KEYS: dict[TokenName, str] = {
    "input_tokens": "inputTokens",
    "output_tokens": "outputTokens",
    "cache_read_tokens": "cacheReadInputTokens",
    "cache_write_tokens": "cacheCreationInputTokens",
}
_USAGE_KEYS: dict[TokenName, str] = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_tokens": "cache_read_input_tokens",
    "cache_write_tokens": "cache_creation_input_tokens",
}


def parse_claude_json(path: Path, stage_started_at: datetime | None = None) -> AgentReport:
    """``--output-format json``: one result object, or an array of messages (verbose)."""
    return read_claude(path, stream=False, stage_started_at=stage_started_at).report


def parse_claude_stream_json(path: Path, stage_started_at: datetime | None = None) -> AgentReport:
    """``--output-format stream-json``: JSONL; the final result line wins when present."""
    return read_claude(path, stream=True, stage_started_at=stage_started_at).report


def read_claude(path: Path, *, stream: bool, stderr: Path | None = None,
                stage_started_at: datetime | None = None, secrets: tuple[str, ...] = ()) -> HarnessResult:
    """Everything Claude Code's stdout (and stderr) says about a stage; never raises."""
    source = "claude-stream-json" if stream else "claude-json"
    objects, malformed = _objects(Path(path), stream)
    scan = _Scan()
    for obj in objects:
        scan.add(obj)
    excerpt = stderr_excerpt(stderr, secrets)
    first_edit_at = scan.first_edit_at()
    ttfe = seconds_since(stage_started_at, first_edit_at)
    known = HarnessResult(report=AgentReport(), harness="claude-code", cli_version=scan.version,
                          session_id=scan.session_id, model=scan.model, stderr_excerpt=excerpt,
                          first_edit_at=first_edit_at)
    if scan.result is None:
        return _without_result(scan, source, malformed, ttfe, Path(path), known)
    result = scan.result
    tokens = _tokens(result)
    tokens_from = "result"
    notes: list[str] = []
    if all(v is None for v in tokens.values()):
        notes.append("the result line has no modelUsage or usage (a changed output format?)")
        if scan.messages:
            tokens = _stream_tokens(scan, notes)
            tokens_from = "stream"
    claimed, basis = cost_claim(result, tokens)
    steps = count(result.get("num_turns"))
    if steps is None and scan.messages:
        steps = len(scan.messages)
    usage = Usage(**tokens, cost_usd=claimed if basis == "reported" else None, steps=steps,
                  time_to_first_edit_s=ttfe, source=source)
    subtype = result.get("subtype") if isinstance(result.get("subtype"), str) else None
    is_error = result.get("is_error") is True
    api_status = count(result.get("api_error_status"))
    context = _context_exhausted(result)
    infra = not context and (subtype in INFRA_SUBTYPES or (
        subtype == "success" and (is_error or (api_status is not None and api_status >= 400))))
    errors = result.get("errors")
    message = None
    if isinstance(errors, list) and errors:
        message = short("; ".join(str(e) for e in errors))
    elif is_error or subtype != "success":
        message = short(result.get("result"))
    if message is None and api_status is not None:
        message = f"api_error_status {api_status}"
    if context:
        message = short(f"context window exhausted: {message or result.get('terminal_reason')}")
    if basis == "reported_unknown_basis":
        notes.append(f"cost {claimed} is the harness's own estimate without a known price (cost basis unknown)")
    report = AgentReport(usage=usage, status=subtype, infra_error=infra, budget_hit=subtype in BUDGET_SUBTYPES,
                         message=message, malformed_lines=malformed)
    return replace(known, report=report, claimed_cost_usd=claimed, cost_basis=basis,
                   permission_denials=_denials(result), context_exhausted=context,
                   tokens_from=tokens_from, notes=tuple(notes))


def cost_claim(result: dict[str, Any], tokens: Tokens) -> tuple[float | None, CostBasis | None]:
    """The result's ``total_cost_usd`` and whether it rests on known prices."""
    claimed = amount(result.get("total_cost_usd"))
    if claimed is None:
        return None, None
    spent = any(tokens.values())
    if claimed == 0:
        # 0 next to real tokens means "unpriced"; 0 with no tokens is a real zero.
        return 0.0, "reported_unknown_basis" if spent else "reported"
    model_usage = result.get("modelUsage")
    per_model = [m for m in model_usage.values() if isinstance(m, dict)] if isinstance(model_usage, dict) else []
    bases = [m.get("costBasis") for m in per_model if "costBasis" in m]
    if bases:
        return claimed, "reported" if all(b == "list" for b in bases) and len(bases) == len(per_model) \
            else "reported_unknown_basis"
    models = list(model_usage) if isinstance(model_usage, dict) else []
    if models and all(CLAUDE_MODEL.match(m) for m in models):
        return claimed, "reported"
    return claimed, "reported_unknown_basis"


# ---------------------------------------------------------------- scanning


class _Scan:
    """One pass over the output objects: result, init, messages, tool calls and results."""

    def __init__(self) -> None:
        self.result: dict[str, Any] | None = None
        self.session_id: str | None = None
        self.version: str | None = None
        self.model: str | None = None
        self.messages: dict[str, dict[str, Any]] = {}
        """assistant message id → usage snapshot (deduplicated: parallel tool calls repeat it)."""
        self.final_output: dict[str, int] = {}
        """message id → final output_tokens from ``stream_event`` message_delta lines."""
        self.edits: list[tuple[str, datetime | None]] = []
        """(tool_use id, assistant line time) of edit tool calls, in order."""
        self.results: dict[str, tuple[datetime | None, bool]] = {}
        """tool_use id → (tool_result line time, is_error)."""
        self.last_error: str | None = None
        self._streaming_id: str | None = None

    def add(self, obj: dict[str, Any]) -> None:
        kind = obj.get("type")
        ts = timestamp(obj.get("timestamp"))
        if isinstance(obj.get("session_id"), str):
            self.session_id = self.session_id or obj["session_id"]
        if kind == "result":
            self.result = obj
        elif kind == "system" and obj.get("subtype") == "init":
            self.version = obj.get("claude_code_version") if isinstance(obj.get("claude_code_version"), str) else None
            self.model = obj.get("model") if isinstance(obj.get("model"), str) else None
        elif kind == "assistant" and isinstance(obj.get("message"), dict):
            message = obj["message"]
            if isinstance(obj.get("error"), str):
                self.last_error = obj["error"]
            msg_id = message.get("id")
            if isinstance(msg_id, str):
                usage = message.get("usage")
                if isinstance(usage, dict):
                    self.messages[msg_id] = usage
                else:
                    self.messages.setdefault(msg_id, {})
            for block in _blocks(message):
                if block.get("type") == "tool_use" and block.get("name") in EDIT_TOOLS:
                    self.edits.append((str(block.get("id")), ts))
        elif kind == "user" and isinstance(obj.get("message"), dict):
            for block in _blocks(obj["message"]):
                if block.get("type") == "tool_result":
                    self.results[str(block.get("tool_use_id"))] = (ts, block.get("is_error") is True)
        elif kind == "stream_event" and isinstance(obj.get("event"), dict):
            event = obj["event"]
            if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
                self._streaming_id = event["message"].get("id")
            elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
                out = count(event["usage"].get("output_tokens"))
                if self._streaming_id and out is not None:
                    self.final_output[self._streaming_id] = out

    def first_edit_at(self) -> datetime | None:
        """Completion time of the first edit that was not refused or failed."""
        for tool_id, issued in self.edits:
            done, failed = self.results.get(tool_id, (None, False))
            if tool_id in self.results and failed:
                continue
            moment = done or issued
            if moment is not None:
                return moment
        return None


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []


def _objects(path: Path, stream: bool) -> tuple[list[dict[str, Any]], int]:
    """The output's JSON objects in order, and how many lines were not usable."""
    if not stream:
        try:
            size = path.stat().st_size
        except OSError:
            return [], 0
        if size <= _WHOLE_FILE_LIMIT:
            try:
                doc = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
            except ValueError:
                doc = None
            if isinstance(doc, dict):
                return [doc], 0
            if isinstance(doc, list):
                return [d for d in doc if isinstance(d, dict)], 0
    # Not one JSON document (stream-json, truncated, or log lines around it): line by line.
    objects: list[dict[str, Any]] = []
    malformed = 0
    for obj in iter_json_lines(path):
        if obj is None:
            malformed += 1
        else:
            objects.append(obj)
    return objects, malformed


def _without_result(scan: _Scan, source: str, malformed: int, ttfe: float | None, path: Path,
                    known: HarnessResult) -> HarnessResult:
    """No result line: what the assistant lines say (``known``: what init and stderr said)."""
    notes: list[str] = []
    if not scan.messages:
        hint = _plain_text_hint(path)
        cause = hint or "no result object in stdout"
        excerpt = known.stderr_excerpt
        if excerpt and not hint:
            cause = f"{cause}; stderr: {short(excerpt.splitlines()[-1], 300)}"
        report = AgentReport(usage=Usage(source=source), status="no_result", infra_error=True, message=cause,
                             malformed_lines=malformed)
        return replace(known, report=report)
    tokens = _stream_tokens(scan, notes)
    usage = Usage(**tokens, steps=len(scan.messages), time_to_first_edit_s=ttfe, source=source)
    message = f"no result line (last assistant error: {scan.last_error})" if scan.last_error else "no result line"
    report = AgentReport(usage=usage, status="no_result", infra_error=True, message=message,
                         malformed_lines=malformed)
    return replace(known, report=report, tokens_from="stream", notes=tuple(notes))


def _stream_tokens(scan: _Scan, notes: list[str]) -> Tokens:
    """Token sums from assistant lines: input buckets exact, output only if final counts exist."""
    sums = _sum_usages(scan.messages.values())
    if scan.messages and all(mid in scan.final_output for mid in scan.messages):
        sums["output_tokens"] = sum(scan.final_output.values())
    else:
        sums["output_tokens"] = None
        notes.append("output tokens unknown: without a result line, assistant lines carry the "
                     "message_start snapshot (output_tokens 1), not the final count")
    return sums


def _tokens(result: dict[str, Any]) -> Tokens:
    model_usage = result.get("modelUsage")
    if isinstance(model_usage, dict) and model_usage:
        sums = no_tokens()
        for per_model in model_usage.values():
            if isinstance(per_model, dict):
                for ours, theirs in _MODEL_USAGE_KEYS.items():
                    sums[ours] = add(sums[ours], count(per_model.get(theirs)))
        if any(v is not None for v in sums.values()):
            return sums
    usage = result.get("usage")
    return _sum_usages([usage] if isinstance(usage, dict) else [])


def _sum_usages(usages: Iterable[dict[str, Any]]) -> Tokens:
    sums = no_tokens()
    for usage in usages:
        for ours, theirs in _USAGE_KEYS.items():
            sums[ours] = add(sums[ours], count(usage.get(theirs)))
    return sums


def _context_exhausted(result: dict[str, Any]) -> bool:
    if result.get("terminal_reason") == "prompt_too_long":
        return True
    if result.get("is_error") is not True:
        return False
    text = " ".join(str(result.get(k) or "") for k in ("result", "errors", "terminal_reason"))
    return bool(CONTEXT_EXHAUSTED.search(text))


def _denials(result: dict[str, Any]) -> tuple[PermissionDenial, ...]:
    denials = result.get("permission_denials")
    if not isinstance(denials, list):
        return ()
    return tuple(
        PermissionDenial(str(d.get("tool_name")), d.get("tool_use_id") if isinstance(d.get("tool_use_id"), str) else None)
        for d in denials
        if isinstance(d, dict)
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
