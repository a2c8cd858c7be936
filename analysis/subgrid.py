"""The cells of a model × harness selection and its largest complete sub-grid.

A cell is one (model, harness) pair; its harness is labelled ``harness@version`` when
one harness appears in several versions. A *complete* sub-grid is a set of models and a
set of harnesses where every pair was run, on at least one task every one of those cells
has a valid trial on. ``largest_complete`` finds the one with the most cells (then the most
common tasks, then the most balanced shape) by trying every subset of the smaller side
(task sets as integer bit sets, so each try is a few AND operations); beyond 14 levels on
the smaller side it drops the level with the most missing cells until the grid is complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING

from analysis.data import CONFIG_KEYS
from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import polars as pl

EXHAUSTIVE = 14


@dataclass
class Cells:
    """Per cell ``"model × harness"``: per-task (accepted, valid) counts and its config."""

    counts: dict[str, dict[str, tuple[int, int]]]
    configs: dict[str, dict]
    models: list[str]
    harnesses: list[str]
    notes: list[str] = field(default_factory=list)

    def has(self, m: str, h: str) -> bool:
        return f"{m} × {h}" in self.counts


def cells_of(df: pl.DataFrame) -> Cells:
    """Valid trials (config keys, case_id, outcome) grouped into cells; configurations
    without a model or harness are left out with a note, two configurations in one cell
    are an error (they differ in settings: select one)."""
    import polars as pl

    outside = df.filter(pl.col("model").is_null() | pl.col("harness").is_null())
    notes = [f"{r['variant'] or r['config_id'][:12]}: no model or harness recorded; not part "
             "of the grid" for r in outside.select("config_id", "variant").unique()
             .sort("config_id").iter_rows(named=True)]
    df = df.filter(pl.col("model").is_not_null() & pl.col("harness").is_not_null())
    if df.height == 0:
        raise AnalysisError("no configuration records both a model and a harness; "
                            "a model × harness matrix needs them")
    versions = df.group_by("harness").agg(pl.col("harness_version").n_unique().alias("v"))
    multi = versions.filter(pl.col("v") > 1)["harness"].to_list()
    df = df.with_columns(
        harness=pl.when(pl.col("harness").is_in(multi))
        .then(pl.concat_str([pl.col("harness"), pl.lit("@"),
                             pl.col("harness_version").fill_null("?")]))
        .otherwise(pl.col("harness")))
    df = df.with_columns(cell=pl.concat_str([pl.col("model"), pl.lit(" × "), pl.col("harness")]))
    crowded = (df.group_by("cell").agg(pl.col("config_id").n_unique().alias("k"))
               .filter(pl.col("k") > 1)["cell"].sort().to_list())
    if crowded:
        raise AnalysisError(
            f"cell(s) {', '.join(crowded)} hold several configurations (different settings); "
            "select one per cell with --config, --run or --label")
    per = (df.group_by("cell", "case_id")
           .agg(c=(pl.col("outcome") == "accepted").sum(), n=pl.len()).sort("cell", "case_id"))
    counts: dict[str, dict[str, tuple[int, int]]] = {}
    for cell, case, c, n in per.iter_rows():
        counts.setdefault(cell, {})[case] = (int(c), int(n))
    configs = {r["cell"]: {k: r[k] for k in CONFIG_KEYS} | {"model": r["model"],
                                                            "harness": r["harness"]}
               for r in df.unique("cell").sort("cell").iter_rows(named=True)}
    return Cells(counts, configs, sorted(df["model"].unique().to_list()),
                 sorted(df["harness"].unique().to_list()), notes)


def _bits(g: Cells) -> tuple[dict[str, int], list[str]]:
    tasks = sorted({t for per in g.counts.values() for t in per})
    index = {t: i for i, t in enumerate(tasks)}
    return {cell: sum(1 << index[t] for t in per) for cell, per in g.counts.items()}, tasks


def _best(g: Cells, bits: dict[str, int]) -> tuple[list[str], list[str], int]:
    """(models, harnesses, common-task bit set) of the best complete sub-grid."""
    rows_are_models = len(g.models) >= len(g.harnesses)
    short = g.harnesses if rows_are_models else g.models
    long_ = g.models if rows_are_models else g.harnesses

    def cell(s: str, l_: str) -> str:
        return f"{l_} × {s}" if rows_are_models else f"{s} × {l_}"

    best: tuple[tuple[int, int, int], list[str], list[str], int] | None = None
    subsets: Iterator[list[str]]
    if len(short) <= EXHAUSTIVE:
        subsets = (list(c) for k in range(1, len(short) + 1) for c in combinations(short, k))
    else:
        subsets = iter([_greedy(g, short, long_, cell)])
    for sub in subsets:
        keep = [x for x in long_ if all(cell(s, x) in bits for s in sub)]
        common = -1
        for x in keep:
            for s in sub:
                common &= bits[cell(s, x)]
        if not keep or common == 0:
            continue
        score = (len(sub) * len(keep), bin(common).count("1"), min(len(sub), len(keep)))
        if best is None or score > best[0]:
            best = (score, list(sub), keep, common)
    if best is None:
        raise AnalysisError("no model × harness cells share a task with a valid trial")
    _, sub, keep, common = best
    return (keep, sub, common) if rows_are_models else (sub, keep, common)


def _greedy(g: Cells, short: list[str], long_: list[str],
            cell: Callable[[str, str], str]) -> list[str]:
    sub = list(short)
    while len(sub) > 1 and any(cell(s, x) not in g.counts for s in sub for x in long_):
        sub.remove(max(sub, key=lambda s: sum(cell(s, x) not in g.counts for x in long_)))
    return sub


def largest_complete(g: Cells) -> tuple[list[str], list[str], list[str], list[dict]]:
    """(models, harnesses, common tasks, dropped cells) of the complete sub-grid to analyse;
    an error when it is a single cell (nothing to compare)."""
    bits, tasks = _bits(g)
    models, harnesses, common = _best(g, bits)
    if len(models) * len(harnesses) < 2:
        raise AnalysisError(
            f"only one model × harness cell ({models[0]} × {harnesses[0]}) shares tasks: a "
            "matrix needs two models or two harnesses on common tasks; check --run/--universe "
            "or add runs")
    dropped = [{"model": m, "harness": h,
                "reason": "left out to keep the grid complete" if g.has(m, h) else "not run"}
               for m in g.models for h in g.harnesses
               if not (m in models and h in harnesses)
               and (g.has(m, h) or m in models or h in harnesses)]
    return models, harnesses, [t for i, t in enumerate(tasks) if common >> i & 1], dropped
