"""The per-configuration table: trial-level Wilson, task-level clustered mean, cost, latency.

Aggregation runs in DuckDB SQL (fast at millions of trials, no DataFrame library needed
on the CLI path); the result is small and becomes a polars DataFrame on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis import stats
from analysis.data import _COLUMNS, CONFIG_KEYS, NAME_KEYS, TRIALS, config_names
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from analysis.flags import flag_counts

if TYPE_CHECKING:
    import duckdb
    import polars as pl

SMALL_TASKS = 10

ROW_KEYS = [
    *CONFIG_KEYS, "trials", "incomplete", "valid", "solved", "rate", "ci_low", "ci_high",
    "infra", "invalid", "tasks", "task_mean", "task_ci_low", "task_ci_high", "med_steps",
    "med_tokens", "med_duration_s", "cost_usd", "cost_known", "cost_coverage",
    "cost_per_solved", "cost_p50", "cost_p90", "cost_p95", "latency_p50", "latency_p90",
    "latency_p95", "simulated", "flags", "flagged_trials",
]


@dataclass
class Summary:
    """Rows (one per configuration [× slice]) plus what was left out and why."""

    rows: list[dict]
    by: list[str] = field(default_factory=list)
    excluded_cases: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def table(self) -> pl.DataFrame:
        import polars as pl

        keys = [*CONFIG_KEYS, *self.by, *ROW_KEYS[len(CONFIG_KEYS):]]
        return pl.DataFrame(self.rows, schema=None, orient="row", infer_schema_length=None
                            ).select(keys) if self.rows else pl.DataFrame(
                                {k: [] for k in keys})

    def as_dict(self) -> dict:
        from analysis.jsonout import clean

        return clean({"rows": self.rows, "excluded_cases": self.excluded_cases,
                      "warnings": self.warnings})

    def records(self) -> list[dict]:
        """Flat rows for CSV (the JSON rows)."""
        return self.as_dict()["rows"]


_TASK_SQL = """
CREATE OR REPLACE TEMP TABLE summary_task AS
SELECT k.*, coalesce({benchmark}r.manifest_id, k.run_id) AS universe
FROM ({counts}) k{cases}
LEFT JOIN runs r ON r.run_id = k.run_id
"""
_CASES_JOIN = "\nLEFT JOIN cases c ON c.run_id = k.run_id AND c.case_id = k.case_id"
"""Needed for the universe only when some case carries a ``benchmark`` label."""
_COUNTS_FROM_ROLLUP = """
  SELECT t.run_id, t.config_id{by_sel}, t.case_id, t.complete AS n_complete,
         t.trials - t.complete AS n_incomplete, t.valid AS n_valid, t.solved AS n_solved,
         t.infra AS n_infra, t.invalid AS n_invalid, t.cost_usd AS cost_sum, t.cost_known
  FROM task_rollup t{joins}
  WHERE {where}"""
_COUNTS_FROM_TRIALS = """
  SELECT t.run_id, t.config_id{by_sel}, t.case_id,
         count(*) FILTER (WHERE t.complete) AS n_complete,
         count(*) FILTER (WHERE NOT t.complete) AS n_incomplete,
         count(*) FILTER (WHERE t.valid) AS n_valid,
         count(*) FILTER (WHERE t.solved) AS n_solved,
         count(*) FILTER (WHERE t.complete AND t.outcome = 'infra_error') AS n_infra,
         count(*) FILTER (WHERE t.complete AND t.outcome = 'invalid') AS n_invalid,
         fsum(t.cost_usd) FILTER (WHERE t.complete) AS cost_sum,
         count(t.cost_usd) FILTER (WHERE t.complete) AS cost_known
  FROM {trials} t{joins}
  WHERE {where}
  GROUP BY ALL"""
"""One row per (run, configuration, [slice,] case) with its trial counts and task universe.

Counts come from the ``task_rollup`` table (built when trials are written), or from
the trials themselves when a filter needs a trial's own start time (--since/--until).
"""

_UNIVERSES_SQL = """
SELECT universe, config_id, min(run_id) AS first_run, max(run_id) AS last_run,
       count(*) FILTER (WHERE n_complete > 0) AS done
FROM summary_task GROUP BY universe, config_id
"""
"""Per task universe and configuration: its runs and finished tasks. With one run per
universe, task rows are already one per (configuration, task)."""

_FEWEST_CONFIGS_SQL = """
SELECT universe, min(k) FROM (
  SELECT universe, case_id, count(*) AS k FROM summary_task WHERE n_complete > 0 GROUP BY ALL
) GROUP BY universe
"""
"""One run per universe: the fewest configurations that finished any one task."""

_OUTSIDE_SQL = """
CREATE OR REPLACE TEMP TABLE summary_outside AS
WITH done AS (SELECT DISTINCT config_id, universe, case_id FROM summary_task WHERE n_complete > 0),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM done GROUP BY universe),
cnt AS (SELECT universe, case_id, count(*) AS k FROM done GROUP BY universe, case_id)
SELECT DISTINCT s.run_id, s.case_id, s.universe
FROM summary_task s
JOIN cnt ON cnt.universe = s.universe AND cnt.case_id = s.case_id
JOIN ucfg ON ucfg.universe = s.universe
WHERE cnt.k < ucfg.n
"""
"""(run, case) pairs whose task is not done by every configuration of its universe."""

_OUTSIDE_ONE_RUN_SQL = """
CREATE OR REPLACE TEMP TABLE summary_outside AS
WITH ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM summary_task
              WHERE n_complete > 0 GROUP BY universe)
SELECT any_value(s.run_id) AS run_id, s.case_id, s.universe
FROM summary_task s JOIN ucfg USING (universe)
WHERE s.n_complete > 0
GROUP BY s.universe, s.case_id
HAVING count(*) < any_value(ucfg.n)
"""
"""The same when every universe is one run: a task's rows are one per configuration."""

_PER_CONFIG = """
       count(p) AS tasks, avg(p) AS task_mean, stddev_samp(p) AS task_sd,
       sum(n_incomplete) AS incomplete,
       sum(n_complete) FILTER (WHERE common) AS trials,
       sum(n_valid) FILTER (WHERE common) AS valid,
       sum(n_solved) FILTER (WHERE common) AS solved,
       sum(n_infra) FILTER (WHERE common) AS infra,
       sum(n_invalid) FILTER (WHERE common) AS invalid,
       fsum(cost_sum) FILTER (WHERE common) AS cost_sum,
       sum(cost_known) FILTER (WHERE common) AS cost_known"""
"""Per configuration [and slice]: task-level mean and spread, incomplete trials, and the
trial counts and known cost over common tasks (what the trial-level columns need)."""

_TASKS_PER_CONFIG_SQL = """
SELECT config_id{by_cols},{per_config}
FROM (
  SELECT config_id{by_cols}, universe, case_id, NOT bool_or(outside) AS common,
         sum(n_incomplete) AS n_incomplete, sum(n_complete) AS n_complete,
         sum(n_valid) AS n_valid, sum(n_solved) AS n_solved, sum(n_infra) AS n_infra,
         sum(n_invalid) AS n_invalid, fsum(cost_sum) AS cost_sum,
         sum(cost_known) AS cost_known,
         CASE WHEN NOT bool_or(outside) AND sum(n_valid) > 0
              THEN sum(n_solved) / sum(n_valid) END AS p
  FROM (SELECT s.*, o.run_id IS NOT NULL AS outside
        FROM summary_task s
        LEFT JOIN summary_outside o ON o.run_id = s.run_id AND o.case_id = s.case_id)
  GROUP BY ALL
)
GROUP BY ALL
"""

_TASKS_PER_CONFIG_ONE_RUN_SQL = """
SELECT config_id{by_cols},{per_config}
FROM (
  SELECT *, CASE WHEN common AND n_valid > 0 THEN n_solved / n_valid END AS p
  FROM (SELECT *, {common} AS common FROM summary_task s)
)
GROUP BY ALL
"""
"""The same when every universe is one run (each row is one task already)."""

_COMMON = """NOT EXISTS (
           SELECT 1 FROM summary_outside o WHERE o.run_id = s.run_id AND o.case_id = s.case_id)"""

_EXCLUDED_SQL = """
SELECT s.config_id, list(DISTINCT s.case_id ORDER BY s.case_id) AS case_ids
FROM summary_task s SEMI JOIN summary_outside o ON o.run_id = s.run_id AND o.case_id = s.case_id
WHERE s.n_complete > 0
GROUP BY s.config_id
"""



def _holistic_sql(by: list[str], where: str, joins: str, exclude: bool) -> str:
    """The one pass over trial rows: medians and quantiles need the values themselves."""
    by_sel = "".join(f",\n    {_COLUMNS[b]} AS {b}" for b in by)  # fixed column map
    outside = """
  AND NOT EXISTS (SELECT 1 FROM summary_outside o
                  WHERE o.run_id = t.run_id AND o.case_id = t.case_id)""" if exclude else ""
    return f"""
SELECT
    t.config_id{by_sel},
    median(t.steps) FILTER (WHERE t.valid) AS med_steps,
    median(t.input_tokens + t.output_tokens) FILTER (WHERE t.valid) AS med_tokens,
    quantile_cont(t.cost_usd, [0.5, 0.9, 0.95]) AS cost_q,
    quantile_cont(t.duration_s, [0.5, 0.9, 0.95]) AS lat_q,
    sum(t.patch_flags) AS flags,
    count(*) FILTER (WHERE t.patch_flags > 0) AS flagged
FROM {TRIALS} t{joins}
WHERE t.complete AND {where}{outside}
GROUP BY ALL
"""  # noqa: S608 -- fixed fragments only; values are parameters


_HOLISTIC_FROM_ROLLUP_SQL = """
SELECT run_id, config_id, med_steps, med_tokens,
       [cost_p50, cost_p90, cost_p95] AS cost_q,
       [latency_p50, latency_p90, latency_p95] AS lat_q
FROM config_rollup
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
"""
"""The same medians and quantiles, stored per (run, configuration) when trials are written:
exact when the summary's trials are each configuration's complete trials of one run."""


def _row(rec: dict) -> dict:
    valid, solved = rec["valid"], rec["solved"]
    lo, hi = stats.wilson(solved, valid)
    trials, known = rec["trials"], rec["cost_known"]
    cost = rec["cost_sum"] if known == trials else None
    if cost is None:
        per_solved = None
    else:
        per_solved = cost / solved if solved else float("inf")
    tasks, tmean, tsd = rec["tasks"], rec["task_mean"], rec["task_sd"]
    tlo = thi = None
    if tasks >= 2 and tsd is not None:
        half = stats.t_crit(tasks - 1) * tsd / tasks**0.5
        tlo, thi = tmean - half, tmean + half
    cq = rec.get("cost_q") if known else None
    lq = rec.get("lat_q")
    return {
        "trials": trials, "incomplete": rec["incomplete"], "valid": valid, "solved": solved,
        "rate": solved / valid if valid else None, "ci_low": lo, "ci_high": hi,
        "infra": rec["infra"], "invalid": rec["invalid"], "tasks": tasks,
        "task_mean": tmean, "task_ci_low": tlo, "task_ci_high": thi,
        "med_steps": rec.get("med_steps"), "med_tokens": rec.get("med_tokens"),
        # The median wall time is the p50 of all complete trials (docs/analysis.md).
        "med_duration_s": lq[0] if lq else None, "cost_usd": cost, "cost_known": known,
        "cost_coverage": known / trials if trials else None, "cost_per_solved": per_solved,
        "cost_p50": cq[0] if cq else None, "cost_p90": cq[1] if cq else None,
        "cost_p95": cq[2] if cq else None,
        "latency_p50": lq[0] if lq else None, "latency_p90": lq[1] if lq else None,
        "latency_p95": lq[2] if lq else None, "simulated": bool(rec["simulated"]),
        # Patch-inspection flags over the same trials; null when none was inspected.
        "flags": None if rec.get("flags") is None else int(rec["flags"]),
        "flagged_trials": None if rec.get("flags") is None else int(rec["flagged"]),
    }


@dataclass
class _Staged:
    """What staging the task rows found out about the selection's shape."""

    one_run: bool  # every task universe is one run
    n_outside: int  # (run, case) pairs outside the common-task set
    config_runs: dict[str, set[str]]  # config_id -> runs it appears in


def _stage(con: duckdb.DuckDBPyConnection, counts: str, params: list, labelled: bool
           ) -> _Staged:
    """Temp tables ``summary_task`` (task rows with their universe) and, when some task is
    not done by every configuration of its universe, ``summary_outside``."""
    con.execute(_TASK_SQL.format(counts=counts, benchmark="c.benchmark, " if labelled else "",
                                 cases=_CASES_JOIN if labelled else ""), params)
    runs: dict[str, set[str]] = {}
    configs: dict[str, int] = {}
    config_runs: dict[str, set[str]] = {}
    for universe, cid, first, last, done in con.execute(_UNIVERSES_SQL).fetchall():
        runs.setdefault(universe, set()).update({first, last})
        config_runs.setdefault(cid, set()).update({first, last})
        configs[universe] = configs.get(universe, 0) + (done > 0)
    one_run = all(len(r) == 1 for r in runs.values())
    if one_run and all(k == configs[u] for u, k in con.execute(_FEWEST_CONFIGS_SQL).fetchall()):
        return _Staged(one_run, 0, config_runs)  # every task done by every configuration
    con.execute(_OUTSIDE_ONE_RUN_SQL if one_run else _OUTSIDE_SQL)
    n_outside = con.execute("SELECT count(*) FROM summary_outside").fetchall()[0][0]
    return _Staged(one_run, n_outside, config_runs)


def _per_config(con: duckdb.DuckDBPyConnection, st: _Staged, by_list: str) -> list[dict]:
    """Per configuration [× slice] with a complete trial on a common task: the counts."""
    per_config = (_TASKS_PER_CONFIG_ONE_RUN_SQL.format(
        by_cols=by_list, per_config=_PER_CONFIG, common=_COMMON if st.n_outside else "TRUE")
        if st.one_run else _TASKS_PER_CONFIG_SQL.format(by_cols=by_list, per_config=_PER_CONFIG))
    cur = con.execute(per_config)
    cols = [d[0] for d in cur.description]
    return [rec for rec in (dict(zip(cols, r, strict=True)) for r in cur.fetchall())
            if rec["trials"]]


def _holistic(con: duckdb.DuckDBPyConnection, st: _Staged, filters: Filters, by_cols: list[str],
              joins: str, from_trials: bool) -> dict[tuple, dict]:
    """Medians, quantiles and flags per configuration [× slice]: from ``config_rollup`` when
    the selection is whole runs (one per configuration, every task common), else one pass
    over the trial rows."""
    whole_runs = not (by_cols or filters.needs_cases or filters.needs_runs or st.n_outside
                      or from_trials) and all(len(r) == 1 for r in st.config_runs.values())
    if whole_runs:
        pairs = {(next(iter(rs)), cid) for cid, rs in st.config_runs.items()}
        cur = con.execute(_HOLISTIC_FROM_ROLLUP_SQL, [sorted({r for r, _ in pairs})])
        out: dict[tuple, dict] = {
            r[1:2]: dict(zip(["med_steps", "med_tokens", "cost_q", "lat_q"], r[2:], strict=True))
            for r in cur.fetchall() if r[:2] in pairs}
        for cid, c in flag_counts(con, filters).items():  # whole runs: the same trials
            out.setdefault((cid,), {}).update(flags=c["flags"], flagged=c["flagged"])
        return out
    where, params = filters.where()
    cur = con.execute(_holistic_sql(by_cols, where, joins, bool(st.n_outside)), params)
    hcols = [d[0] for d in cur.description][1 + len(by_cols):]
    return {r[:1 + len(by_cols)]: dict(zip(hcols, r[1 + len(by_cols):], strict=True))
            for r in cur.fetchall()}


def _warnings(rows: list[dict], excluded: list[dict]) -> list[str]:
    out = [f"{ex['model']}/{ex['harness']} {ex['harness_version']} ({ex['config_id'][:12]}): "
           f"{len(ex['case_ids'])} task(s) outside the common set excluded" for ex in excluded]
    for row in rows:
        if row["tasks"] < SMALL_TASKS:
            out.append(f"{row['config_id'][:12]} ({row['variant'] or row['model']}): "
                       f"{row['tasks']} task(s): descriptive sample, intervals are rough")
        if row["cost_known"] < row["trials"]:
            out.append(f"{row['config_id'][:12]}: cost known for {row['cost_known']}/"
                       f"{row['trials']} trials; total cost and cost per solved are unknown")
    return out


def _joins(filters: Filters, by_cols: list[str]) -> str:
    joins = ""
    if by_cols or filters.needs_cases:
        joins += "\n  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id"
    if filters.needs_runs:
        joins += "\n  LEFT JOIN runs r ON r.run_id = t.run_id"
    return joins


def summarize(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
              by: list[str] | str | None = None, full: bool = True,
              from_trials: bool = False) -> Summary:
    """Per-configuration summary on common tasks (see docs/analysis.md).

    Tasks are common within a *task universe* — the case's benchmark label, else the
    run's manifest id, else the run — so configurations from different sources (our
    runs, a runs-jsonl export, an Inspect log) sit side by side, each on the tasks it
    shares with the configurations of its own benchmark. ``full=False`` leaves the
    medians and quantiles null (cheaper; for callers that need only counts and cost).
    ``from_trials`` counts tasks from the trials instead of ``task_rollup`` and computes the
    medians from them instead of ``config_rollup`` (same result; the tests compare the two).
    """
    filters = filters or Filters()
    by_cols = check_by(by)
    where, params = filters.where()
    joins = _joins(filters, by_cols)
    by_sel = "".join(f",\n    {_COLUMNS[b]} AS {b}" for b in by_cols)  # fixed column map
    counts = _COUNTS_FROM_TRIALS if filters.needs_runs or from_trials else _COUNTS_FROM_ROLLUP
    try:
        labelled = con.execute("SELECT count(benchmark) FROM cases").fetchall()[0][0]
        st = _stage(con, counts.format(by_sel=by_sel, joins=joins, where=where, trials=TRIALS),
                    params, bool(labelled))
        recs = _per_config(con, st, "".join(f", {b}" for b in by_cols))
        names = config_names(con, "SELECT DISTINCT run_id, config_id FROM summary_task")
        excluded_ids = dict(con.execute(_EXCLUDED_SQL).fetchall()) if st.n_outside else {}
        holistic = _holistic(con, st, filters, by_cols, joins, from_trials) if full else {}
    finally:
        con.execute("DROP TABLE IF EXISTS summary_task")
        con.execute("DROP TABLE IF EXISTS summary_outside")
    excluded = [{"config_id": cid, **{k: names[cid][k] for k in CONFIG_KEYS[1:]},
                 "case_ids": excluded_ids[cid]} for cid in sorted(excluded_ids)]
    for rec in recs:
        rec["incomplete"] = int(rec["incomplete"] or 0)
        rec.update(holistic.get(tuple(rec[k] for k in ["config_id", *by_cols]), {}))
        rec.update({k: names[rec["config_id"]][k] for k in NAME_KEYS})
    recs = sorted((rec for rec in recs if rec["config_id"] is not None),
                  key=lambda r: (*((r[k] is None, r[k] or "") for k in CONFIG_KEYS[2:]),
                                 r["config_id"], *((r[b] is None, r[b] or "") for b in by_cols)))
    if not recs:
        raise AnalysisError(
            f"no complete trials match the filters {filters.as_dict()}; check "
            "--run/--label/--since or ingest a run first"
        )
    rows = [{**{k: rec[k] for k in CONFIG_KEYS}, **{b: rec[b] for b in by_cols}, **_row(rec)}
            for rec in recs]
    return Summary(rows=rows, by=by_cols, excluded_cases=excluded,
                   warnings=_warnings(rows, excluded))
