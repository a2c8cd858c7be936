"""Failure categories and lost spend (``analysis.failures``)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


def section(d: ReportData) -> Section:
    s = Section("failures", "Failure categories and lost spend")
    s.paragraphs.append(
        "Outcome classes per configuration, then the first decisive wrong choice where a "
        "reviewer, an annotator or a judge named it (the latest of each; who assigned it is "
        "shown). Lost spend = cost of the trials in a failure class (none for accepted ones).")
    s.charts.append("failures")
    s.tables.append(Table(
        "Outcomes and categories",
        columns(["configuration", "dimension", "class / category", "assigned by",
                 "trials (share)", "lost spend"], [False, False, False, False, True, True],
                identifying=3),
        [[name(d, r), r["dimension"], r["value"],
          f"{r['assigned_by']}: {r['annotator']}" if r.get("assigned_by") else fmt.DASH,
          fmt.pct(r["count"], r["total"]),
          fmt.usd(r["lost_spend_usd"], r.get("cost_coverage")) if r["value"] != "accepted"
          else fmt.DASH] for r in d.failures.rows]))
    dis = d.failures.category_disagreements or []
    if dis:
        s.tables.append(Table(
            f"Trials whose assigners disagree on the category ({len(dis)})",
            columns(["configuration", "trial", "categories (who = what)"], identifying=2),
            [[name(d, r), r["trial_id"], "; ".join(r["categories"])] for r in dis]))
    s.warnings += sentences(d.failures.warnings)
    return s
