"""Eligibility: who may be picked, and the blockers that say why not (the rule is
``analysis.eligibility``: ``assess`` for the gates, ``blockers`` for the messages)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name


def section(d: ReportData) -> Section:
    s = Section("blockers", "Eligibility blockers")
    s.paragraphs.append(
        "A candidate is ineligible when any selected trial of it is invalid, broke a "
        "criterion of severity blocker that passed on the initial commit, comes from a run "
        "whose events are tampered, or leaked a run secret. An ineligible configuration is "
        "never on a Pareto front or named best, whatever its rate. Baselines are reference "
        "points, never blockers.")
    s.blockers = [b.message for b in d.blockers.found]
    s.warnings = list(d.blockers.notes)
    rows = []
    for c in d.configs:
        e = d.roles.get(c["config_id"])
        if e is None:
            continue
        status = ("baseline" if e.is_baseline else "eligible" if e.eligible else "INELIGIBLE")
        rows.append([name(d, c), status, "; ".join(e.reasons or e.notes) or fmt.DASH])
    if rows:
        s.tables.append(Table("Eligibility per configuration",
                              columns(["configuration", "status", "reasons"]), rows))
    if not d.blockers.found:
        s.oks.append("No invalid trial, blocker regression, tampered run, leaked secret or "
                     "significant regression of a candidate (sign test, Holm-adjusted, "
                     "p < 0.05, regressions > improvements).")
    return s
