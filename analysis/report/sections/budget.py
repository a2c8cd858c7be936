"""Quality at several budgets (``analysis.budget_curve``): shown when the selection holds a
budget sweep. The tables are ``analysis.layouts.budget_curve_tables``, the terminal layout of
``trialhouse budget-curve`` too, so the page and the command show the same cells."""

from __future__ import annotations

from analysis.layouts import budget_curve_tables
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


def section(d: ReportData) -> Section | None:
    if d.budget_curve is None and d.budget_curve_absent is None:
        return None  # no sweep in the selection
    s = Section("budget", "Quality at several budgets")
    if d.budget_curve is None:
        s.absent = d.budget_curve_absent
        return s
    s.paragraphs.append(
        "Each budget sweep runs one configuration at several budgets (max_cost_usd or timeout_seconds), "
        "everything else equal. Per budget: acceptance with its Wilson interval, cost per accepted result "
        "(the cost of every trial over the accepted ones) and the trials that ran out of budget. Between "
        "adjacent budgets, the same tasks are paired as compare pairs them (sign test over tasks; Holm "
        "within the sweep).")
    s.tables += budget_curve_tables(d.budget_curve, lambda r: name(d, r))
    s.warnings += sentences(d.budget_curve.warnings)
    return s
