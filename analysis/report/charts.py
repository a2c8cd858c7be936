"""The report's charts: each named chart built from the gathered results, or left out.

A chart whose data is empty (every cost unknown, a single repetition for pass^k, no
comparison) is not drawn; ``skipped`` says why, and the section that names it says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis import formatting as fmt
from analysis.report.gather import ReportData

if TYPE_CHECKING:
    import polars as pl


@dataclass
class Charts:
    specs: dict[str, Any] = field(default_factory=dict)  # name -> altair chart
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why not drawn


def _labelled(d: ReportData, df: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    labels = [fmt.label(r, d.simulated) for r in df.to_dicts()]
    return df.with_columns(pl.Series("label", labels, dtype=pl.String))


def _summary_charts(d: ReportData, out: Charts) -> None:
    import polars as pl

    from analysis import charts as ch

    summ = _labelled(d, d.summary.table)
    if ch.has_data(summ, "rate"):
        out.specs["rate"] = ch.rate_chart(summ)
    trials = _labelled(d, d.trials.filter(pl.col("complete")))
    if trials.height:
        counts = (trials.group_by(["label", "outcome"]).agg(pl.len().alias("n"))
                  .sort(["label", "outcome"], nulls_last=True))  # the same spec on every run
        out.specs["outcomes"] = ch.outcomes_chart(counts)
    for name, col, title, axis in (("cost", "cost_usd", "Cost per trial", "USD per trial"),
                                   ("latency", "duration_s", "Wall time per trial",
                                    "seconds per trial")):
        if ch.has_data(trials, col):
            out.specs[name] = ch.distribution_chart(trials, value=col, title=title, x_title=axis)
        else:
            out.skipped[name] = f"no trial has a known {col}"


def _comparison_charts(d: ReportData, out: Charts) -> None:
    import polars as pl

    from analysis import charts as ch

    rows = []
    for c in d.comparisons or []:
        st, name = c.sign_test, fmt.label(c.candidate.as_dict(), d.simulated)
        rows += [{"label": name, "direction": "improvement", "tasks": st.improvements},
                 {"label": name, "direction": "regression", "tasks": st.regressions},
                 {"label": name, "direction": "tie", "tasks": st.ties}]
    if rows:
        out.specs["directions"] = ch.directions_chart(pl.DataFrame(rows))
    else:
        out.skipped["directions"] = "no comparison"
    pk = [{"label": fmt.label(r, d.simulated), "k": i + 1, "metric": metric, "value": v}
          for r in d.consistency.rows
          for metric, key in (("pass^k", "pass_hat_k"), ("pass@k", "pass_at_k"))
          for i, v in enumerate(r.get(key) or [])]
    if any(p["k"] > 1 for p in pk):
        out.specs["passk"] = ch.pass_k_chart(pl.DataFrame(pk))
    else:
        out.skipped["passk"] = "one repetition per task: pass^k and pass@k equal the rate"


def _front_charts(d: ReportData, out: Charts) -> None:
    import polars as pl

    from analysis import charts as ch

    for name, result, title in (("pareto", d.pareto, "cost per accepted result (USD)"),
                                ("pareto_trial", d.pareto_trial, "cost per trial (USD)")):
        df = _labelled(d, result.table)
        placed = df.filter(pl.col("on_front").is_not_null() | (pl.col("role") == "baseline"))
        if ch.has_data(placed, "x", "rate"):
            out.specs[name] = ch.pareto_chart(df, x_title=title, title="Pareto front: " + title)
        else:
            out.skipped[name] = "no configuration with a known cost"
    if d.matrix is not None:
        grid = pl.DataFrame(d.matrix.as_dict()["grid"])
        if "harness_label" in grid.columns:
            grid = grid.with_columns(pl.col("harness_label").alias("harness"))
        out.specs["matrix"] = ch.matrix_chart(grid)


def _other_charts(d: ReportData, out: Charts) -> None:
    import polars as pl

    from analysis import charts as ch

    fail = d.failures.table.filter(pl.col("value") != "accepted")
    if fail.height:
        out.specs["failures"] = ch.failures_chart(_labelled(d, fail).rename({"value": "category"}))
    else:
        out.skipped["failures"] = "every complete trial was accepted"
    fam = d.familiarity
    if fam is not None and ch.has_data(fam.table, "gap", "ci_low", "ci_high"):
        out.specs["familiarity"] = ch.gap_chart(_labelled(d, fam.table))
    if d.period is not None:
        rows = [{"label": r.label, "previous_rate": r.as_dict()["previous_rate"],
                 "current_rate": r.as_dict()["current_rate"]} for r in d.period.rows]
        df = pl.DataFrame(rows, schema={"label": pl.String, "previous_rate": pl.Float64,
                                        "current_rate": pl.Float64})
        if ch.has_data(df, "previous_rate", "current_rate"):
            out.specs["period"] = ch.period_chart(df)
        else:
            out.skipped["period"] = "no configuration ran in both periods"


def build(d: ReportData) -> Charts:
    """Every chart the sections may name (empty data → skipped with the reason)."""
    out = Charts()
    _summary_charts(d, out)
    _comparison_charts(d, out)
    _front_charts(d, out)
    _other_charts(d, out)
    return out
