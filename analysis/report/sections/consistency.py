"""Consistency and pass^k (``analysis.consistency``)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, sentences


def _at(xs: list | None, i: int) -> Any:
    return xs[i] if xs and i < len(xs) else None


def section(d: ReportData) -> Section:
    s = Section("consistency", "Consistency and pass^k")
    rows = d.consistency.rows
    s.paragraphs.append(
        "Consistent tasks passed every repetition (Wilson interval over tasks). pass^k: the "
        "chance that k repetitions all succeed; pass@k: that at least one does (unbiased "
        "estimators, k up to the fewest repetitions of any task). Consistency counts are only "
        "comparable between equal repetition counts.")
    s.charts.append("passk")
    kmax = max((len(r.get("pass_hat_k") or []) for r in rows), default=0)
    s.tables.append(Table(
        "Consistency",
        columns(["configuration", "consistent tasks", "95% CI", "repetitions (min–max)"]
                + [f"pass^{k}" for k in range(1, kmax + 1)]
                + [f"pass@{k}" for k in range(1, kmax + 1)], [False] + [True] * (3 + 2 * kmax)),
        [[name(d, r), fmt.pct(r["consistent"], r["tasks"]), fmt.interval(r["ci_low"], r["ci_high"]),
          f"{r['min_n']}–{r['max_n']}"]
         + [fmt.prob(_at(r.get("pass_hat_k"), k)) for k in range(kmax)]
         + [fmt.prob(_at(r.get("pass_at_k"), k)) for k in range(kmax)] for r in rows]))
    s.warnings += sentences(d.consistency.warnings)
    return s
