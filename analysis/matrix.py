"""Model × harness: the grid, paired effects within rows/columns, and the interaction.

Answers "does the harness change the model ranking?" with a binomial GLM
``accepted ~ C(model) * C(harness)`` on per-(task, cell) counts, task-clustered covariance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from analysis import stats
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.errors import AnalysisError
from analysis.filters import Filters

if TYPE_CHECKING:
    import duckdb
    import polars as pl


@dataclass
class Matrix:
    grid: pl.DataFrame
    models: list[str]
    harnesses: list[str]
    common_tasks: int
    model_effects: list[dict]
    harness_effects: list[dict]
    interaction: dict
    rankings: dict[str, list[str]]
    ranking_changes: bool
    verdict: str
    warnings: list[str] = field(default_factory=list)

    def records(self) -> list[dict]:
        """Flat rows for CSV: the grid cells."""
        from analysis.jsonout import frame_records

        return frame_records(self.grid)

    def as_dict(self) -> dict:
        from analysis.jsonout import clean, frame_records

        return clean({"grid": frame_records(self.grid), "models": self.models,
                      "harnesses": self.harnesses, "common_tasks": self.common_tasks,
                      "model_effects": self.model_effects,
                      "harness_effects": self.harness_effects,
                      "interaction": self.interaction, "rankings": self.rankings,
                      "ranking_changes": self.ranking_changes, "verdict": self.verdict,
                      "warnings": self.warnings})


def _effect(per_task: pl.DataFrame, a: str, b: str) -> dict:
    """Paired effect of cell b over cell a on common tasks: mean difference + sign test."""
    import polars as pl

    ta = per_task.filter(pl.col("cell") == a)
    tb = per_task.filter(pl.col("cell") == b)
    j = ta.join(tb, on="case_id", suffix="_b").sort("case_id")
    dirs = [stats.direction(cb, nb, ca, na) for ca, na, cb, nb in
            j.select("c", "n", "c_b", "n_b").iter_rows()]
    pa_ = [c / n for c, n in j.select("c", "n").iter_rows()]
    pb_ = [c / n for c, n in j.select("c_b", "n_b").iter_rows()]
    diff = stats.paired_difference(pb_, pa_)
    sign = stats.sign_test(dirs.count("improvement"), dirs.count("regression"))
    sign["ties"] = dirs.count("tie")
    return {"mean_diff": diff["mean_diff"], "ci_low": diff["ci_low"],
            "ci_high": diff["ci_high"], "tasks": diff["tasks"], "sign_test": sign}


def _interaction(per_task: pl.DataFrame) -> dict:
    """Joint Wald test of the interaction terms, clustered by task."""
    import warnings

    import numpy as np
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from scipy.stats import chi2

    pdf = per_task.select("case_id", "model", "harness", "c", "n").to_pandas()
    pdf["fail"] = pdf["n"] - pdf["c"]
    groups = pdf["case_id"].astype("category").cat.codes.to_numpy()
    out: dict[str, Any] = {"method": "binomial GLM accepted ~ C(model) * C(harness), task-clustered Wald",
           "df": None, "chi2": None, "p": None, "estimable": False, "note": None}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = smf.glm("c + fail ~ C(model) * C(harness)", data=pdf,
                          family=sm.families.Binomial()).fit(
                cov_type="cluster", cov_kwds={"groups": groups})
    except Exception as exc:  # noqa: BLE001 -- separation etc. is a finding, not a crash
        out["note"] = f"model could not be fitted: {type(exc).__name__}: {exc}"
        return out
    names = [n for n in res.params.index if ":" in n]
    b = res.params[names].to_numpy()
    v = res.cov_params().loc[names, names].to_numpy()
    if not np.all(np.isfinite(b)) or not np.all(np.isfinite(v)) or np.abs(b).max() > 15:
        out["note"] = ("interaction not estimable: some cell is all-pass or all-fail "
                       "(separation); read the grid and the paired effects instead")
        return out
    try:
        stat = float(b @ np.linalg.solve(v, b))
    except np.linalg.LinAlgError:
        out["note"] = "interaction covariance is singular (too few tasks for the clusters)"
        return out
    out.update(df=len(names), chi2=stat, p=float(chi2.sf(stat, len(names))), estimable=True)
    return out


def _cells(df: pl.DataFrame) -> tuple[pl.DataFrame, list[str], list[str], list[str]]:
    """Valid trials labelled with their cell (model × harness[@version]); refuses what is no
    grid. Returns the frame, models, harnesses, and notes on what was left out."""
    import polars as pl

    # Configurations without a model or harness (the no-agent and oracle baselines, some
    # foreign sources) have no place in a model × harness grid: leave them out, say so.
    outside = df.filter(pl.col("model").is_null() | pl.col("harness").is_null())
    notes = [f"{r['variant'] or r['config_id'][:12]}: no model or harness recorded; not part "
             "of the grid" for r in outside.select("config_id", "variant").unique()
             .sort("config_id").iter_rows(named=True)]
    df = df.filter(pl.col("model").is_not_null() & pl.col("harness").is_not_null())
    if df.height == 0:
        raise AnalysisError("no configuration records both a model and a harness; "
                            "a model × harness matrix needs them")
    versions = df.group_by("harness").agg(pl.col("harness_version").n_unique().alias("v"))
    multi = set(versions.filter(pl.col("v") > 1)["harness"].to_list())
    df = df.with_columns(
        model=pl.col("model").fill_null("(unknown model)"),
        harness=pl.when(pl.col("harness").is_in(list(multi)))
        .then(pl.concat_str([pl.col("harness"), pl.lit("@"), pl.col("harness_version")]))
        .otherwise(pl.col("harness")).fill_null("(unknown harness)"),
    ).with_columns(cell=pl.concat_str([pl.col("model"), pl.lit(" × "), pl.col("harness")]))
    per_cell_cfg = df.group_by("cell").agg(pl.col("config_id").n_unique().alias("k"))
    crowded = per_cell_cfg.filter(pl.col("k") > 1)["cell"].to_list()
    if crowded:
        raise AnalysisError(
            f"cell(s) {', '.join(crowded)} hold several configurations (different settings); "
            "select one per cell with --run or --label")
    models = sorted(df["model"].unique().to_list())
    harnesses = sorted(df["harness"].unique().to_list())
    cells = df["cell"].n_unique()
    if len(models) < 2 or len(harnesses) < 2 or cells < len(models) * len(harnesses):
        raise AnalysisError(
            f"a model × harness matrix needs every cell of ≥ 2 models × ≥ 2 harnesses; found "
            f"{len(models)} model(s) × {len(harnesses)} harness(es) with {cells} cell(s) filled")
    return df, models, harnesses, notes


def _grid(df: pl.DataFrame, per_task: pl.DataFrame) -> list[dict]:
    import polars as pl

    rows = []
    cfg = df.group_by("cell").agg([pl.col(k).first() for k in CONFIG_KEYS])
    for r in cfg.sort(["model", "harness"]).iter_rows(named=True):
        part = per_task.filter(pl.col("cell") == r["cell"])
        valid, solved = int(part["n"].sum()), int(part["c"].sum())
        lo, hi = stats.wilson(solved, valid)
        rows.append({**{k: r[k] for k in CONFIG_KEYS}, "tasks": part.height, "valid": valid,
                     "solved": solved, "rate": solved / valid, "ci_low": lo, "ci_high": hi})
    return rows


def _verdict(rankings: dict[str, list[str]], changes: bool, inter: dict[str, Any]) -> str:
    order = "; ".join(f"{h}: {' > '.join(v)}" for h, v in rankings.items())
    if changes:
        verdict = f"Yes, the harness changes the model ranking ({order})."
    else:
        verdict = f"No, every harness ranks the models the same ({order})."
    if not inter["estimable"]:
        return verdict + f" {inter['note']}."
    p = inter["p"]
    return verdict + (f" Interaction test: chi2 = {inter['chi2']:.2f} on {inter['df']} df, "
                      f"p = {p:.3g}" + (" — the harness effect differs between models."
                                        if p < 0.05 else
                                        " — not distinguishable from noise on these tasks."))


def matrix(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Matrix:
    """The model × harness grid on tasks common to every cell (refuses grids below 2 × 2)."""
    import polars as pl

    filters = filters or Filters()
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "case_id", "outcome", "valid"])
    require_trials(df, filters)
    df, models, harnesses, notes = _cells(df.filter(pl.col("valid")))
    cells = df["cell"].n_unique()
    common = (df.group_by("case_id").agg(pl.col("cell").n_unique().alias("k"))
              .filter(pl.col("k") == cells)["case_id"])
    if common.len() == 0:
        raise AnalysisError("no task has a valid trial in every model × harness cell")
    df = df.filter(pl.col("case_id").is_in(common.implode()))
    per_task = df.group_by(["cell", "model", "harness", "case_id"]).agg(
        n=pl.len(), c=(pl.col("outcome") == "accepted").sum().cast(pl.Int64))
    grid_rows = _grid(df, per_task)
    rate = {(r["model"], r["harness"]): r["rate"] for r in grid_rows}
    model_effects = [{"harness": h, "model_a": a, "model_b": b,
                      **_effect(per_task, f"{a} × {h}", f"{b} × {h}")}
                     for h in harnesses for a, b in combinations(models, 2)]
    harness_effects = [{"model": m, "harness_a": a, "harness_b": b,
                        **_effect(per_task, f"{m} × {a}", f"{m} × {b}")}
                       for m in models for a, b in combinations(harnesses, 2)]

    def ranked(h: str) -> list[str]:
        return sorted(models, key=lambda m: (-rate[(m, h)], m))

    rankings = {h: ranked(h) for h in harnesses}
    changes = len({tuple(v) for v in rankings.values()}) > 1
    inter = _interaction(per_task)
    warnings = [*notes] + ([f"{common.len()} common task(s): descriptive sample"]
                           if common.len() < 10 else [])
    return Matrix(grid=pl.DataFrame(grid_rows), models=models, harnesses=harnesses,
                  common_tasks=common.len(), model_effects=model_effects,
                  harness_effects=harness_effects, interaction=inter, rankings=rankings,
                  ranking_changes=changes, verdict=_verdict(rankings, changes, inter),
                  warnings=warnings)
