"""Dashboard rates: target-fix, regression-free and accepted rates and review minutes per
accepted result, side by side per configuration (``analysis.dashboard``, docs/rollout.md)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData


def section(d: ReportData) -> Section | None:
    result = d.dashboard
    if result is None or not result.rows:
        return None
    from analysis.dashboard import dashboard_table

    s = Section("dashboard", "Dashboard rates")
    s.lead = ("What a rollout watches, per configuration over the valid trials: the target layer "
              "fixed, no regression among criteria that passed before, accepted, and the review "
              "minutes each accepted result cost.")
    s.paragraphs.append("Rates per trial with Wilson 95% intervals (the same counts the stop rules "
                        "evaluate); review minutes per accepted result are the minutes of every "
                        "review over the reviews that accepted, with a 95% interval over tasks.")
    s.tables.append(dashboard_table(result, caption="Dashboard rates"))
    s.warnings += result.warnings
    return s
