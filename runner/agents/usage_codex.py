"""Parser for OpenAI Codex CLI ``codex exec --json`` (docs/agents.md, "Usage formats"), its stderr and rollout.

``turn.completed.usage`` is the thread's cumulative total, so the last one is the
run's usage; ``input_tokens`` includes ``cached_input_tokens``. Codex reports no cost.
Steps = completed tool-using items (``command_execution``, ``file_change``,
``mcp_tool_call``): the actions the agent took, comparable to Claude's turns only
loosely. The legacy protocol (``{"id", "msg"}`` lines, before openai/codex#4525 in
late September 2025) is read too: usage from ``token_count.info.total_token_usage``.

Checked on real Codex 0.171 output (tests/runner/agents/fixtures/real/codex-*):

* A run that fails before printing JSON (a removed flag: exit 2) says why only on
  stderr; :func:`read_codex` keeps a bounded, redacted tail and puts the cause line in
  the message.
* A run that fails mid-way prints no usage on stdout, but its rollout file
  ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread_id>.jsonl`` holds the tokens
  spent (``token_count.info.total_token_usage``), the CLI version (``session_meta``),
  the model (``turn_context``), the error category (``task_complete.error``) and
  timestamps for every item; they are read from there.
* Context-window exhaustion ("Codex ran out of room in the model's context window")
  is the agent's failure, as for every harness (harness_result.CONTEXT_EXHAUSTED).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from contract.stage_events import Usage
from runner.agents.agent_report import AgentReport, Tokens, count, iter_json_lines, short, timestamp
from runner.agents.harness_result import (
    CONTEXT_EXHAUSTED,
    HarnessResult,
    seconds_since,
    stderr_cause,
    stderr_excerpt,
)

STEP_ITEMS = frozenset({"command_execution", "file_change", "mcp_tool_call"})
LEGACY_STEP_MSGS = frozenset({"exec_command_end", "patch_apply_end", "mcp_tool_call_end"})



def classify_failure(message: str | None) -> bool:
    """True when a Codex failure message is infrastructure, not the agent's own limit.

    Context-window exhaustion is the agent's doing (not infra). Rate/usage limits,
    5xx, auth and network errors are infra, and so is anything unrecognised
    (docs/agents.md, "Usage formats"): the message is kept so a reader can see why.
    """
    return not (message and CONTEXT_EXHAUSTED.search(message))


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

    tokens: Tokens = _tokens(last_usage) if last_usage is not None else {}
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


def _tokens(usage: dict[str, Any]) -> Tokens:
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
    tokens: Tokens = _tokens(last_total) if last_total is not None else {}
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


# ---------------------------------------------------------------- stderr and rollout


@dataclass(frozen=True)
class Rollout:
    """What a Codex session rollout file says (None where it does not)."""

    path: Path
    cli_version: str | None = None
    model: str | None = None
    total_usage: dict[str, Any] | None = None
    """The thread's cumulative usage: the last ``token_count.info.total_token_usage``
    that did not fall (see :func:`read_rollout`)."""
    error: str | None = None
    error_kind: str | None = None
    """``task_complete.error.codex_error_info`` (e.g. ``internal_server_error``)."""
    first_edit_at: datetime | None = None
    """Completion time of the first ``FileChange`` item with status ``completed``."""
    items: tuple[dict[str, Any], ...] = ()
    """Completed items (``CommandExecution``, ``FileChange``, …) with their line timestamp
    as ``_ts`` (a datetime)."""


def find_rollout(sessions_dir: Path | None, thread_id: str | None) -> Path | None:
    """The rollout file of ``thread_id`` under a sessions directory (newest when several)."""
    if sessions_dir is None or thread_id is None or not Path(sessions_dir).is_dir():
        return None
    found = sorted(Path(sessions_dir).rglob(f"rollout-*{thread_id}.jsonl"))
    return found[-1] if found else None


def read_rollout(path: Path) -> Rollout:
    version = model = error = kind = None
    total: dict[str, Any] | None = None
    first_edit: datetime | None = None
    items: list[dict[str, Any]] = []
    for obj in iter_json_lines(path):
        if obj is None or not isinstance(obj.get("payload"), dict):
            continue
        payload = obj["payload"]
        kind_of_line = obj.get("type")
        if kind_of_line == "session_meta":
            version = payload.get("cli_version") if isinstance(payload.get("cli_version"), str) else version
        elif kind_of_line == "turn_context":
            model = payload.get("model") if isinstance(payload.get("model"), str) else model
        elif kind_of_line == "event_msg":
            event = payload.get("type")
            if event == "token_count" and isinstance(payload.get("info"), dict):
                usage = payload["info"].get("total_token_usage")
                # Cumulative, so it never falls; after context exhaustion Codex writes a
                # zeroed total (total_tokens = the context window): a marker, not usage.
                if isinstance(usage, dict) and _spent(usage) >= _spent(total):
                    total = usage
            elif event == "task_complete" and isinstance(payload.get("error"), dict):
                error = short(payload["error"].get("message"))
                info = payload["error"].get("codex_error_info")
                kind = info if isinstance(info, str) else None
            elif event == "item_completed" and isinstance(payload.get("item"), dict):
                item = dict(payload["item"])
                item["_ts"] = timestamp(obj.get("timestamp"))
                items.append(item)
                if (first_edit is None and item.get("type") == "FileChange"
                        and item.get("status") == "completed"):
                    first_edit = item["_ts"]
    return Rollout(path, version, model, total, error, kind, first_edit, tuple(items))


def _spent(usage: dict[str, Any] | None) -> int:
    if usage is None:
        return -1
    return (count(usage.get("input_tokens")) or 0) + (count(usage.get("output_tokens")) or 0)


def read_codex(path: Path, *, stderr: Path | None = None, sessions_dir: Path | None = None,
               stage_started_at: datetime | None = None, secrets: tuple[str, ...] = ()) -> HarnessResult:
    """``codex exec --json`` stdout plus stderr and the session rollout; never raises."""
    report = parse_codex_json(Path(path))
    thread_id, unknown = _scan(Path(path))
    rollout_path = find_rollout(sessions_dir, thread_id)
    rollout = read_rollout(rollout_path) if rollout_path is not None else None
    excerpt = stderr_excerpt(stderr, secrets)
    notes: list[str] = []
    if unknown:
        notes.append(f"event types this parser does not know were ignored: {', '.join(unknown[:10])}")
    usage = report.usage
    tokens_from = "stdout" if usage.input_tokens is not None else None
    if usage.input_tokens is None and rollout is not None and rollout.total_usage is not None:
        usage = usage.model_copy(update=_tokens(rollout.total_usage))
        tokens_from = "rollout"
        notes.append(f"tokens from the rollout file {rollout.path.name} (stdout printed no usage)")
    message = report.message
    if report.status == "no_result":
        cause = stderr_cause(excerpt)
        if cause:
            head = "codex printed no events" if not thread_id else message
            message = short(f"{head}; stderr: {cause}")
    elif report.status == "turn.failed" and rollout is not None and rollout.error_kind:
        message = short(f"{message} ({rollout.error_kind})")
    context = bool(report.status in ("turn.failed", "error") and report.message
                   and CONTEXT_EXHAUSTED.search(report.message))
    first_edit = rollout.first_edit_at if rollout is not None else None
    usage = usage.model_copy(update={"time_to_first_edit_s": seconds_since(stage_started_at, first_edit)})
    if rollout is None and thread_id:
        notes.append("no rollout file found for this thread (tokens after a failure and timestamps unknown)")
    return HarnessResult(
        report=replace(report, usage=usage, message=message),
        harness="codex",
        cli_version=rollout.cli_version if rollout else None,
        session_id=thread_id,
        model=rollout.model if rollout else None,
        context_exhausted=context,
        stderr_excerpt=excerpt,
        tokens_from=tokens_from,
        first_edit_at=first_edit,
        notes=tuple(notes),
    )


EXEC_EVENTS = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed", "item.started",
                         "item.updated", "item.completed", "error", "item.plan.delta", "request_user_input"})


def _scan(path: Path) -> tuple[str | None, list[str]]:
    """The thread id, and event types this parser does not know (a newer format?)."""
    thread: str | None = None
    unknown: dict[str, None] = {}
    for obj in iter_json_lines(path):
        if obj is None:
            continue
        kind = obj.get("type")
        if kind == "thread.started" and thread is None and isinstance(obj.get("thread_id"), str):
            thread = obj["thread_id"]
        elif isinstance(kind, str) and kind not in EXEC_EVENTS and "msg" not in obj:
            unknown[kind] = None
    return thread, list(unknown)
