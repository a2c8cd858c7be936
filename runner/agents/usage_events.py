"""Parser for the agent-events file (docs/agent-events.md)."""

from __future__ import annotations

from pathlib import Path

from contract.stage_events import reported_usage
from runner.agents.agent_report import AgentReport, add, amount, count, iter_json_lines

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def parse_agent_events(path: Path) -> AgentReport:
    """Sum ``usage`` lines, count ``step`` lines, time the first ``file_edit``.

    A usage field stays None unless some line reported it; steps is None when there
    is no ``step`` line. Lines that are not JSON objects with a string ``type``, and
    usage values that are not non-negative numbers within 64 bits, are counted as malformed;
    each refused value is ignored with a note, and a total the contract cannot hold becomes
    None with a note (``contract.stage_events.reported_usage``).
    """
    totals: dict[str, int | float | None] = dict.fromkeys((*_TOKEN_FIELDS, "cost_usd"))
    steps = 0
    first_edit: float | None = None
    malformed = 0
    notes: list[str] = []
    seen = False
    for obj in iter_json_lines(Path(path)):
        seen = True
        if obj is None or not isinstance(obj.get("type"), str):
            malformed += 1
            continue
        kind = obj["type"]
        if kind == "usage":
            bad = False
            for name in (*_TOKEN_FIELDS, "cost_usd"):
                if name in obj and obj[name] is not None:
                    value = count(obj[name]) if name != "cost_usd" else amount(obj[name])
                    if value is None:
                        bad = True
                        notes.append(f"agent events: usage {name} {str(obj[name])[:40]} is not a usable "
                                     f"{'amount' if name == 'cost_usd' else 'count'}; ignored")
                    totals[name] = add(totals[name], value)
            malformed += bad
        elif kind == "step":
            steps += 1
        elif kind == "file_edit" and first_edit is None:
            first_edit = amount(obj.get("elapsed_s"))
    if not seen:
        return AgentReport()
    usage, dropped = reported_usage("agent-events", **totals, steps=steps or None, time_to_first_edit_s=first_edit)
    notes += dropped
    return AgentReport(usage=usage, malformed_lines=malformed, notes=tuple(notes))
