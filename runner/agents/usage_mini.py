"""Parser for mini-swe-agent trajectories (``mini … -o traj.json``; docs/agents.md,
"What the parsers return").

Checked on real mini-swe-agent 2.4.6 output (tests/runner/agents/fixtures/real/mini-*):

* ``info.exit_status`` is ``Submitted`` on success, ``LimitsExceeded`` at the step or
  cost limit, ``TimeExceeded``, ``RepeatedFormatError``, or the name of the exception
  that ended the run (``InternalServerError``, ``RateLimitError``,
  ``ContextWindowExceededError`` …).
* Tokens are not in ``info`` but every assistant message keeps its raw response in
  ``extra.response`` with the provider's ``usage`` (``prompt_tokens`` includes
  ``cached_tokens``): summed here. Calls that failed left no message, so their tokens
  are unknown (the gateway's records have them).
* ``info.model_stats.instance_cost`` is litellm's price; with
  ``MSWEA_COST_TRACKING=ignore_errors`` an unpriced model costs 0.0, which is not
  "free": 0.0 after API calls is a claim with unknown basis.
* Edits are shell commands; which ones edit is a heuristic (:data:`EDIT_COMMAND`).
* What ended the run is read from structured fields only: ``exit_status`` and the
  exception class on the last line of the exit message's ``extra.traceback``. Never from
  the message text: litellm's unpriced-model error quotes a URL containing
  ``model_prices_and_context_window.json``, which a text search reads as context
  exhaustion (measured). That error (a ``RuntimeError`` raised in mini's
  ``_calculate_cost``) is a setup problem: infrastructure, with the fix in the message.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from contract.envelope import CostBasis
from contract.stage_events import Usage
from contract.trajectory import EDIT_COMMAND
from contract.trajectory import epoch_time as epoch
from contract.trajectory import mini_commands as commands
from runner.agents.agent_report import (
    AgentReport,
    Tokens,
    add,
    amount,
    as_object,
    as_str,
    count,
    no_tokens,
    short,
)
from runner.agents.harness_result import (
    HarnessResult,
    seconds_since,
    stderr_cause,
    stderr_excerpt,
)

KNOWN_FORMATS = frozenset({"mini-swe-agent-1", "mini-swe-agent-1.1"})
BUDGET_STATUSES = frozenset({"LimitsExceeded", "TimeExceeded"})
AGENT_STATUSES = frozenset({"Submitted", "RepeatedFormatError", "ContextWindowExceededError"})
"""Exit statuses that are the agent's own ending (never infrastructure)."""


def read_mini(path: Path, *, stderr: Path | None = None, stage_started_at: datetime | None = None,
              secrets: tuple[str, ...] = ()) -> HarnessResult:
    """A mini-swe-agent trajectory file (plus stderr); never raises."""
    excerpt = stderr_excerpt(stderr, secrets)
    doc = _load(Path(path))
    if doc is None:
        cause = stderr_cause(excerpt)
        missing = "no trajectory file" + (f"; stderr: {cause}" if cause else "")
        report = AgentReport(usage=Usage(source="mini-trajectory"), status="no_result", infra_error=True,
                             message=short(missing))
        return HarnessResult(report=report, harness="mini-swe-agent", stderr_excerpt=excerpt)
    info = as_object(doc.get("info"))
    listed = doc.get("messages")
    messages = [m for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
    status = as_str(info.get("exit_status"))
    stats = as_object(info.get("model_stats"))
    api_calls = count(stats.get("api_calls"))
    tokens, answered = _tokens(messages)
    notes: list[str] = []
    if doc.get("trajectory_format") not in KNOWN_FORMATS:
        notes.append(f"trajectory_format {doc.get('trajectory_format')!r} is not one this parser knows "
                     f"({', '.join(sorted(KNOWN_FORMATS))}); read as the newest")
    if api_calls is not None and answered < api_calls:
        notes.append(f"{api_calls - answered} of {api_calls} API calls left no message: their tokens are unknown")
        tokens = no_tokens() if answered == 0 else tokens
    claimed = amount(stats.get("instance_cost"))
    basis: CostBasis | None = None
    if claimed is not None:
        basis = "reported_unknown_basis" if claimed == 0 and (api_calls or 0) > 0 else "reported"
    exit_text = _exit_text(messages)
    raised, frames = _raised(messages)
    context = CONTEXT_ERROR in (status, raised)
    first_edit = _first_edit(messages)
    usage = Usage(**tokens, cost_usd=claimed if basis == "reported" else None, steps=api_calls,
                  time_to_first_edit_s=seconds_since(stage_started_at, first_edit), source="mini-trajectory")
    infra = status is None or not (status in AGENT_STATUSES or status in BUDGET_STATUSES or context)
    message = None
    if status != "Submitted":
        message = short(exit_text or status or "trajectory has no exit status")
        if context:
            message = short(f"context window exhausted: {message}")
        elif "_calculate_cost" in frames:
            message = short(f"mini-swe-agent could not price the model, and a cost limit needs a price: remove "
                            f"max_budget_usd or use a model litellm prices ({message})")
    model_cfg = as_object(as_object(info.get("config")).get("model"))
    report = AgentReport(usage=usage, status=status or "no_result", infra_error=infra,
                         budget_hit=status in BUDGET_STATUSES, message=message)
    return HarnessResult(
        report=report,
        harness="mini-swe-agent",
        cli_version=as_str(info.get("mini_version")),
        model=as_str(model_cfg.get("model_name")),
        claimed_cost_usd=claimed,
        cost_basis=basis,
        context_exhausted=context,
        stderr_excerpt=excerpt,
        tokens_from="trajectory" if answered else None,
        first_edit_at=first_edit,
        notes=tuple(notes),
    )


def _load(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _tokens(messages: list[dict[str, Any]]) -> tuple[Tokens, int]:
    sums = no_tokens()
    answered = 0
    for message in messages:
        usage = _response_usage(message)
        if usage is None:
            continue
        answered += 1
        total = count(usage.get("prompt_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = count(details.get("cached_tokens")) if isinstance(details, dict) else None
        sums["input_tokens"] = add(sums["input_tokens"], None if total is None else max(total - (cached or 0), 0))
        sums["cache_read_tokens"] = add(sums["cache_read_tokens"], cached)
        sums["output_tokens"] = add(sums["output_tokens"], count(usage.get("completion_tokens")))
    return sums, answered


def _response_usage(message: dict[str, Any]) -> dict[str, Any] | None:
    if message.get("role") != "assistant" or not isinstance(message.get("extra"), dict):
        return None
    response = message["extra"].get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    return usage if isinstance(usage, dict) else None


def _exit_text(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "exit":
            extra = as_object(message.get("extra"))
            text = extra.get("exception_str") or message.get("content")
            return str(text) if text else None
    return None


CONTEXT_ERROR = "ContextWindowExceededError"
"""litellm's exception for an exhausted context window (mini's ``exit_status`` names it)."""
_FRAME = re.compile(r'^  File "[^"]*", line \d+, in (\w+)$', re.M)
_RAISED = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def _raised(messages: list[dict[str, Any]]) -> tuple[str | None, set[str]]:
    """The exception class that ended the run and the functions on its stack, from the
    exit message's ``extra.traceback`` (Python's own format), never from its text."""
    for message in reversed(messages):
        if message.get("role") == "exit":
            trace = as_str(as_object(message.get("extra")).get("traceback")) or ""
            lines = [line for line in trace.splitlines() if line.strip() and not line.startswith(" ")]
            found = _RAISED.match(lines[-1]) if lines else None
            return (found.group(1).rsplit(".", 1)[-1] if found else None), set(_FRAME.findall(trace))
    return None, set()


def _first_edit(messages: list[dict[str, Any]]) -> datetime | None:
    """Time of the observation of the first editing command that exited 0."""
    pending = False
    for message in messages:
        if message.get("role") == "assistant":
            pending = any(EDIT_COMMAND.search(c) for c in commands(message))
        elif message.get("role") in ("tool", "user") and pending:
            extra = as_object(message.get("extra"))
            if extra.get("returncode") == 0:
                moment = epoch(extra.get("timestamp"))
                if moment is not None:
                    return moment
            pending = False
    return None
