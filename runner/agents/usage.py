"""Read what an agent said about its own run: tokens, cost, steps, terminal state.

One entry point, :func:`parse_agent_output`, dispatches on the variant's
``usage_format`` and merges the result with the agent-events file, so a harness
that prints structured output *and* appends agent events loses neither. Bad agent
output never raises: unparseable lines are counted, unreported fields stay None, and a
number the event contract cannot hold (``output_tokens: 1e308``, a sum past 2^63) becomes
None with a note (``contract.stage_events.reported_usage``), so an agent can never make its own
run un-ingestable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from contract.stage_events import Usage, reported_usage
from contract.values import as_amount, as_count
from runner.errors import RunnerError

USAGE_FORMATS: tuple[str, ...] = (
    "none",
    "agent-events",
    "claude-json",
    "claude-stream-json",
    "codex-json",
)

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "steps",
    "time_to_first_edit_s",
)


@dataclass(frozen=True)
class AgentReport:
    """The agent's own account of a stage; the runner combines it with its grade."""

    usage: Usage = Usage()
    status: str | None = None
    """Terminal state as the agent named it (``success``, ``error_max_turns``,
    ``turn.failed``, ``task_complete``, …) or ``no_result`` when it never printed one."""
    infra_error: bool = False
    """The agent side reports an infrastructure failure (API/auth/rate limit/5xx, or no
    terminal result at all). A caller whose own timeout fired should prefer budget."""
    budget_hit: bool = False
    """The agent stopped on its own turn or budget limit."""
    message: str | None = None
    """Short error text worth showing next to the outcome."""
    malformed_lines: int = 0
    """Lines of stdout / the events file that were not usable JSON objects."""
    notes: tuple[str, ...] = ()
    """Reported values dropped as out of range (kept as unknown), one note each."""


def parse_agent_output(usage_format: str, stdout_path: Path, events_path: Path | None,
                       stage_started_at: datetime | None = None) -> AgentReport:
    """Parse a stage's stdout per ``usage_format`` and merge the agent-events file.

    Structured stdout wins for every field it reports; fields that neither source
    reported stay None. ``Usage.source`` names the parser(s) that contributed.
    ``stage_started_at`` (UTC) is what time-to-first-edit is measured from; without
    it that field stays unknown for the Claude formats.
    """
    from runner.agents import usage_claude, usage_codex, usage_events

    parsers = {
        "claude-json": usage_claude.parse_claude_json,
        "claude-stream-json": usage_claude.parse_claude_stream_json,
        "codex-json": usage_codex.parse_codex_json,
    }
    if usage_format not in USAGE_FORMATS:
        raise RunnerError(
            f"usage_format {usage_format!r} is unknown; use one of {', '.join(USAGE_FORMATS)}"
        )
    events = usage_events.parse_agent_events(events_path) if events_path is not None else None
    if usage_format in ("none", "agent-events"):
        if events is None:
            return AgentReport()
        return events
    if usage_format.startswith("claude-"):
        primary = parsers[usage_format](Path(stdout_path), stage_started_at)
    else:
        primary = parsers[usage_format](Path(stdout_path))
    if events is None:
        return primary
    return merge_reports(primary, events)


def merge_reports(primary: AgentReport, secondary: AgentReport) -> AgentReport:
    """Fill the fields ``primary`` left unreported from ``secondary``."""
    values: dict[str, object] = {}
    used_secondary = False
    for name in _USAGE_FIELDS:
        mine = getattr(primary.usage, name)
        theirs = getattr(secondary.usage, name)
        if mine is None and theirs is not None:
            used_secondary = True
            values[name] = theirs
        else:
            values[name] = mine
    source = primary.usage.source
    if used_secondary:
        source = "+".join(s for s in (primary.usage.source, secondary.usage.source) if s)
    usage, notes = reported_usage(source, **values)
    return replace(
        primary,
        usage=usage,
        malformed_lines=primary.malformed_lines + secondary.malformed_lines,
        notes=(*primary.notes, *secondary.notes, *notes),
    )


def count(value: object) -> int | None:
    """A non-negative integer count within 64 bits, or None for anything else (bools, negatives,
    text, 1e308): the contract's rule, ``contract.values.as_count``."""
    return as_count(value)


def amount(value: object) -> float | None:
    """A finite non-negative number, or None (``contract.values.as_amount``)."""
    return as_amount(value)


def add(total: int | float | None, value: int | float | None) -> int | float | None:
    """Sum where None means "nobody reported": None + x = x, None + None = None."""
    if value is None:
        return total
    return value if total is None else total + value


def short(text: object, limit: int = 500) -> str | None:
    """Trim agent text for a one-line message."""
    if text is None:
        return None
    text = " ".join(str(text).split())
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def iter_json_lines(path: Path):
    """Yield each non-blank line of a JSONL file as a dict, or None when it is not one.

    Missing files yield nothing; undecodable bytes are replaced, never fatal.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, generator
    except OSError:
        return
    import json

    with handle:
        for raw in handle:
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except ValueError:
                yield None
                continue
            yield obj if isinstance(obj, dict) else None
