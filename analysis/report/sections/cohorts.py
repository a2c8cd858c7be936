"""Observational cohorts: production and shadow tickets beside the benchmark figures of the same
configuration, the caveat spelled out, and randomised control groups (docs/rollout.md)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.rollout_cohort_tables import cohort_table, control_table


def section(d: ReportData) -> Section | None:
    result = d.cohorts
    if result is None:
        return None  # no cohort ingested: the report has nothing to say here
    s = Section("cohorts", "Observational cohorts")
    s.lead = result.caveat
    s.paragraphs.append("Each row counts a cohort's tickets for one configuration (merged, reverted among "
                        "merged, linked incidents, review minutes) beside that configuration's benchmark "
                        "acceptance in this report's selection. Every ingested ticket is counted.")
    if result.rows:
        s.tables.append(cohort_table(result))
    if result.controls:
        s.paragraphs.append("A randomised control group is a comparison: tickets were assigned to the arms "
                            "at random with the seed shown, so the difference in landed changes (merged and "
                            "not reverted) is an effect, with its 95% interval (Newcombe hybrid score).")
        s.tables.append(control_table(result))
        s.warnings += [f"{c.cohort}: {w}" for c in result.controls for w in c.warnings]
    return s
