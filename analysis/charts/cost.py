"""Cost charts: the Pareto front and per-trial distributions (unknown values left out)."""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

from analysis import theme
from analysis.charts.base import LABEL, finite

STATUSES = ["on the front", "dominated", "baseline (not ranked)", "ineligible (off the front)"]


def _status(field: str, colors: list[str], **kwargs: Any) -> alt.Color:
    return alt.Color(f"{field}:N", scale=alt.Scale(domain=STATUSES, range=colors), **kwargs)


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
    df = finite(points, x, "rate")
    role = pl.col("role") if "role" in df.columns else pl.lit("agent")
    df = df.with_columns(
        pl.when(role == "baseline").then(pl.lit(STATUSES[2]))
        .when(role == "ineligible").then(pl.lit(STATUSES[3]))
        .when(pl.col("on_front")).then(pl.lit(STATUSES[0]))
        .otherwise(pl.lit(STATUSES[1])).alias("status"))
    base = alt.Chart(df, title=alt.Title(
        title, subtitle="lower cost and higher rate are better; dominated points are named"))
    xe = alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False, nice=True))
    ye = alt.Y("rate:Q", title="acceptance rate", axis=alt.Axis(format="%"),
               scale=alt.Scale(zero=False, nice=True))
    layers: list[alt.Chart] = []
    if "ci_low" in df.columns and "ci_high" in df.columns:
        layers.append(base.mark_rule(color="#CCCCCC").encode(x=xe, y="ci_low:Q", y2="ci_high:Q"))
    layers.append(base.transform_filter(f"datum.status == '{STATUSES[0]}'")
                  .mark_line(color=theme.GOOD, strokeDash=[4, 3])
                  .encode(x=xe, y=ye, order=f"{x}:Q"))
    layers.append(base.mark_point(size=90).encode(
        x=xe, y=ye,
        color=_status("status", [theme.GOOD, theme.NEUTRAL, "#8C8C8C", theme.BAD], title=None),
        shape=alt.Shape("status:N", title=None, scale=alt.Scale(
            domain=STATUSES, range=["circle", "cross", "diamond", "triangle-down"])),
        tooltip=[alt.Tooltip(f"{LABEL}:N", title="configuration"),
                 alt.Tooltip(f"{x}:Q", format="$.4f"), alt.Tooltip("rate:Q", format=".3f"),
                 "status:N"]))
    layers.append(base.mark_text(align="left", dx=7, dy=-6, fontSize=10).encode(
        x=xe, y=ye, text=f"{LABEL}:N",
        color=_status("status", [theme.GOOD, "#666666", "#8C8C8C", theme.BAD], legend=None)))
    return alt.layer(*layers)


def distribution_chart(
    trials: pl.DataFrame, *, value: str, title: str, x_title: str, log: bool = False
) -> alt.Chart:
    """Box plot of a per-trial quantity (cost, wall time) per configuration; unknowns left out.

    Columns: label, ``value``.
    """
    df = finite(trials.select([LABEL, value]), value)
    labels = sorted(set(df[LABEL].to_list()))  # one distinct colour each (theme.series_colors)
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
            color=alt.Color(f"{LABEL}:N", legend=None, scale=alt.Scale(
                domain=labels, range=theme.series_colors(len(labels)))),
        )
    )
