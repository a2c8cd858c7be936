"""Quality at several budgets: the points of each budget sweep, and each step between
adjacent points paired on the same tasks (docs/analysis.md, "budget-curve").

A sweep is the configurations a manifest expanded from one variant's list of budgets
(``configs.sweep``; docs/runner.md, "Budgets and budget sweeps"). Per point: acceptance
over its valid trials with the Wilson interval (per trial, as ``summarize``), cost per
accepted result (the cost of every complete trial over the accepted ones; unknown when a
cost is), and how many trials ran out of budget. Per step from one budget to the next:
the paired comparison of ``compare`` itself (``analysis.paired.compare_relation``, the
lower budget as the baseline), so its sign test is the one ``compare`` prints for those
two configurations; Holm adjusts over the steps of one sweep.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from analysis import scope, stats
from analysis.comparison import ConfigRef
from analysis.data import CONFIG_KEYS, trials_sql
from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.paired import compare_relation
from analysis.resampling import SEED
from analysis.results import CONFIG_SCHEMA, RowsResult
from analysis.tasks import evaluator_changes

if TYPE_CHECKING:
    import duckdb

NO_SWEEP = "no budget sweep in the selection"
_COLS = [*CONFIG_KEYS, "run_id", "case_id", "case_fingerprint", "outcome", "complete", "valid", "solved",
         "holdout", "duration_s", "cost_usd", "input_tokens", "output_tokens", "steps"]

_POINTS_SQL = """
SELECT DISTINCT c.sweep, c.sweep_budget, c.sweep_value, c.config_id
FROM configs c SEMI JOIN (SELECT DISTINCT run_id, config_id FROM {rel}) t USING (run_id, config_id)
WHERE c.sweep IS NOT NULL
ORDER BY c.sweep, c.sweep_budget, c.sweep_value, c.config_id
"""  # noqa: S608 -- {rel} is an internal relation name

_STATS_SQL = """
SELECT config_id, any_value(variant) AS variant, any_value(model) AS model,
       any_value(harness) AS harness, any_value(harness_version) AS harness_version,
       count(*) FILTER (WHERE complete) AS trials, count(*) FILTER (WHERE NOT complete) AS incomplete,
       count(*) FILTER (WHERE valid) AS valid, count(*) FILTER (WHERE solved) AS accepted,
       count(*) FILTER (WHERE outcome = 'budget_exhausted') AS budget_exhausted,
       count(DISTINCT case_id) FILTER (WHERE valid) AS tasks,
       count(cost_usd) FILTER (WHERE complete) AS cost_known,
       (sum(cost_usd::DECIMAL(38, 12)) FILTER (WHERE complete))::DOUBLE AS cost_sum
FROM {rel} WHERE config_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY config_id
"""  # noqa: S608 -- {rel} is an internal relation name


@dataclass
class BudgetCurve(RowsResult):
    """One row per sweep point (in budget order), and ``steps``: adjacent points paired."""

    steps: list[dict[str, Any]] = field(default_factory=list)

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "sweep": "String", "sweep_budget": "String", "budget": "Float64",
        "trials": "Int64", "incomplete": "Int64", "valid": "Int64", "accepted": "Int64",
        "rate": "Float64", "ci_low": "Float64", "ci_high": "Float64", "budget_exhausted": "Int64",
        "tasks": "Int64", "cost_usd": "Float64", "cost_coverage": "Float64", "cost_per_accepted": "Float64"}

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return {**super().as_dict(), "steps": clean(self.steps)}


def _point(rec: dict[str, Any], sweep: str, budget: str, value: float) -> dict[str, Any]:
    valid, accepted, trials = rec["valid"], rec["accepted"], rec["trials"]
    lo, hi = stats.wilson(accepted, valid)
    cost = rec["cost_sum"] if trials and rec["cost_known"] == trials else None
    per_accepted = None if cost is None else cost / accepted if accepted else float("inf")
    return {**{k: rec[k] for k in CONFIG_KEYS}, "sweep": sweep, "sweep_budget": budget, "budget": value,
            "trials": trials, "incomplete": rec["incomplete"], "valid": valid, "accepted": accepted,
            "rate": accepted / valid if valid else None, "ci_low": lo, "ci_high": hi,
            "budget_exhausted": rec["budget_exhausted"], "tasks": rec["tasks"], "cost_usd": cost,
            "cost_coverage": rec["cost_known"] / trials if trials else None, "cost_per_accepted": per_accepted}


def _steps(con: duckdb.DuckDBPyConnection, rel: str, points: list[dict[str, Any]], seed: int) -> list[dict]:
    """Each adjacent pair of one sweep's points: ``compare``'s paired comparison, Holm over the sweep."""
    out = []
    for low, high in zip(points, points[1:], strict=False):
        (c,) = compare_relation(con, rel, ConfigRef.of(low), [ConfigRef.of(high)], "only", seed=seed)
        st, pairs = c.sign_test, c.main.pairs
        out.append({"sweep": low["sweep"], "from_budget": low["budget"], "to_budget": high["budget"],
                    "from_config": low["config_id"], "to_config": high["config_id"],
                    "tasks": c.main.tasks.common, "pairs": pairs.pairs, "gained": pairs.candidate_only,
                    "lost": pairs.baseline_only, "improvements": st.improvements, "regressions": st.regressions,
                    "ties": st.ties, "n": st.n, "p": st.p, "mid_p": st.mid_p, "p_reachable": st.p_reachable})
    for step, p in zip(out, stats.holm([s["p"] for s in out]), strict=True):
        step["p_holm"] = p
    return out


def _warnings(rows: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[str]:
    out = []
    seen: dict[tuple[str, float], list[str]] = {}
    for r in rows:
        seen.setdefault((r["sweep"], r["budget"]), []).append(r["config_id"])
    for (sweep, value), ids in seen.items():
        if len(ids) > 1:
            out.append(f"sweep {sweep} has {len(ids)} configurations at budget {value:g} "
                       f"({', '.join(i[:12] for i in ids)}): the agent changed between runs")
    for s in steps:
        if not s["p_reachable"]:
            out.append(f"sweep {s['sweep']} {s['from_budget']:g} → {s['to_budget']:g}: sign test on N = {s['n']} "
                       "untied task(s): p < 0.05 unreachable with N < 6; descriptive only")
    return out


def budget_curve(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                 seed: int = SEED) -> BudgetCurve:
    """Every budget sweep in the selection: its points in budget order, and the paired steps."""
    filters = scope.resolve(con, filters)
    sql, params = trials_sql(filters, columns=_COLS, with_rep=True)
    rel = f"sweep_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(f"CREATE TEMP TABLE {rel} AS {sql}", params)
    try:
        found = con.execute(_POINTS_SQL.format(rel=rel)).fetchall()
        if not found:
            raise AnalysisError(f"{NO_SWEEP}: a sweep is a variant whose max_cost_usd or timeout_seconds lists "
                                "several values (docs/runner.md, 'Budgets and budget sweeps')")
        changed = evaluator_changes(con, rel, filters.allow_evaluator_change)
        ids = [r[3] for r in found]
        recs = {r["config_id"]: r for r in _records(con, _STATS_SQL.format(rel=rel), [ids])}
        rows = [_point(recs[cid], sweep, budget, value) for sweep, budget, value, cid in found]
        steps: list[dict[str, Any]] = []
        for sweep in dict.fromkeys(r["sweep"] for r in rows):
            steps += _steps(con, rel, [r for r in rows if r["sweep"] == sweep], seed)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")
    return BudgetCurve(rows, [], [*changed, *_warnings(rows, steps)], steps=steps)


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
