"""Noise decomposition per configuration: repetition noise against task-to-task spread.

On the common tasks of each universe (the task set ``summarize`` and ``consistency`` use),
each configuration's per-task counts give the within-task (repetition) variance ω² and the
between-task variance τ² (``analysis.variance``), and with them the standard error of its
task-mean rate the same design would have with more repetitions. When τ² dominates, more
repetitions barely narrow the interval: only more tasks do.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, ClassVar

from analysis import scope, variance
from analysis.consistency import histograms
from analysis.data import CONFIG_KEYS
from analysis.filters import Filters
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

REPS = (1, 2, 3, 5, 10)
"""Repetition counts the ``se_at_reps`` column reports (element i is REPS[i])."""


class Noise(RowsResult):
    """Per configuration × universe: ω², τ², the share of τ², and SEs at other designs."""

    TASK_SETS: ClassVar[bool] = True
    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "universe": "String", "tasks": "Int64", "mean_reps": "Float64",
        "min_reps": "Int64", "within_var": "Float64", "between_var": "Float64",
        "between_share": "Float64", "se_observed": "Float64", "se_design": "Float64",
        "se_at_reps": "List(Float64)", "se_floor": "Float64", "verdict": "String"}


def _verdict(share: float | None, se_now: float | None, floor: float | None,
             truncated: bool = False) -> str:
    text = _reading(share, se_now, floor)
    if truncated:
        text += "; τ² estimated at 0 (task rates spread no more than repetition noise explains)"
    return text


def _reading(share: float | None, se_now: float | None, floor: float | None) -> str:
    if se_now is None or floor is None:
        return "needs ≥ 2 repetitions on some task to split the variance"
    if share is None:
        return "no variation: every repetition of every task has the same outcome"
    if share >= 0.8:
        return ("task-to-task spread dominates: more repetitions barely help "
                f"(SE {100 * se_now:.1f} → {100 * floor:.1f} pp at ∞); add tasks")
    return (f"repetition noise is {100 * (1 - share):.0f}% of the per-task variance: more "
            f"repetitions help (SE {100 * se_now:.1f} pp now, {100 * floor:.1f} pp at ∞)")


def _row(key: tuple, part: list[tuple], names: dict) -> dict:
    tasks = [(c, n) for *_, n, c, w in part for _ in range(w)]
    comp = variance.components(tasks)
    n_t, rbar = comp["tasks"], comp["mean_reps"]
    tau, omega = comp["between"], comp["within"]
    observed = (math.sqrt(comp["observed_var"] / n_t) if comp["observed_var"] is not None
                else None)
    split = tau is not None and omega is not None and n_t >= 2
    se_now = variance.design_se(tau, omega, n_t, rbar) if split else None
    floor = variance.design_se(tau, omega, n_t, math.inf) if split else None
    per_task = (tau + omega / rbar) if split else None
    share = tau / per_task if per_task else None
    return {"config_id": key[0], **{k: names[key[0]][k] for k in CONFIG_KEYS[1:]},
            "universe": key[1], "tasks": n_t, "mean_reps": rbar,
            "min_reps": min(n for _, n in tasks), "within_var": omega, "between_var": tau,
            "between_share": share, "se_observed": observed, "se_design": se_now,
            "se_at_reps": [variance.design_se(tau, omega, n_t, r) for r in REPS] if split
            else None, "se_floor": floor,
            "verdict": _verdict(share, se_now, floor, bool(comp["truncated"]))}


def noise(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Noise:
    """Per configuration × universe: the variance split and the SE at other designs."""
    filters = scope.resolve(con, filters)
    h = histograms(con, filters, [])
    rows = [_row(key, list(group), h.names)
            for key, group in itertools.groupby(h.rows, key=lambda r: r[:2])]
    rows.sort(key=lambda r: tuple((r[k] is None, r[k] or "") for k in
                                  ("model", "harness", "harness_version", "config_id",
                                   "universe")))
    warnings = [f"{r['variant'] or r['config_id'][:12]}: one repetition per task, so "
                "repetition noise cannot be told from task spread" for r in rows
                if r["within_var"] is None]
    return Noise(rows, [], warnings, universes=h.universes)
