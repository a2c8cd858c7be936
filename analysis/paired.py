"""The paired comparison's engine: every statistic of baseline vs candidates over one trial
relation (docs/analysis.md, "compare").

``compare_relation`` runs the same SQL blocks for every caller: ``analysis.compare.compare``
(a staged selection of the warehouse), ``analysis.runreport.compare_frame`` (a trial frame,
e.g. a runner report.json) and the period comparison (``analysis.period``: a configuration's
two windows as the two sides), so the CLI, the report and its headline agree by construction.
It lives below all three, so none of them imports another to reach it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from analysis import stats
from analysis.comparison import (
    Block,
    Comparison,
    ConfigRef,
    ConsistencyPair,
    CostDiff,
    Direction,
    DurationDiff,
    PairCounts,
    PairedDifference,
    SideConsistency,
    SignTest,
    TaskSet,
)
from analysis.deltas import deltas as paired_deltas
from analysis.resampling import SEED

if TYPE_CHECKING:
    import duckdb

# One comparison block over the trial relation ``{rel}`` (config_id, case_id, rep, valid,
# solved, complete, holdout, duration_s, cost_usd): baseline ? vs candidate ?, holdout
# filter. Only per-task and per-pair aggregates leave DuckDB.
_SIDES = """
WITH s AS (
  SELECT config_id = ? AS is_c, case_id, rep, complete, duration_s, cost_usd,
         input_tokens, output_tokens, steps, valid, solved AS accepted
  FROM {rel}
  WHERE config_id IN (?, ?) AND coalesce(holdout, FALSE) IN (SELECT unnest(?::BOOLEAN[])){sl}
)
"""

_PAIRS_SQL = _SIDES + """,
p AS (
  SELECT b.valid AND c.valid AS both_valid, b.accepted AS a_b, c.accepted AS a_c,
         c.duration_s - b.duration_s AS d_dur, c.cost_usd - b.cost_usd AS d_cost
  FROM s b JOIN s c ON b.case_id = c.case_id AND b.rep = c.rep
  WHERE NOT b.is_c AND c.is_c AND b.complete AND c.complete
)
SELECT
  count(*) FILTER (WHERE both_valid) AS pairs,
  count(*) FILTER (WHERE both_valid AND a_c AND NOT a_b) AS candidate_only,
  count(*) FILTER (WHERE both_valid AND a_b AND NOT a_c) AS baseline_only,
  count(*) FILTER (WHERE both_valid AND a_b AND a_c) AS both,
  count(*) FILTER (WHERE both_valid AND NOT a_b AND NOT a_c) AS neither,
  count(*) FILTER (WHERE NOT both_valid) AS excluded,
  (SELECT count(*) FILTER (WHERE NOT complete) FROM s) AS incomplete,
  count(*) FILTER (WHERE both_valid AND a_b AND a_c) AS acc_pairs,
  list(d_dur) FILTER (WHERE both_valid AND a_b AND a_c AND d_dur IS NOT NULL) AS dur,
  list(d_cost) FILTER (WHERE both_valid AND a_b AND a_c) AS cost
FROM p
"""  # noqa: S608 -- {rel} is an internal relation name

_TASKS_SQL = _SIDES + """,
t AS (
  SELECT is_c, case_id, count(*) AS n, count(*) FILTER (WHERE accepted) AS c
  FROM s WHERE valid GROUP BY ALL
),
common AS (
  SELECT b.case_id, b.c AS c_b, b.n AS n_b, c.c AS c_c, c.n AS n_c
  FROM t b JOIN t c ON b.case_id = c.case_id WHERE NOT b.is_c AND c.is_c
),
cov AS (
  SELECT is_c, count(cost_usd) / count(*) AS coverage,
         sum(cost_usd::DECIMAL(38, 12))::DOUBLE AS cost,  -- exact: the same in any order
         count(*) FILTER (WHERE accepted) AS accepted
  FROM s SEMI JOIN common USING (case_id) WHERE complete GROUP BY is_c
)
SELECT 'task' AS kind, case_id, c_b, n_b, c_c, n_c, NULL AS coverage, NULL AS cost FROM common
UNION ALL
SELECT 'excluded', case_id, NULL, NULL, NULL, NULL, NULL, NULL
FROM (SELECT DISTINCT case_id FROM s) ANTI JOIN common USING (case_id)
UNION ALL
SELECT CASE WHEN is_c THEN 'cov_c' ELSE 'cov_b' END, NULL, accepted, NULL, NULL, NULL,
       coverage, cost
FROM cov
ORDER BY kind, case_id
"""  # noqa: S608 -- {rel} is an internal relation name


def _slice_pred(slice_: Mapping[str, Any] | None) -> tuple[str, list[Any]]:
    """``AND col IS NOT DISTINCT FROM ?`` per slice column (names from SLICE_COLUMNS)."""
    if not slice_:
        return "", []
    return ("".join(f"\n    AND {col} IS NOT DISTINCT FROM ?" for col in slice_),
            list(slice_.values()))


def _consistency(tasks: Sequence[tuple], c_i: int, n_i: int) -> SideConsistency:
    ns = [r[n_i] for r in tasks]
    return SideConsistency(tasks=len(tasks), consistent=sum(r[c_i] == r[n_i] for r in tasks),
                           min_n=min(ns) if ns else None, max_n=max(ns) if ns else None)


def _cost(rows: Sequence[tuple], acc_pairs: int, cost_d: list[float] | None) -> CostDiff:
    side = {r[0]: r for r in rows if r[0] in ("cov_b", "cov_c")}
    cov_b = side["cov_b"][6] if "cov_b" in side else None
    cov_c = side["cov_c"][6] if "cov_c" in side else None
    full = cov_b == 1.0 and cov_c == 1.0
    mean_d = total_d = None
    if full and acc_pairs and cost_d:
        # fsum: exactly rounded, so the order DuckDB lists the pairs in never shows
        total_d = math.fsum(cost_d)
        mean_d = total_d / len(cost_d)

    def known(key: str) -> tuple[float | None, int | None]:
        r = side.get(key)
        if r is None:
            return None, None
        return (r[7] if r[6] == 1.0 else None), int(r[2])

    (b_cost, b_acc), (c_cost, c_acc) = known("cov_b"), known("cov_c")
    return CostDiff(pairs_both_accepted=acc_pairs,
                    status="ok" if full else "cost coverage incomplete",
                    mean_diff_usd=mean_d, total_diff_usd=total_d, baseline_coverage=cov_b,
                    candidate_coverage=cov_c, baseline_cost_usd=b_cost,
                    candidate_cost_usd=c_cost, baseline_accepted=b_acc,
                    candidate_accepted=c_acc)


def _block(con: duckdb.DuckDBPyConnection, rel: str, base: str, cand: str,
           holdout: list[bool], slice_: Mapping[str, Any] | None = None,
           seed: int | None = SEED) -> Block:
    """Every statistic of one comparison over one set of tasks (main or holdout);
    ``seed`` None computes no paired deltas (the holdout block reports none)."""
    sl, sl_params = _slice_pred(slice_)
    params = [cand, base, cand, holdout, *sl_params]
    (n_pairs, cand_only, base_only, both, neither, excluded, incomplete, acc_pairs,
     dur, cost_d) = con.execute(_PAIRS_SQL.format(rel=rel, sl=sl), params).fetchall()[0]
    rows = con.execute(_TASKS_SQL.format(rel=rel, sl=sl), params).fetchall()
    tasks = [r for r in rows if r[0] == "task"]
    dirs = [stats.direction(r[4], r[5], r[2], r[3]) for r in tasks]
    directions = [Direction(r[1], r[2], r[3], r[4], r[5], d)  # type: ignore[arg-type]
                  for r, d in zip(tasks, dirs, strict=True)]
    w, l_ = dirs.count("improvement"), dirs.count("regression")
    st = stats.sign_test(w, l_)
    sign = SignTest(improvements=w, regressions=l_, ties=dirs.count("tie"), n=st["n"],
                    p=st["p"], mid_p=st["mid_p"], p_reachable=st["p_reachable"])
    diff = stats.paired_difference([r[4] / r[5] for r in tasks], [r[2] / r[3] for r in tasks])
    cb, cc = _consistency(tasks, 2, 3), _consistency(tasks, 4, 5)
    comparable = (cb.min_n is not None and cb.min_n == cb.max_n == cc.min_n == cc.max_n)
    note = None if comparable else (
        "repetition counts differ between or within the sides: consistency counts are not "
        "comparable")
    dur = dur or []
    cost = _cost(rows, acc_pairs, cost_d)
    return Block(
        tasks=TaskSet(common=len(tasks), excluded=[r[1] for r in rows if r[0] == "excluded"]),
        pairs=PairCounts(n_pairs, cand_only, base_only, both, neither, excluded, incomplete),
        sign_test=sign, paired_difference=PairedDifference(**diff),
        consistency=ConsistencyPair(cb, cc, comparable, note),
        duration=DurationDiff(acc_pairs, math.fsum(dur) / len(dur) if dur else None,
                              statistics.median(dur) if dur else None),
        cost=cost, directions=directions,
        deltas=None if seed is None else paired_deltas(con, _SIDES.format(rel=rel, sl=sl),
                                                       params, cost, seed))


def _warnings(main: Block) -> list[str]:
    out = []
    if not main.sign_test.p_reachable:
        out.append(f"sign test on N = {main.sign_test.n} untied task(s): p < 0.05 unreachable "
                   "with N < 6; descriptive only")
    if main.tasks.excluded:
        out.append(f"{len(main.tasks.excluded)} task(s) without a valid trial on both sides "
                   "excluded")
    if main.cost.status != "ok":
        out.append("cost coverage incomplete: no cost difference reported")
    return out


def compare_relation(con: duckdb.DuckDBPyConnection, rel: str, base: ConfigRef,
                     cands: Sequence[ConfigRef], holdout_mode: str = "include",
                     slice_: Mapping[str, Any] | None = None,
                     seed: int = SEED) -> list[Comparison]:
    """Every candidate against the baseline over the trial relation ``rel`` (see
    ``_SIDES``), optionally within one slice; Holm adjusts over the candidates given.
    ``seed`` seeds the bootstrap of the paired deltas (``analysis.deltas``)."""
    sl, sl_params = _slice_pred(slice_)
    out = []
    for cand in cands:
        ids = (base.config_id, cand.config_id)
        hold = None
        if holdout_mode == "only":
            main = _block(con, rel, *ids, [False, True], slice_, seed)
        else:
            main = _block(con, rel, *ids, [False], slice_, seed)
            n_hold = con.execute(
                f"SELECT count(*) FROM {rel} WHERE config_id IN (?, ?) "  # noqa: S608
                f"AND coalesce(holdout, FALSE){sl}", [*ids, *sl_params]).fetchall()[0][0]
            if n_hold:
                hold = _block(con, rel, *ids, [True], slice_, None)
        out.append(Comparison(baseline=base, candidate=cand, main=main, holdout=hold,
                              warnings=_warnings(main),
                              slice=dict(slice_) if slice_ is not None else None))
    adj = stats.holm([c.sign_test.p for c in out])
    for c, p in zip(out, adj, strict=True):
        c.sign_test.p_holm = p
    return out
