"""Eligibility: who may be picked, and why a candidate is INELIGIBLE (the rule is
``analysis.eligibility``: ``assess`` for the gates, ``blockers`` for their messages and the
significant regressions, which are findings about quality, never a gate)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name


def section(d: ReportData) -> Section:
    s = Section("eligibility", "Eligibility")
    s.paragraphs.append(
        "A candidate is ineligible when any selected trial of it is invalid, broke a "
        "criterion of severity blocker that passed on the initial commit, comes from a run "
        "whose events are tampered, or leaked a run secret. An ineligible configuration is "
        "never on a Pareto front or named best, whatever its rate. Baselines are never "
        "ineligible: their problems are noted.")
    s.ineligible = [f"INELIGIBLE: {b.message}" for b in d.blockers.found]
    s.warnings = list(d.blockers.notes)
    s.warnings += [
        f"Significant regression: {b.message} It stays eligible (its trials are sound) but is "
        "distinguishably worse, so it is never the pick; it may still be the cheap end of the "
        "Pareto front." for b in d.blockers.regressions]
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
        s.oks.append("Every candidate is eligible: no invalid trial, blocker regression, "
                     "tampered run or leaked secret.")
    return s
