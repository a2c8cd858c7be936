"""Paired differences of wall time, cost, tokens and steps for one comparison block.

Over the (task, repetition) pairs where both sides were accepted (docs/analysis.md: duration
and cost differences only there), and for each metric only the pairs where both sides
know it (unknown is not zero). Cost differences additionally need full cost coverage on
both sides, as ``CostDiff`` does. The mean difference gets a seeded task-cluster
bootstrap interval (``analysis.resampling``); DuckDB reduces the pairs to per-task sums
and counts, so only one row per task reaches Python.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from analysis.comparison import CostDiff, Deltas, PairedDelta
from analysis.resampling import RESAMPLES, SEED, ratio_intervals

if TYPE_CHECKING:
    import duckdb

METRICS = ("duration_s", "cost_usd", "tokens", "steps")

PAIRS_SQL = """,
d AS (
  SELECT b.case_id,
         c.duration_s - b.duration_s AS d_duration_s, b.duration_s AS b_duration_s,
         c.duration_s AS c_duration_s,
         c.cost_usd - b.cost_usd AS d_cost_usd, b.cost_usd AS b_cost_usd,
         c.cost_usd AS c_cost_usd,
         (c.input_tokens + c.output_tokens) - (b.input_tokens + b.output_tokens) AS d_tokens,
         b.input_tokens + b.output_tokens AS b_tokens, c.input_tokens + c.output_tokens AS c_tokens,
         (c.steps - b.steps)::DOUBLE AS d_steps, b.steps::DOUBLE AS b_steps,
         c.steps::DOUBLE AS c_steps
  FROM s b JOIN s c ON b.case_id = c.case_id AND b.rep = c.rep
  WHERE NOT b.is_c AND c.is_c AND b.complete AND c.complete
    AND b.valid AND c.valid AND b.accepted AND c.accepted
)"""
"""Appended to the comparison's ``_SIDES`` CTE: every pair both accepted, per metric."""

_PER_TASK = ", ".join(f"count(d_{m}), fsum(d_{m})" for m in METRICS)
_MEDIANS = ", ".join(f"median(d_{m}), median(b_{m}), median(c_{m})" for m in METRICS)
PER_TASK_SQL = ("SELECT case_id, " + _PER_TASK  # noqa: S608
                + " FROM cmp_deltas d GROUP BY case_id ORDER BY case_id")
MEDIANS_SQL = "SELECT " + _MEDIANS + " FROM cmp_deltas d"  # noqa: S608


def deltas(con: duckdb.DuckDBPyConnection, sides_sql: str, params: list,
           cost: CostDiff, seed: int = SEED, resamples: int = RESAMPLES) -> Deltas:
    """The four paired differences of one block (``sides_sql`` is the block's ``WITH s``)."""
    con.execute("CREATE OR REPLACE TEMP TABLE cmp_deltas AS " + sides_sql + PAIRS_SQL
                + "\nSELECT * FROM d", params)
    try:
        per_task = con.execute(PER_TASK_SQL).fetchall()
        medians = con.execute(MEDIANS_SQL).fetchall()[0]
    finally:
        con.execute("DROP TABLE IF EXISTS cmp_deltas")
    counts = [[float(r[1 + 2 * i]) for r in per_task] for i in range(len(METRICS))]
    sums = [[float(r[2 + 2 * i] or 0.0) for r in per_task] for i in range(len(METRICS))]
    intervals = ratio_intervals(sums, counts, seed=seed, resamples=resamples)
    out = {}
    for i, metric in enumerate(METRICS):
        n = int(sum(counts[i]))
        if metric == "cost_usd" and cost.status != "ok":
            out[metric] = PairedDelta(metric, n, status=cost.status)
            continue
        if n == 0:
            out[metric] = PairedDelta(metric, 0, status="no pair both accepted with it known")
            continue
        d_med, b_med, c_med = medians[3 * i:3 * i + 3]
        lo, hi = intervals[i]
        out[metric] = PairedDelta(metric, n, math.fsum(sums[i]) / n, lo, hi, d_med, b_med, c_med)
    return Deltas(out["duration_s"], out["cost_usd"], out["tokens"], out["steps"],
                  resamples, seed)
