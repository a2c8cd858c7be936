"""Chart functions: one polars DataFrame in, one altair chart out, no I/O.

Every function takes the frame an analysis function returns (plus a ``label``
column naming the configuration for display; reports add it with
:func:`with_labels`) and returns a chart styled by :mod:`analysis.theme`.
Rates are drawn with their intervals and tooltips carry the counts, so a chart
never shows a percentage without the numbers behind it.
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import polars as pl

from analysis import formatting as fmt
from analysis import theme
from analysis.formatting import config_label

theme.enable()

LABEL = "label"


def with_labels(df: pl.DataFrame, configs: pl.DataFrame | None = None) -> pl.DataFrame:
    """Add the display ``label`` column to a per-configuration frame.

    Uses the frame's own ``variant/model/harness/harness_version/simulated`` columns,
    or looks them up in ``configs`` by ``config_id`` when the frame lacks them.
    """
    if LABEL in df.columns:
        return df
    cols = ["variant", "model", "harness", "harness_version", "simulated"]
    if configs is not None and "config_id" in df.columns:
        missing = [c for c in cols if c not in df.columns and c in configs.columns]
        if missing:
            lookup = configs.select(["config_id", *missing]).unique("config_id", keep="first")
            df = df.join(lookup, on="config_id", how="left")
    get = {c: (df[c].to_list() if c in df.columns else [None] * df.height) for c in cols}
    ids = df["config_id"].to_list() if "config_id" in df.columns else [None] * df.height
    labels = [
        config_label(v, m, h, hv, cid, bool(s))
        for v, m, h, hv, s, cid in zip(
            get["variant"],
            get["model"],
            get["harness"],
            get["harness_version"],
            get["simulated"],
            ids,
            strict=True,
        )
    ]
    return df.with_columns(pl.Series(LABEL, labels, dtype=pl.String))


def _finite(df: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Rows whose given columns are known and finite (JSON cannot carry inf/NaN)."""
    cond = pl.lit(True)
    for c in columns:
        col = pl.col(c).cast(pl.Float64)
        cond = cond & col.is_not_null() & col.is_finite()
    return df.filter(cond)


def has_data(df: pl.DataFrame, *columns: str) -> bool:
    """Whether a chart over ``columns`` would draw anything (an empty chart is never drawn)."""
    return _finite(df, *columns).height > 0 if columns else df.height > 0


def rate_chart(
    summary: pl.DataFrame, *, title: str = "Acceptance rate per configuration"
) -> alt.LayerChart | alt.FacetChart:
    """Rate per configuration with its Wilson 95% interval (per trial).

    Columns: label, rate, ci_low, ci_high, solved, valid.
    """
    df = _finite(summary, "rate", "ci_low", "ci_high").with_columns(
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
    df = _finite(passk, "value").with_columns(
        pl.col("metric").replace_strict(METRIC_TITLES, default=pl.col("metric")).alias("panel"))
    kmax = int(df["k"].cast(pl.Int64).max() or 1) if df.height else 1  # type: ignore[arg-type]
    order = [METRIC_TITLES["pass@k"], METRIC_TITLES["pass^k"]]
    base = alt.Chart(df).mark_line(point=True).encode(
        x=alt.X("k:Q", title="k (repetitions)", scale=alt.Scale(domain=[1, max(kmax, 2)]),
                axis=alt.Axis(values=list(range(1, max(kmax, 2) + 1)), format="d")),
        y=alt.Y("value:Q", title="probability", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        color=alt.Color(f"{LABEL}:N", title="configuration"),
        tooltip=[alt.Tooltip(f"{LABEL}:N", title="configuration"), "metric:N", "k:Q",
                 alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=260, height=220)
    return base.facet(
        column=alt.Column("panel:N", title=None, sort=order,
                          header=alt.Header(labelFontSize=12, labelFontWeight="bold")),
    ).properties(title=alt.Title(
        title, subtitle="unbiased estimators over tasks; k up to the fewest repetitions"))


def pareto_chart(
    points: pl.DataFrame,
    *,
    x: str = "x",
    x_title: str = "cost per accepted result (USD)",
    title: str = "Cost / quality Pareto front",
) -> alt.LayerChart | alt.FacetChart:
    """Configurations on (cost, rate): the front highlighted and joined, dominated points labelled.

    Columns: label, ``x`` (cost), rate, on_front (bool); optional ci_low/ci_high.
    Points with unknown or infinite cost cannot be placed and are left out (the
    report lists them).
    """
    df = _finite(points, x, "rate")
    role = pl.col("role") if "role" in df.columns else pl.lit("agent")
    df = df.with_columns(
        pl.when(role == "baseline")
        .then(pl.lit("baseline (not ranked)"))
        .when(pl.col("on_front"))
        .then(pl.lit("on the front"))
        .otherwise(pl.lit("dominated"))
        .alias("status")
    )
    base = alt.Chart(
        df,
        title=alt.Title(
            title, subtitle="lower cost and higher rate are better; dominated points are named"
        ),
    )
    xe = alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False, nice=True))
    ye = alt.Y(
        "rate:Q",
        title="acceptance rate",
        axis=alt.Axis(format="%"),
        scale=alt.Scale(zero=False, nice=True),
    )
    layers: list[alt.Chart] = []
    if "ci_low" in df.columns and "ci_high" in df.columns:
        layers.append(base.mark_rule(color="#CCCCCC").encode(x=xe, y="ci_low:Q", y2="ci_high:Q"))
    layers.append(
        base.transform_filter("datum.status == 'on the front'")
        .mark_line(color=theme.GOOD, strokeDash=[4, 3])
        .encode(x=xe, y=ye, order=f"{x}:Q")
    )
    layers.append(
        base.mark_point(size=90).encode(
            x=xe,
            y=ye,
            color=alt.Color(
                "status:N",
                scale=alt.Scale(
                    domain=["on the front", "dominated", "baseline (not ranked)"],
                    range=[theme.GOOD, theme.NEUTRAL, "#8C8C8C"],
                ),
                title=None,
            ),
            shape=alt.Shape(
                "status:N",
                scale=alt.Scale(
                    domain=["on the front", "dominated", "baseline (not ranked)"],
                    range=["circle", "cross", "diamond"],
                ),
                title=None,
            ),
            tooltip=[
                alt.Tooltip(f"{LABEL}:N", title="configuration"),
                alt.Tooltip(f"{x}:Q", format="$.4f"),
                alt.Tooltip("rate:Q", format=".3f"),
                "status:N",
            ],
        )
    )
    layers.append(
        base.mark_text(align="left", dx=7, dy=-6, fontSize=10).encode(
            x=xe,
            y=ye,
            text=f"{LABEL}:N",
            color=alt.Color(
                "status:N",
                scale=alt.Scale(
                    domain=["on the front", "dominated", "baseline (not ranked)"],
                    range=[theme.GOOD, "#666666", "#8C8C8C"],
                ),
                legend=None,
            ),
        )
    )
    return alt.layer(*layers)


def matrix_chart(grid: pl.DataFrame, *, title: str = "Model × harness") -> alt.LayerChart | alt.FacetChart:
    """Heat map of acceptance rate per model (rows) and harness (columns), counts written in.

    Columns: model, harness, rate, solved, valid.
    """
    df = grid.with_columns(
        pl.struct(["solved", "valid"])
        .map_elements(lambda s: fmt.pct(s["solved"], s["valid"]), return_dtype=pl.String)
        .alias("count")
    )
    base = alt.Chart(df, title=alt.Title(title, subtitle="acceptance rate on common tasks"))
    rect = base.mark_rect().encode(
        x=alt.X("harness:N", title="harness", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("model:N", title="model"),
        color=alt.Color(
            "rate:Q",
            scale=alt.Scale(scheme="blues", domain=[0, 1]),
            title="rate",
            legend=alt.Legend(format="%"),
        ),
        tooltip=["model:N", "harness:N", alt.Tooltip("count:N", title="accepted")],
    )
    text = base.mark_text(fontSize=11).encode(
        x="harness:N",
        y="model:N",
        text="count:N",
        color=alt.condition("datum.rate > 0.55", alt.value("white"), alt.value("black")),
    )
    cells = max(1, grid["harness"].n_unique()), max(1, grid["model"].n_unique())
    # Cells wide enough for the "n/N (p%)" text they carry.
    return alt.layer(rect, text).properties(width=140 * cells[0], height=44 * cells[1])


def failures_chart(failures: pl.DataFrame, *, title: str = "Failure categories") -> alt.Chart:
    """Trials per failure category and configuration; tooltips carry share and lost spend.

    Columns: label, category, count; optional share, lost_spend_usd.
    """
    tooltip: list = [
        alt.Tooltip(f"{LABEL}:N", title="configuration"),
        "category:N",
        alt.Tooltip("count:Q", title="trials"),
    ]
    if "share" in failures.columns:
        tooltip.append(alt.Tooltip("share:Q", format=".1%"))
    if "lost_spend_usd" in failures.columns:
        tooltip.append(alt.Tooltip("lost_spend_usd:Q", format="$.4f", title="lost spend"))
    return (
        alt.Chart(failures, title=title)
        .mark_bar()
        .encode(
            y=alt.Y("category:N", title=None),
            x=alt.X("count:Q", title="trials"),
            color=alt.Color(f"{LABEL}:N", title="configuration"),
            yOffset=alt.YOffset(f"{LABEL}:N"),
            tooltip=tooltip,
        )
    )


def gap_chart(
    gaps: pl.DataFrame,
    *,
    value: str = "gap",
    title: str = "Known minus unknown repositories",
    x_title: str = "pass-rate gap (known − unknown)",
) -> alt.LayerChart | alt.FacetChart:
    """A difference per configuration with its interval and a zero line.

    Columns: label, ``value``, ci_low, ci_high.
    """
    df = _finite(gaps, value, "ci_low", "ci_high")
    base = alt.Chart(df, title=alt.Title(title, subtitle="interval clustered by repository"))
    y = alt.Y(f"{LABEL}:N", title=None)
    zero = (
        alt.Chart(pl.DataFrame({"zero": [0.0]}))
        .mark_rule(color="#999999", strokeDash=[3, 3])
        .encode(x="zero:Q")
    )
    rule = base.mark_rule(strokeWidth=2, color=theme.NEUTRAL).encode(
        y=y, x=alt.X("ci_low:Q", title=x_title, axis=alt.Axis(format="%")), x2="ci_high:Q"
    )
    point = base.mark_point(color=theme.ACCENT).encode(
        y=y,
        x=f"{value}:Q",
        tooltip=[
            alt.Tooltip(f"{LABEL}:N", title="configuration"),
            alt.Tooltip(f"{value}:Q", format=".3f"),
            alt.Tooltip("ci_low:Q", format=".3f"),
            alt.Tooltip("ci_high:Q", format=".3f"),
        ],
    )
    return alt.layer(zero, rule, point)


def distribution_chart(
    trials: pl.DataFrame, *, value: str, title: str, x_title: str, log: bool = False
) -> alt.Chart:
    """Box plot of a per-trial quantity (cost, wall time) per configuration; unknowns left out.

    Columns: label, ``value``.
    """
    df = _finite(trials.select([LABEL, value]), value)
    if log:
        df = df.filter(pl.col(value) > 0)
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    return (
        alt.Chart(
            df,
            title=alt.Title(
                title, subtitle="box = p25–p75, whiskers = 1.5 IQR; unknown values left out"
            ),
        )
        .mark_boxplot(extent=1.5, size=14)
        .encode(
            y=alt.Y(f"{LABEL}:N", title=None),
            x=alt.X(f"{value}:Q", title=x_title, scale=scale),
            color=alt.Color(f"{LABEL}:N", legend=None),
        )
    )


def period_chart(
    changes: pl.DataFrame, *, title: str = "This period against the previous one"
) -> alt.LayerChart | alt.FacetChart:
    """Rate in the previous and the current period per configuration, joined by an arrow-like rule.

    Columns: label, previous_rate, current_rate.
    """
    df = _finite(changes, "previous_rate", "current_rate")
    long = (
        df.select([LABEL, "previous_rate", "current_rate"])
        .unpivot(index=LABEL, variable_name="period", value_name="rate")
        .with_columns(pl.col("period").str.replace("_rate", ""))
    )
    base = alt.Chart(long, title=alt.Title(title, subtitle="acceptance rate per trial"))
    y = alt.Y(f"{LABEL}:N", title=None)
    line = base.mark_line(color="#BBBBBB").encode(y=y, x="rate:Q", detail=f"{LABEL}:N")
    pts = base.mark_point(filled=True, size=70).encode(
        y=y,
        x=alt.X("rate:Q", title="acceptance rate", axis=alt.Axis(format="%")),
        color=alt.Color(
            "period:N",
            scale=alt.Scale(domain=["previous", "current"], range=[theme.NEUTRAL, theme.ACCENT]),
        ),
        tooltip=[
            alt.Tooltip(f"{LABEL}:N", title="configuration"),
            "period:N",
            alt.Tooltip("rate:Q", format=".3f"),
        ],
    )
    return alt.layer(line, pts)


__all__: Sequence[str] = [
    "config_label",
    "with_labels",
    "has_data",
    "rate_chart",
    "outcomes_chart",
    "directions_chart",
    "pass_k_chart",
    "pareto_chart",
    "matrix_chart",
    "failures_chart",
    "gap_chart",
    "distribution_chart",
    "period_chart",
]
