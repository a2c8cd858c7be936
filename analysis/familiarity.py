"""Known vs unknown repositories: the pass-rate gap per configuration, clustered by repository."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis import stats
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.errors import AnalysisError
from analysis.filters import Filters

if TYPE_CHECKING:
    import duckdb
    import polars as pl

SMALL_G = 10


def familiarity(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per configuration: known rate − unknown rate over valid trials, CR1 by repository.

    Tasks with no familiarity label are left out; a task without a repository is its own
    cluster.
    """
    import polars as pl

    filters = filters or Filters()
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "case_id", "outcome", "complete",
                                            "repository", "familiarity"])
    require_trials(df, filters)
    df = df.filter(pl.col("complete") & ~pl.col("outcome").is_in(["infra_error", "invalid"])
                   & pl.col("familiarity").is_in(["known", "unknown"]))
    if df.height == 0:
        raise AnalysisError("no valid trial on a task labelled familiarity=known|unknown; "
                            "label cases with 'familiarity' in the manifest")
    df = df.with_columns(
        y=(pl.col("outcome") == "accepted").cast(pl.Float64),
        known=(pl.col("familiarity") == "known").cast(pl.Float64),
        cluster=pl.coalesce(pl.col("repository"), pl.lit("case:") + pl.col("case_id")),
    )
    rows = []
    for _key, part in df.group_by(["config_id"], maintain_order=True):
        first = part.row(0, named=True)
        k = part.filter(pl.col("known") == 1.0)
        u = part.filter(pl.col("known") == 0.0)
        res = stats.cluster_diff(part["y"].to_list(), part["known"].to_list(),
                                 part["cluster"].to_list())
        gk, gu = k["cluster"].n_unique(), u["cluster"].n_unique()
        kr = float(k["y"].mean()) if k.height else None
        ur = float(u["y"].mean()) if u.height else None
        rows.append({**{c: first[c] for c in CONFIG_KEYS},
                     "known_valid": k.height, "known_solved": int(k["y"].sum()),
                     "known_rate": kr, "unknown_valid": u.height,
                     "unknown_solved": int(u["y"].sum()), "unknown_rate": ur,
                     "gap": kr - ur if kr is not None and ur is not None else None,
                     "se": res["se"], "ci_low": res["ci_low"], "ci_high": res["ci_high"],
                     "g_known": gk, "g_unknown": gu, "g": res["g"],
                     "small_g": res["g"] < SMALL_G})
    schema = {**{c: pl.String for c in CONFIG_KEYS}, "known_valid": pl.Int64,
              "known_solved": pl.Int64, "known_rate": pl.Float64, "unknown_valid": pl.Int64,
              "unknown_solved": pl.Int64, "unknown_rate": pl.Float64, "gap": pl.Float64,
              "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
              "g_known": pl.Int64, "g_unknown": pl.Int64, "g": pl.Int64, "small_g": pl.Boolean}
    return pl.DataFrame(rows, schema=schema).sort(["model", "harness", "harness_version",
                                                   "config_id"], nulls_last=True)
