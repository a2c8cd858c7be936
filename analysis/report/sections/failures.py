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
        "Outcome classes per configuration, then the first decisive wrong choice where a human "
        "or judge annotated it (latest annotation per trial and annotator). Lost spend = cost "
        "of the trials in the class.")
    s.charts.append("failures")
    s.tables.append(Table(
        "Outcomes and categories",
        columns(["configuration", "dimension", "class / category", "annotator", "trials (share)",
                 "lost spend"], [False, False, False, False, True, True], identifying=3),
        [[name(d, r), r["dimension"], r["value"], r.get("annotator") or fmt.DASH,
          fmt.pct(r["count"], r["total"]),
          fmt.usd(r["lost_spend_usd"], r.get("cost_coverage")) if r["value"] != "accepted"
          else fmt.DASH] for r in d.failures.rows]))
    s.warnings += sentences(d.failures.warnings)
    return s
