"""How the agents worked: trajectory metrics beside acceptance (``analysis.trajectory.summary``).

Left out of the report when the selected runs recorded no step (``ReportData.trajectory`` is
None). Rows with no data (a metric no stage recorded, a final check wholly unknown) are
folded under the table, so the section shows what was measured. The table is ``analysis.layouts.trajectory_table``, the terminal layout of
``trialhouse trajectory`` too, so the page and the command show the same cells.
"""

from __future__ import annotations

from analysis.layouts import NOT_A_SCORE, has_trajectory_data, trajectory_table
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
    shown = [r for r in d.trajectory.rows if has_trajectory_data(r)]
    empty = [r for r in d.trajectory.rows if not has_trajectory_data(r)]
    if shown:
        s.tables.append(trajectory_table(shown, lambda r: name(d, r)))
    if empty:
        folded = trajectory_table(empty, lambda r: name(d, r))
        folded.caption = ("Metrics with no data: no stage of the configuration recorded them "
                          "(— in every column)")
        s.folded.append(folded)
    s.warnings += sentences(d.trajectory.warnings)
    return s
