"""What every chart shares: the display label, finite data only, the one theme."""

from __future__ import annotations

import polars as pl

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


def finite(df: pl.DataFrame, *columns: str) -> pl.DataFrame:
    """Rows whose given columns are known and finite (JSON cannot carry inf/NaN)."""
    cond = pl.lit(True)
    for c in columns:
        col = pl.col(c).cast(pl.Float64)
        cond = cond & col.is_not_null() & col.is_finite()
    return df.filter(cond)


def has_data(df: pl.DataFrame, *columns: str) -> bool:
    """Whether a chart over ``columns`` would draw anything (an empty chart is never drawn)."""
    return finite(df, *columns).height > 0 if columns else df.height > 0
