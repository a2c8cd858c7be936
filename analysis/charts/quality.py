"""Quality charts: rates with intervals, outcome mixes, per-task directions, pass@k / pass^k,
failure categories."""

from __future__ import annotations

import altair as alt
import polars as pl

from analysis import formatting as fmt
from analysis import theme
from analysis.charts.base import LABEL, finite


def rate_chart(
    summary: pl.DataFrame, *, title: str = "Acceptance rate per configuration"
) -> alt.LayerChart | alt.FacetChart:
    """Rate per configuration with its Wilson 95% interval (per trial).

    Columns: label, rate, ci_low, ci_high, solved, valid.
    """
    df = finite(summary, "rate", "ci_low", "ci_high").with_columns(
        pl.struct(["solved", "valid"])
        .map_elements(lambda s: fmt.pct(s["solved"], s["valid"]), return_dtype=pl.String)
        .alias("count")
    )
    base = alt.Chart(df, title=alt.Title(title, subtitle="Wilson 95% interval, per trial"))
    y = alt.Y(f"{LABEL}:N", title=None, sort=alt.EncodingSortField("rate", order="descending"))
    rule = base.mark_rule(strokeWidth=2, color=theme.NEUTRAL).encode(
        y=y,
        x=alt.X(
            "ci_low:Q",
            title="accepted / valid trials",
            scale=alt.Scale(domain=[0, 1]),
            axis=alt.Axis(format="%"),
        ),
        x2="ci_high:Q",
    )
    point = base.mark_point(color=theme.ACCENT).encode(
        y=y,
        x="rate:Q",
        tooltip=[
            alt.Tooltip(f"{LABEL}:N", title="configuration"),
            alt.Tooltip("count:N", title="accepted"),
            alt.Tooltip("ci_low:Q", format=".3f"),
            alt.Tooltip("ci_high:Q", format=".3f"),
        ],
    )
    text = base.mark_text(align="left", dx=8, dy=-8, fontSize=10, color="#444").encode(
        y=y, x="rate:Q", text="count:N"
    )
    return alt.layer(rule, point, text)


def outcomes_chart(counts: pl.DataFrame, *, title: str = "Trials by outcome") -> alt.Chart:
    """Stacked trial counts per configuration and outcome class.

    Columns: label, outcome, n.
    """
    order = list(theme.OUTCOME_COLORS)
    df = counts.with_columns(pl.col("outcome").fill_null("incomplete"))
    present = [o for o in order if o in set(df["outcome"].to_list())]
    present += sorted(set(df["outcome"].to_list()) - set(present))
    colors = [theme.OUTCOME_COLORS.get(o, theme.NEUTRAL) for o in present]
    return (
        alt.Chart(df, title=title)
        .mark_bar()
        .encode(
            y=alt.Y(f"{LABEL}:N", title=None),
            x=alt.X("sum(n):Q", title="trials"),
            color=alt.Color(
                "outcome:N", scale=alt.Scale(domain=present, range=colors), sort=present
            ),
            order=alt.Order("outcome_rank:Q"),
            tooltip=[
                alt.Tooltip(f"{LABEL}:N", title="configuration"),
                "outcome:N",
                alt.Tooltip("n:Q", title="trials"),
            ],
        )
        .transform_calculate(outcome_rank=f"indexof({present!r}, datum.outcome)")
    )


def directions_chart(
    directions: pl.DataFrame, *, title: str = "Per-task directions against the baseline"
) -> alt.Chart:
    """Unique tasks improved / regressed / tied per candidate.

    Columns: label (the candidate), direction (improvement|regression|tie), tasks.
    """
    domain = ["improvement", "tie", "regression"]
    return (
        alt.Chart(
            directions,
            title=alt.Title(
                title, subtitle="one direction per unique task; repetitions never add to the sample"
            ),
        )
        .mark_bar()
        .encode(
            y=alt.Y(f"{LABEL}:N", title=None),
            x=alt.X("tasks:Q", title="tasks"),
            color=alt.Color(
                "direction:N",
                scale=alt.Scale(domain=domain, range=[theme.GOOD, theme.NEUTRAL, theme.BAD]),
                sort=domain,
            ),
            order=alt.Order("direction_rank:Q"),
            tooltip=[alt.Tooltip(f"{LABEL}:N", title="candidate"), "direction:N", "tasks:Q"],
        )
        .transform_calculate(direction_rank=f"indexof({domain!r}, datum.direction)")
    )


METRIC_TITLES = {"pass@k": "pass@k: at least one of k tries succeeds",
                 "pass^k": "pass^k: all k tries succeed"}


def pass_k_chart(passk: pl.DataFrame, *, title: str = "pass@k and pass^k") -> alt.FacetChart:
    """pass@k (at least one of k succeeds) and pass^k (all k succeed) against k: one panel
    per metric, so the two are never told apart by a dash pattern alone.

    Columns: label, k, metric ("pass^k" | "pass@k"), value.
    """
    df = finite(passk, "value").with_columns(
        pl.col("metric").replace_strict(METRIC_TITLES, default=pl.col("metric")).alias("panel"))
    kmax = int(df["k"].cast(pl.Int64).max() or 1) if df.height else 1  # type: ignore[arg-type]
    labels = sorted(set(df[LABEL].to_list()))
    order = [METRIC_TITLES["pass@k"], METRIC_TITLES["pass^k"]]
    base = alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("k:Q", title="k (repetitions)", scale=alt.Scale(domain=[1, max(kmax, 2)]),
                axis=alt.Axis(values=list(range(1, max(kmax, 2) + 1)), format="d")),
        y=alt.Y("value:Q", title="probability", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        color=alt.Color(f"{LABEL}:N", title="configuration", scale=alt.Scale(
            domain=labels, range=theme.series_colors(len(labels)))),
        tooltip=[alt.Tooltip(f"{LABEL}:N", title="configuration"), "metric:N", "k:Q",
                 alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=260, height=220)
    return base.facet(
        column=alt.Column("panel:N", title=None, sort=order,
                          header=alt.Header(labelFontSize=12, labelFontWeight="bold")),
    ).properties(title=alt.Title(
        title, subtitle="unbiased estimators over tasks; k up to the fewest repetitions"))


def failures_chart(failures: pl.DataFrame, *, title: str = "Failure classes and categories"
                   ) -> alt.LayerChart | alt.FacetChart:
    """Trials per configuration (rows) and class or category (columns), as a grid of counts:
    one row per configuration whatever the number of classes (grouped bars left most of a
    15-configuration chart blank). A category appears once per assigner (``assigned_by``,
    ``annotator`` when given: two assigners of one trial are not added up).

    Columns: label, category, count; optional share, lost_spend_usd, assigned_by, annotator.
    """
    df = failures
    if {"assigned_by", "annotator"} <= set(df.columns):
        df = df.with_columns(pl.when(pl.col("assigned_by").is_not_null())
                             .then(pl.concat_str([pl.col("category"), pl.lit(" ("),
                                                  pl.col("assigned_by"), pl.lit(": "),
                                                  pl.col("annotator"), pl.lit(")")]))
                             .otherwise(pl.col("category")).alias("category"))
    tooltip: list = [alt.Tooltip(f"{LABEL}:N", title="configuration"), "category:N",
                     alt.Tooltip("count:Q", title="trials")]
    if "share" in df.columns:
        tooltip.append(alt.Tooltip("share:Q", format=".1%"))
    if "lost_spend_usd" in df.columns:
        tooltip.append(alt.Tooltip("lost_spend_usd:Q", format="$.4f", title="lost spend"))
    base = alt.Chart(df)
    x = alt.X("category:N", title=None, axis=alt.Axis(labelAngle=-30, orient="top"))
    y = alt.Y(f"{LABEL}:N", title=None)
    cells = base.mark_rect().encode(x=x, y=y, tooltip=tooltip, color=alt.Color(
        "count:Q", title="trials", scale=alt.Scale(scheme="oranges")))
    counts = base.mark_text(fontSize=11).encode(x=x, y=y, text="count:Q", tooltip=tooltip)
    return alt.layer(cells, counts, title=alt.Title(
        title, subtitle="trials per configuration; hover for the share and the lost spend")
    ).properties(width=alt.Step(64), height=alt.Step(22))
