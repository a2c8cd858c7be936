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

from dataclasses import replace
from datetime import datetime
from pathlib import Path

from contract.stage_events import reported_usage
from runner.agents import usage_claude, usage_codex, usage_events
from runner.agents.agent_report import (  # re-exported: the usage vocabulary callers import from here
    AgentReport,
)
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


def parse_agent_output(usage_format: str, stdout_path: Path, events_path: Path | None,
                       stage_started_at: datetime | None = None) -> AgentReport:
    """Parse a stage's stdout per ``usage_format`` and merge the agent-events file.

    Structured stdout wins for every field it reports; fields that neither source
    reported stay None. ``Usage.source`` names the parser(s) that contributed.
    ``stage_started_at`` (UTC) is what time-to-first-edit is measured from; without
    it that field stays unknown for the Claude formats.
    """
    if usage_format not in USAGE_FORMATS:
        raise RunnerError(
            f"usage_format {usage_format!r} is unknown; use one of {', '.join(USAGE_FORMATS)}"
        )
    events = usage_events.parse_agent_events(events_path) if events_path is not None else None
    if usage_format in ("none", "agent-events"):
        if events is None:
            return AgentReport()
        return events
    if usage_format == "claude-json":
        primary = usage_claude.parse_claude_json(Path(stdout_path), stage_started_at)
    elif usage_format == "claude-stream-json":
        primary = usage_claude.parse_claude_stream_json(Path(stdout_path), stage_started_at)
    else:
        primary = usage_codex.parse_codex_json(Path(stdout_path))
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
