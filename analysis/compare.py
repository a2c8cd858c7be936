"""Paired comparison of candidates against a baseline (STATISTICS.md, "Paired comparison").

One engine for every caller: ``compare`` (warehouse), ``compare_frame`` (a trial frame,
e.g. a runner report.json) and the period comparison (``analysis.period``) all run the
same SQL blocks here, so the CLI, the report and its headline agree by construction.
Which configurations are baselines and candidates is ``analysis.eligibility``'s rule.
Result types are in ``analysis.comparison``.
"""

from __future__ import annotations

import math
import statistics
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis import stats
from analysis.comparison import (
    Block,
    Comparison,
    ComparisonSet,
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
from analysis.data import config_table, resolve_config
from analysis.eligibility import Eligibility, default_baseline, eligibility_from_kinds
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from warehouse.rules import trial_status

if TYPE_CHECKING:
    import duckdb
    import polars as pl

__all__ = ["Comparison", "ComparisonSet", "compare", "compare_frame", "compare_report",
           "compare_relation"]


def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: Sequence[str] | None = None) -> ComparisonSet:
    """The same comparison straight from a runner ``report.json`` (``analysis.runreport``)."""
    from analysis.runreport import compare_report as from_report

    return from_report(report_json_path, baseline, candidates)

# Per-trial columns a comparison reads (names come from the configuration table).
_COLS = ["config_id", "case_id", "outcome", "complete", "valid", "solved", "holdout",
         "duration_s", "cost_usd"]


# One comparison block over the trial relation ``{rel}`` (config_id, case_id, rep, valid,
# solved, complete, holdout, duration_s, cost_usd): baseline ? vs candidate ?, holdout
# filter. Only per-task and per-pair aggregates leave DuckDB.
_SIDES = """
WITH s AS (
  SELECT config_id = ? AS is_c, case_id, rep, complete, duration_s, cost_usd,
         valid, solved AS accepted
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
           holdout: list[bool], slice_: Mapping[str, Any] | None = None) -> Block:
    """Every statistic of one comparison over one set of tasks (main or holdout)."""
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
    return Block(
        tasks=TaskSet(common=len(tasks), excluded=[r[1] for r in rows if r[0] == "excluded"]),
        pairs=PairCounts(n_pairs, cand_only, base_only, both, neither, excluded, incomplete),
        sign_test=sign, paired_difference=PairedDifference(**diff),
        consistency=ConsistencyPair(cb, cc, comparable, note),
        duration=DurationDiff(acc_pairs, math.fsum(dur) / len(dur) if dur else None,
                              statistics.median(dur) if dur else None),
        cost=_cost(rows, acc_pairs, cost_d), directions=directions)


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
                     slice_: Mapping[str, Any] | None = None) -> list[Comparison]:
    """Every candidate against the baseline over the trial relation ``rel`` (see
    ``_SIDES``), optionally within one slice; Holm adjusts over the candidates given."""
    sl, sl_params = _slice_pred(slice_)
    out = []
    for cand in cands:
        ids = (base.config_id, cand.config_id)
        hold = None
        if holdout_mode == "only":
            main = _block(con, rel, *ids, [False, True], slice_)
        else:
            main = _block(con, rel, *ids, [False], slice_)
            n_hold = con.execute(
                f"SELECT count(*) FROM {rel} WHERE config_id IN (?, ?) "  # noqa: S608
                f"AND coalesce(holdout, FALSE){sl}", [*ids, *sl_params]).fetchall()[0][0]
            if n_hold:
                hold = _block(con, rel, *ids, [True], slice_)
        out.append(Comparison(baseline=base, candidate=cand, main=main, holdout=hold,
                              warnings=_warnings(main),
                              slice=dict(slice_) if slice_ is not None else None))
    adj = stats.holm([c.sign_test.p for c in out])
    for c, p in zip(out, adj, strict=True):
        c.sign_test.p_holm = p
    return out


def _sides(configs: list[dict], roles: Mapping[str, Eligibility], baseline: str | None,
           candidates: Sequence[str] | None, default: str | None
           ) -> tuple[ConfigRef, list[ConfigRef], list[ConfigRef]]:
    """Resolve baseline, candidates (the Holm family) and the baselines left out of it."""
    if len(configs) < 2:
        raise AnalysisError("only one configuration in the selected trials: nothing to compare")

    def is_baseline(cid: str) -> bool:
        return cid in roles and roles[cid].is_baseline

    if baseline:
        base = ConfigRef.of(resolve_config(configs, baseline))
    else:
        first = default or next((c["config_id"] for c in configs
                                 if not is_baseline(c["config_id"])), configs[0]["config_id"])
        base = ConfigRef.of(resolve_config(configs, first))
    if candidates:
        cands = [ConfigRef.of(resolve_config(configs, name)) for name in candidates]
        for c in cands:
            if is_baseline(c.config_id):
                raise AnalysisError(
                    f"{c.variant or c.config_id[:12]} is a baseline (agent kind "
                    f"{roles[c.config_id].agent_kind}): a reference point, never a candidate; "
                    "name it with --baseline to compare against it")
    else:
        cands = [ConfigRef.of(r) for r in configs if not is_baseline(r["config_id"])]
    cands = [c for c in cands if c.config_id != base.config_id]
    excluded = [ConfigRef.of(r) for r in configs
                if is_baseline(r["config_id"]) and r["config_id"] != base.config_id]
    if not cands:
        if candidates:
            raise AnalysisError("the candidate is the baseline; name a different --candidate")
        raise AnalysisError("no candidate: every other configuration is a baseline (null or "
                            "reference agent), and baselines are never candidates")
    return base, cands, excluded


def _run(con: duckdb.DuckDBPyConnection, rel: str, base: ConfigRef, cands: list[ConfigRef],
         holdout_mode: str, by_cols: list[str]) -> list[Comparison]:
    if not by_cols:
        return compare_relation(con, rel, base, cands, holdout_mode)
    cols = ", ".join(by_cols)  # from SLICE_COLUMNS (check_by)
    present: dict[tuple, set[str]] = {}
    for *values, cid in con.execute(
            f"SELECT DISTINCT {cols}, config_id FROM {rel} "  # noqa: S608
            f"ORDER BY {cols} NULLS LAST").fetchall():
        present.setdefault(tuple(values), set()).add(cid)
    out: list[Comparison] = []
    for key, cids in present.items():
        if base.config_id not in cids:
            continue
        here = [c for c in cands if c.config_id in cids]
        if here:
            out.extend(compare_relation(con, rel, base, here, holdout_mode,
                                        dict(zip(by_cols, key, strict=True))))
    if not out:
        raise AnalysisError(f"no {' × '.join(by_cols)} slice holds trials of both the baseline "
                            "and a candidate")
    return out


def compare(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
            baseline: str | None = None, candidates: Sequence[str] | None = None,
            by: list[str] | str | None = None) -> ComparisonSet:
    """Candidates against a baseline over the warehouse.

    Default baseline: the manifest's first non-baseline variant; default candidates:
    every configuration that is not a baseline (``analysis.eligibility``). The compared
    configurations' trials (with ``rep``) are staged once in a temporary table; every
    block is aggregated in DuckDB and only per-task rows reach Python. With ``by``, each
    slice value gets its own comparisons (``Comparison.slice``), each equal to an
    unsliced comparison of that slice's trials; slices where the baseline or a candidate
    has no trial are skipped, and Holm adjusts within a slice.
    """
    from analysis.data import config_list, config_rows, trials_sql

    filters = filters or Filters()
    cfg_rows = config_rows(con, filters)
    if not cfg_rows:
        raise AnalysisError(f"no trials match the filters {filters.as_dict()}")
    table = config_list(cfg_rows)
    roles = eligibility_from_kinds({r["config_id"]: r.get("agent_kind") for r in cfg_rows})
    base, cands, excluded = _sides(table, roles, baseline, candidates,
                                   None if baseline else default_baseline(cfg_rows, roles))
    by_cols = check_by(by)
    ids = [base.config_id, *[c.config_id for c in cands]]
    sql, params = trials_sql(filters, columns=[*_COLS, *by_cols], with_rep=True,
                             config_ids=ids)
    rel = f"cmp_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(f"CREATE TEMP TABLE {rel} AS {sql}", params)
    try:
        comps = _run(con, rel, base, cands, filters.holdout, by_cols)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")
    simulated = frozenset(r["config_id"] for r in cfg_rows if r.get("simulated"))
    return ComparisonSet(base, cands, comps, "requested" if baseline else "default", excluded,
                         by_cols, simulated)


_FRAME_COLS = ["config_id", "case_id", "rep", "outcome", "complete", "holdout", "duration_s",
               "cost_usd"]


def compare_frame(df: pl.DataFrame, baseline: str | None = None,
                  candidates: Sequence[str] | None = None, holdout_mode: str = "include"
                  ) -> ComparisonSet:
    """Compare on a trial frame (columns as ``load_trials`` plus ``rep``; ``agent_kind``
    and ``variant_order`` when known). Runs the same SQL as ``compare`` in an in-memory
    DuckDB, through the same valid-trial rule."""
    import duckdb
    import polars as pl

    if df.height == 0:
        raise AnalysisError("no trials to compare; check the filters or the report")
    configs = config_table(df).to_dicts()
    kinds: dict[str, str | None] = dict.fromkeys(df["config_id"].unique().to_list())
    if "agent_kind" in df.columns:
        kinds.update(dict(df.select("config_id", "agent_kind").unique("config_id").iter_rows()))
    roles = eligibility_from_kinds(kinds)
    firsts: list[dict] = []
    if not baseline and "variant_order" in df.columns:
        keep = [c for c in ("config_id", "variant_order", "run_started_at", "run_id")
                if c in df.columns]
        firsts = df.filter(pl.col("variant_order").is_not_null()).select(keep).unique().to_dicts()
    base, cands, excluded = _sides(configs, roles, baseline, candidates,
                                   None if baseline else default_baseline(firsts, roles))
    con = duckdb.connect()
    try:
        # The columns trial_status reads besides the comparison's (a frame has no flags).
        con.register("cmp_source", df.select(_FRAME_COLS).with_columns(
            pl.lit(None, pl.String).alias("source_format"), pl.lit(None, pl.Int32).alias("flags")))
        con.execute(f"CREATE TEMP TABLE cmp_trials AS SELECT * FROM {trial_status('cmp_source')}")  # noqa: S608
        comps = compare_relation(con, "cmp_trials", base, cands, holdout_mode)
    finally:
        con.close()
    simulated = frozenset(df.filter(pl.col("simulated").fill_null(False))["config_id"].to_list()
                          if "simulated" in df.columns else [])
    return ComparisonSet(base, cands, comps, "requested" if baseline else "default", excluded,
                         simulated=simulated)
