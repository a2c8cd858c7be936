"""Visible and hidden checks apart (``analysis.visibility``): shown when a selected case has a
check the agent could run. The table is ``analysis.layouts.visibility_table``, the terminal
layout of ``trialhouse visibility`` too."""

from __future__ import annotations

from analysis.layouts import visibility_table
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


def section(d: ReportData) -> Section | None:
    if d.visibility is None:
        return None  # no visible check in the selection
    s = Section("visibility", "Visible and hidden checks")
    s.paragraphs.append(
        "A visible check is one the agent could run while it worked; the hidden ones it could not see "
        "decide the outcome too. Per configuration, on the cases that have both: the trials that passed "
        "every visible check, those that passed every hidden one, and the gap. Trials that pass the "
        "visible checks but fail a hidden one are the over-fitting signal; the sign test compares them "
        "with the reverse.")
    s.tables.append(visibility_table(d.visibility, lambda r: name(d, r)))
    s.warnings += sentences(d.visibility.warnings)
    return s
