"""How the agents worked: trajectory metrics beside acceptance (``analysis.trajectory.summary``).

Left out of the report when the selected runs recorded no step (``ReportData.trajectory`` is
None). ``table`` is also the terminal layout of ``trialhouse trajectory``, so the page and the
command show the same cells.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analysis import formatting as fmt
from analysis.report.document import Section, Table
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences

NOT_A_SCORE = ("Descriptions of how agents worked, not quality scores: read them next to outcomes.")


def _cell(r: Mapping[str, Any], prefix: str) -> str:
    if r["metric"] == "final_check":
        share = r[f"{prefix}share"]
        count = r["n"] if not prefix else None
        return fmt.DASH if share is None else fmt.rate(share) + ("" if count is None else f" ({fmt.count(count)})")
    if not r[f"{prefix}n"]:
        return fmt.DASH
    return (f"{fmt.number(r[f'{prefix}median'], 2)} / {fmt.number(r[f'{prefix}p90'], 2)}"
            f" (n={fmt.count(r[f'{prefix}n'])})")


def table(rows: Sequence[Mapping[str, Any]], label: Callable[[Mapping[str, Any]], str]) -> Table:
    """One row per configuration, stage and metric: median / p90 (n) over all stages, the
    accepted trials' and the others'; ``final_check`` as shares of stages per category."""
    return Table(
        "Trajectory metrics: median / p90 (final_check: share of stages)",
        ["configuration", "stage", "metric", "all", "accepted", "not accepted", "unknown"],
        [[label(r), r["stage"], r["metric"] if r["category"] is None else f"final_check: {r['category']}",
          _cell(r, ""), _cell(r, "accepted_"), _cell(r, "other_"), fmt.count(r["unknown"])] for r in rows],
        [False] * 3 + [True] * 4)


def section(d: ReportData) -> Section | None:
    if d.trajectory is None:
        return None
    s = Section("trajectory", "How the agents worked (trajectories)")
    s.paragraphs += [
        NOT_A_SCORE,
        "Per stage: repeated identical tool calls (share of tool calls), seconds from a failed "
        "check to the next edit, share of files read outside the subsystems the final patch "
        "touches, time to first edit, the model's share of timed work, tokens per model turn, "
        "and whether the last check ran after the last edit. Accepted trials stand beside the "
        "others; a difference describes these runs, it does not say the metric causes acceptance. "
        "Definitions: docs/trajectories.md.",
    ]
    s.tables.append(table(d.trajectory.rows, lambda r: name(d, r)))
    s.warnings += sentences(d.trajectory.warnings)
    return s
