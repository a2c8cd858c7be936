"""How the agents worked: trajectory metrics beside acceptance (``analysis.trajectory.summary``).

Left out of the report when the selected runs recorded no step (``ReportData.trajectory`` is
None). The table is ``analysis.layouts.trajectory_table``, the terminal layout of
``trialhouse trajectory`` too, so the page and the command show the same cells.
"""

from __future__ import annotations

from analysis.layouts import NOT_A_SCORE, trajectory_table
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


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
    s.tables.append(trajectory_table(d.trajectory.rows, lambda r: name(d, r)))
    s.warnings += sentences(d.trajectory.warnings)
    return s
