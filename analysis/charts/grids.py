"""Grid and difference charts: model × harness, known − unknown gap, period over period."""

from __future__ import annotations

import altair as alt
import polars as pl

from analysis import formatting as fmt
from analysis import theme
from analysis.charts.base import LABEL, finite


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
    df = finite(gaps, value, "ci_low", "ci_high")
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


def period_chart(
    changes: pl.DataFrame, *, title: str = "This period against the previous one"
) -> alt.LayerChart | alt.FacetChart:
    """Rate in the previous and the current period per configuration, joined by an arrow-like rule.

    Columns: label, previous_rate, current_rate.
    """
    df = finite(changes, "previous_rate", "current_rate")
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
