"""Known versus unknown repositories (``analysis.familiarity``)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name


def section(d: ReportData) -> Section:
    s = Section("familiarity", "Known versus unknown repositories")
    if d.familiarity is None or not d.familiarity.rows:
        s.absent = ("No task carries a known/unknown repository label, so the gap cannot be "
                    "measured.")
        return s
    s.paragraphs.append(
        "Rate on tasks from repositories the configuration is likely to know minus the rate on "
        "unknown ones, with an interval clustered by repository. A gap that differs between "
        "configurations is the finding.")
    s.charts.append("familiarity")
    s.tables.append(Table(
        "Familiarity gap",
        columns(["configuration", "known: accepted / valid", "unknown: accepted / valid",
                 "gap (95% CI)", "repositories"], [False, True, True, True, True]),
        [[name(d, r), fmt.pct(r["known_solved"], r["known_valid"]),
          fmt.pct(r["unknown_solved"], r["unknown_valid"]),
          fmt.diff_ci(r["gap"], r["ci_low"], r["ci_high"]),
          f"{r['g_known']} known, {r['g_unknown']} unknown"] for r in d.familiarity.rows]))
    if any(r.get("small_g") for r in d.familiarity.rows):
        s.warnings.append("Few repositories (G < 10): the clustered intervals are rough; treat "
                          "the gap as descriptive.")
    return s
