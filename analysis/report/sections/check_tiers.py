"""Check tiers and the behaviour bank: check results by tier and by bank tag, per
configuration (``analysis.check_tiers``, docs/rollout.md)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData


def section(d: ReportData) -> Section | None:
    if not d.checks:
        return None  # no tier or bank tag declared: nothing to slice
    from analysis.check_tiers import checks_table

    s = Section("check_tiers", "Check tiers and the behaviour bank")
    s.lead = ("Fast checks run on every attempt, broad ones before a trial is accepted, scheduled "
              "ones on kept final states (run --tier scheduled); bank checks are drawn by tag.")
    s.paragraphs.append("Final check gradings of the valid trials: checks passed and trials passing "
                        "every check of the slice, each with a Wilson 95% interval. A trial graded again "
                        "by a scheduled run is read from that run ('graded in').")
    for by, result in d.checks.items():
        s.tables.append(checks_table(result, caption=f"Checks by {by}"))
        s.warnings += result.warnings
    return s
