"""Latency by phase (setup, agent, verification, total) and time to first edit."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

PHASES = {"setup": "setup_s", "agent": "agent_s", "verification": "verification_s",
          "total": "duration_s", "first_edit": "time_to_first_edit_s"}


class Latency(RowsResult):
    """Per configuration [× slice]: n, p50, p90, p95 seconds of each phase."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "trials": "Int64",
        **{f"{n}_{s}": ("Int64" if s == "n" else "Float64")
           for n in PHASES for s in ("n", "p50", "p90", "p95")}}


def latency(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
            by: list[str] | str | None = None) -> Latency:
    """Per configuration [× slice]: n, p50, p90, p95 seconds of each phase (complete trials)."""
    import polars as pl

    filters = filters or Filters()
    by_cols = check_by(by)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "complete", *PHASES.values(),
                                            *by_cols])
    require_trials(df, filters)
    df = df.filter(pl.col("complete"))
    aggs = [pl.len().alias("trials")]
    aggs += [pl.col(k).drop_nulls().first() for k in CONFIG_KEYS if k != "config_id"]
    for name, col in PHASES.items():
        c = pl.col(col)
        aggs += [c.count().alias(f"{name}_n"),
                 c.quantile(0.5, interpolation="linear").alias(f"{name}_p50"),
                 c.quantile(0.9, interpolation="linear").alias(f"{name}_p90"),
                 c.quantile(0.95, interpolation="linear").alias(f"{name}_p95")]
    out = df.group_by(["config_id", *by_cols]).agg(aggs)
    cols = [*CONFIG_KEYS, *by_cols, "trials",
            *[f"{n}_{s}" for n in PHASES for s in ("n", "p50", "p90", "p95")]]
    out = out.select(cols).sort(["model", "harness", "harness_version", "config_id",
                                 *by_cols], nulls_last=True)
    return Latency(out.to_dicts(), by_cols)
