"""Cost and latency distributions (``analysis.latency`` and the summary's quantiles)."""

from __future__ import annotations

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name

_PHASES = ["setup", "agent", "verification", "total", "first_edit"]


def section(d: ReportData) -> Section:
    s = Section("distributions", "Cost and latency distributions")
    s.paragraphs.append(
        "Per-trial cost and wall time; unknown costs are left out of the cost plot and counted "
        "in the coverage column of the summary, never read as zero.")
    s.charts += ["cost", "latency"]
    s.tables.append(Table(
        "Latency by phase, p50 / p90 / p95 (trials with the phase reported)",
        columns(["configuration", *_PHASES], [False] + [True] * len(_PHASES)),
        [[name(d, r)] + [f"{fmt.secs(r.get(f'{p}_p50'))} / {fmt.secs(r.get(f'{p}_p90'))} / "
                         f"{fmt.secs(r.get(f'{p}_p95'))} (n={fmt.count(r.get(f'{p}_n') or 0)})"
                         for p in _PHASES] for r in d.latency.rows]))
    s.tables.append(Table(
        "Wall time per trial, p50 / p90 / p95",
        columns(["configuration", "latency p50", "p90", "p95"], [False, True, True, True]),
        [[name(d, r), fmt.secs(r["latency_p50"]), fmt.secs(r["latency_p90"]),
          fmt.secs(r["latency_p95"])] for r in d.summary.rows]))
    return s
