"""Cost and quality: the Pareto front (``analysis.pareto``)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name


def section(d: ReportData) -> Section:
    s = Section("pareto", "Cost and quality: the Pareto front")
    rows = d.pareto.rows
    names = {r["config_id"]: name(d, r) for r in rows}
    s.paragraphs.append(
        "One point per configuration: cost per accepted result (all spend, failed trials "
        "included, divided by accepted results) against acceptance rate. A configuration is "
        "dominated when another is at least as cheap and at least as good, and strictly better "
        "on one.")
    s.charts += ["pareto", "pareto_trial"]
    s.tables.append(Table(
        "Front and dominated configurations",
        columns(["configuration", "cost per accepted", "accepted / valid", "status",
                 "dominated by", "interval overlap"], [False, True, True, False, False, False]),
        [[names[r["config_id"]], fmt.usd(r["x"]), fmt.pct(r["solved"], r["valid"]),
          fmt.front_status(r.get("role"), r["on_front"]),
          fmt.listing([names.get(c, c[:12]) for c in (r.get("dominated_by") or [])]),
          "yes: the difference may be noise" if r.get("overlap") else "no"] for r in rows]))
    unplaced = [names[r["config_id"]] for r in rows if r.get("role") != "baseline"
                and (r["on_front"] is None or r["x"] == float("inf"))]
    if any(r.get("role") == "baseline" for r in rows):
        s.paragraphs.append(
            "The no-agent (null) and oracle (reference) configurations are drawn as reference "
            "points but not ranked: one spends nothing, the other applies the known answer.")
    if unplaced:
        s.warnings.append("Not drawn (cost unknown or nothing accepted): "
                          + fmt.listing(unplaced, limit=10))
    return s
