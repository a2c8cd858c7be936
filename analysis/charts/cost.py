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


WIDTH = 460
LABEL_GAP = 14
"""Pixels between two labels' centres in the Pareto label column (10 px text, 4 px air)."""


def _y_domain(df: pl.DataFrame) -> tuple[float, float]:
    """The rate axis's domain: every rate and interval end, padded, within [0, 1]."""
    vals = [v for c in ("rate", "ci_low", "ci_high") if c in df.columns
            for v in df[c].drop_nulls().to_list()]
    lo, hi = max(0.0, min(vals)), min(1.0, max(vals))
    pad = max(0.02, 0.08 * (hi - lo))
    return max(0.0, lo - pad), min(1.0, hi + pad)


def place_labels(rates: list[float], domain: tuple[float, float], height: float,
                 gap: float = LABEL_GAP) -> list[float]:
    """Each label's y (in rate units) in a column beside the plot: as close to its point's
    height as it can be while every two labels stay ``gap`` pixels apart and all stay
    inside ``height`` (which must hold them: ``gap`` × labels). Order is kept."""
    lo, hi = domain
    span = (hi - lo) or 1.0
    px = [height * (hi - r) / span for r in rates]
    order = sorted(range(len(px)), key=lambda i: px[i])
    pos = [0.0] * len(px)
    last = -gap / 2
    for i in order:  # top down: push each label below the one above it
        pos[i] = last = max(px[i], last + gap)
    nxt = height - gap / 2 + gap
    for i in reversed(order):  # bottom up: pull back inside the plot's height
        pos[i] = nxt = min(pos[i], nxt - gap)
    return [hi - p * span / height for p in pos]


def pareto_chart(
    points: pl.DataFrame,
    *,
    x: str = "x",
    x_title: str = "cost per accepted result (USD)",
    title: str = "Cost / quality Pareto front",
) -> alt.LayerChart | alt.FacetChart:
    """Configurations on (cost, rate): the front highlighted and joined, every point named.

    Columns: label, ``x`` (cost), rate, on_front (bool); optional ci_low/ci_high.
    Points with unknown or infinite cost cannot be placed and are left out (the
    report lists them). Names stand in a column right of the plot, each joined to its
    point by a thin leader line and spaced so no two overlap (``place_labels``): a name
    never covers another, a point or the front line, however close the points are.
    """
    df = finite(points, x, "rate")
    role = pl.col("role") if "role" in df.columns else pl.lit("agent")
    df = df.with_columns(
        pl.when(role == "baseline").then(pl.lit(STATUSES[2]))
        .when(role == "ineligible").then(pl.lit(STATUSES[3]))
        .when(pl.col("on_front")).then(pl.lit(STATUSES[0]))
        .otherwise(pl.lit(STATUSES[1])).alias("status"))
    if "ci_low" in df.columns and "ci_high" in df.columns:
        df = df.with_columns(pl.col("ci_low").clip(0.0, 1.0), pl.col("ci_high").clip(0.0, 1.0))
    height = max(260, LABEL_GAP * (df.height + 2))
    domain = _y_domain(df) if df.height else (0.0, 1.0)
    df = df.with_columns(pl.Series("label_rate", place_labels(df["rate"].to_list(), domain,
                                                              height), dtype=pl.Float64))
    base = alt.Chart(df, title=alt.Title(
        title, subtitle="lower cost and higher rate are better; names at the right, joined "
                        "to their points"))
    xe = alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False, nice=True))
    yscale = alt.Scale(domain=list(domain), nice=False, zero=False)
    ye = alt.Y("rate:Q", title="acceptance rate", axis=alt.Axis(format="%"), scale=yscale)
    layers: list[alt.Chart] = []
    if "ci_low" in df.columns and "ci_high" in df.columns:
        layers.append(base.mark_rule(color="#CCCCCC").encode(x=xe, y="ci_low:Q", y2="ci_high:Q"))
    layers.append(base.mark_rule(color="#BBBBBB", strokeWidth=0.7).encode(
        x=xe, y=ye, x2=alt.value(WIDTH + 8), y2="label_rate:Q"))
    layers.append(base.transform_filter(f"datum.status == '{STATUSES[0]}'")
                  .mark_line(color=theme.GOOD, strokeDash=[4, 3])
                  .encode(x=xe, y=ye, order=f"{x}:Q"))
    layers.append(base.mark_point(size=90).encode(
        x=xe, y=ye,
        color=_status("status", [theme.GOOD, theme.NEUTRAL, "#8C8C8C", theme.BAD], title=None,
                      legend=alt.Legend(orient="bottom")),
        shape=alt.Shape("status:N", title=None, legend=alt.Legend(orient="bottom"),
                        scale=alt.Scale(domain=STATUSES,
                                        range=["circle", "cross", "diamond", "triangle-down"])),
        tooltip=[alt.Tooltip(f"{LABEL}:N", title="configuration"),
                 alt.Tooltip(f"{x}:Q", format="$.4f"), alt.Tooltip("rate:Q", format=".3f"),
                 "status:N"]))
    layers.append(base.mark_text(align="left", baseline="middle", fontSize=10).encode(
        x=alt.value(WIDTH + 11), y=alt.Y("label_rate:Q", scale=yscale), text=f"{LABEL}:N",
        color=_status("status", [theme.GOOD, "#666666", "#8C8C8C", theme.BAD], legend=None),
    ).properties(name="pareto_labels"))
    return alt.layer(*layers).properties(width=WIDTH, height=height)


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
