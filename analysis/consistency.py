"""Consistency: tasks passed on every repetition, and the pass^k / pass@k curves."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis import stats
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by

if TYPE_CHECKING:
    import duckdb
    import polars as pl


def consistency(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                by: list[str] | str | None = None) -> pl.DataFrame:
    """Per configuration [× slice]: consistent tasks with a Wilson interval, pass^k, pass@k.

    Uses the tasks on which every configuration of the same task universe (benchmark)
    has ≥ 1 valid trial (``excluded_tasks`` counts the rest), so counts line up side by side.
    """
    import polars as pl

    filters = filters or Filters()
    by_cols = check_by(by)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "universe", "case_id", "outcome",
                                            "complete", *by_cols])
    require_trials(df, filters)
    valid = df.filter(pl.col("complete")
                      & ~pl.col("outcome").is_in(["infra_error", "invalid"]))
    keys = ["config_id", *by_cols]
    # Common tasks per task universe (benchmark), as in summary.summarize.
    n_cfg = valid.group_by("universe").agg(pl.col("config_id").n_unique().alias("n_cfg"))
    common = (valid.group_by(["universe", "case_id"])
              .agg(pl.col("config_id").n_unique().alias("k"))
              .join(n_cfg, on="universe").filter(pl.col("k") == pl.col("n_cfg"))
              .select("universe", "case_id"))
    all_tasks = df.group_by("config_id").agg(
        pl.struct("universe", "case_id").n_unique().alias("all_tasks"))
    per_task = (valid.join(common, on=["universe", "case_id"], how="semi")
                .group_by([*keys, "universe", "case_id"])
                .agg(n=pl.len(), c=(pl.col("outcome") == "accepted").sum().cast(pl.Int64)))
    grouped = per_task.group_by([*keys, "n", "c"]).agg(w=pl.len())
    names = valid.group_by("config_id").agg([pl.col(k).drop_nulls().first()
                                             for k in CONFIG_KEYS if k != "config_id"])
    rows = []
    for key, part in grouped.group_by(keys, maintain_order=True):
        counts = {(n, c): w for n, c, w in part.select("n", "c", "w").iter_rows()}
        tasks = sum(counts.values())
        consistent = sum(w for (n, c), w in counts.items() if c == n)
        lo, hi = stats.wilson(consistent, tasks)
        hat, at = stats.pass_curves(counts)
        ns = [n for n, _ in counts]
        rows.append({**dict(zip(keys, key, strict=True)), "tasks": tasks,
                     "consistent": consistent, "ci_low": lo, "ci_high": hi,
                     "min_n": min(ns), "max_n": max(ns), "equal_n": min(ns) == max(ns),
                     "pass_hat_k": hat, "pass_at_k": at})
    if not rows:
        raise AnalysisError("no task has a valid trial for every configuration; narrow the "
                            "selection with --run or --label")
    out = pl.DataFrame(rows, schema_overrides={"pass_hat_k": pl.List(pl.Float64),
                                                "pass_at_k": pl.List(pl.Float64)})
    out = out.join(names, on="config_id").join(all_tasks, on="config_id")
    out = out.with_columns(excluded_tasks=pl.col("all_tasks") - pl.col("tasks")
                           if not by_cols else pl.lit(None, pl.Int64)).drop("all_tasks")
    cols = [*CONFIG_KEYS, *by_cols, "tasks", "consistent", "ci_low", "ci_high", "min_n",
            "max_n", "equal_n", "pass_hat_k", "pass_at_k", "excluded_tasks"]
    return out.select(cols).sort(["model", "harness", "harness_version", "config_id",
                                  *by_cols], nulls_last=True)


def check_comparable(df: pl.DataFrame, a: str, b: str) -> None:
    """Refuse to compare consistency counts when repetition counts differ (AnalysisError)."""
    import polars as pl

    rows = {}
    for name in (a, b):
        hit = df.filter((pl.col("config_id") == name) | (pl.col("variant") == name))
        if hit.height == 0:
            raise AnalysisError(f"configuration {name!r} not in the consistency table")
        rows[name] = hit.row(0, named=True)
    ra, rb = rows[a], rows[b]
    if not (ra["equal_n"] and rb["equal_n"] and ra["min_n"] == rb["min_n"]):
        raise AnalysisError(
            f"consistency of {a!r} (n = {ra['min_n']}..{ra['max_n']}) and {b!r} "
            f"(n = {rb['min_n']}..{rb['max_n']}) is not comparable: the repetition counts "
            "differ; compare pass^k for a common k instead"
        )
