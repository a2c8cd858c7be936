"""Tables the terminal and the report lay out alike, built once from a result.

``trialhouse trajectory`` and the report's trajectory section print the same cells (so do
``budget-curve`` and ``visibility`` and theirs), so the layout lives here, below both
(``analysis.document``'s table), instead of in either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns

NOT_A_SCORE = ("Descriptions of how agents worked, not quality scores: read them next to outcomes.")
"""Said under every trajectory table: these metrics describe, they do not score."""


def _trajectory_cell(r: Mapping[str, Any], prefix: str) -> str:
    if r["metric"] == "final_check":
        share = r[f"{prefix}share"]
        count = r["n"] if not prefix else None
        if share is None:
            return fmt.DASH
        return fmt.rate(share) + ("" if count is None else f" ({fmt.count(count)})")
    if not r[f"{prefix}n"]:
        return fmt.DASH
    return (f"{fmt.number(r[f'{prefix}median'], 2)} / {fmt.number(r[f'{prefix}p90'], 2)}"
            f" (n={fmt.count(r[f'{prefix}n'])})")


def has_trajectory_data(r: Mapping[str, Any]) -> bool:
    """Whether a trajectory row says anything: a metric measured on some stage, or a
    ``final_check`` category other than a wholly unknown one (the report folds the rest)."""
    if r["metric"] == "final_check":
        return r["category"] != "unknown" or (r["share"] is not None and r["share"] < 1)
    return bool(r["n"] or r["accepted_n"] or r["other_n"])


def trajectory_table(rows: Sequence[Mapping[str, Any]],
                     label: Callable[[Mapping[str, Any]], str]) -> Table:
    """One row per configuration, stage and metric (``analysis.trajectory.summary``):
    median / p90 (n) over all stages, the accepted trials' and the others'; ``final_check``
    as shares of stages per category. ``label`` names a configuration's row."""
    return Table(
        "Trajectory metrics: median / p90 (final_check: share of stages)",
        columns(["configuration", "stage", "metric", "all", "accepted", "not accepted",
                 "unknown"], [False] * 3 + [True] * 4, identifying=3),
        [[label(r), r["stage"],
          r["metric"] if r["category"] is None else f"final_check: {r['category']}",
          _trajectory_cell(r, ""), _trajectory_cell(r, "accepted_"), _trajectory_cell(r, "other_"),
          fmt.count(r["unknown"])] for r in rows])


def _budget(kind: str | None, value: Any) -> str:
    return fmt.usd(value) if kind == "max_cost_usd" else fmt.secs(value)


def budget_curve_tables(curve: Any, label: Callable[[Mapping[str, Any]], str]) -> list[Table]:
    """``analysis.budget_curve``: the points (acceptance with its Wilson interval, cost per
    accepted, budget-exhausted trials) and the paired steps between adjacent points."""
    points = Table(
        "Budget curve: acceptance and cost per accepted result at each budget",
        columns(["sweep", "budget", "configuration", "accepted/valid", "95% CI per trial", "tasks",
                 "budget exhausted", "cost", "cost/accepted"], [False, True, False] + [True] * 6, identifying=3),
        [[r["sweep"], _budget(r["sweep_budget"], r["budget"]), label(r), fmt.pct(r["accepted"], r["valid"]),
          fmt.interval(r["ci_low"], r["ci_high"]), fmt.count(r["tasks"]), fmt.count(r["budget_exhausted"]),
          fmt.usd(r["cost_usd"], r["cost_coverage"]),
          fmt.DASH if not r["accepted"] else fmt.usd(r["cost_per_accepted"])] for r in curve.rows])
    kinds = {r["sweep"]: r["sweep_budget"] for r in curve.rows}
    steps = Table(
        "Between adjacent budgets, paired on the same tasks (sign test over tasks, as compare)",
        columns(["sweep", "from → to", "tasks", "pairs", "gained", "lost", "tasks better/worse/tied", "p",
                 "p (Holm)"], [False, False] + [True] * 7, identifying=2),
        [[s["sweep"], f"{_budget(kinds[s['sweep']], s['from_budget'])} → {_budget(kinds[s['sweep']], s['to_budget'])}",
          fmt.count(s["tasks"]), fmt.count(s["pairs"]), fmt.count(s["gained"]), fmt.count(s["lost"]),
          f"{s['improvements']}/{s['regressions']}/{s['ties']}", fmt.pval(s["p"]), fmt.pval(s["p_holm"])]
         for s in curve.steps])
    return [points, steps]


def visibility_table(vis: Any, label: Callable[[Mapping[str, Any]], str]) -> Table:
    """``analysis.visibility``: visible and hidden checks passed per configuration, and the gap."""
    return Table(
        "Visible and hidden checks: trials passing every check of each kind (final state)",
        columns(["configuration", "trials", "visible passed", "95% CI", "hidden passed", "95% CI", "gap",
                 "visible only", "hidden only", "p"], [False] + [True] * 9),
        [[label(r), fmt.count(r["trials"]), fmt.pct(r["visible_pass"], r["trials"]),
          fmt.interval(r["visible_ci_low"], r["visible_ci_high"]), fmt.pct(r["hidden_pass"], r["trials"]),
          fmt.interval(r["hidden_ci_low"], r["hidden_ci_high"]), fmt.signed(r["gap"]),
          fmt.count(r["visible_only"]), fmt.count(r["hidden_only"]), fmt.pval(r["p"])] for r in vis.rows])
