"""Eligibility blockers (the policy is ``analysis.eligibility.blockers``)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData


def section(d: ReportData) -> Section:
    s = Section("blockers", "Eligibility blockers")
    s.blockers = [b.message for b in d.blockers.found]
    s.warnings = list(d.blockers.notes)
    if not d.blockers.found:
        s.oks.append("No invalid trial and no significant regression of a candidate (sign "
                     "test, Holm-adjusted, p < 0.05, regressions > improvements).")
    return s
