"""The per-configuration table: trial-level Wilson, task-level clustered mean, cost, latency.

Aggregation runs in DuckDB SQL (fast at millions of trials, no DataFrame library needed
on the CLI path); the result is small and becomes a polars DataFrame on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from analysis import stats
from analysis.data import _COLUMNS, CONFIG_KEYS
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by

if TYPE_CHECKING:
    import duckdb
    import polars as pl

SMALL_TASKS = 10

ROW_KEYS = [
    *CONFIG_KEYS, "trials", "incomplete", "valid", "solved", "rate", "ci_low", "ci_high",
    "infra", "invalid", "tasks", "task_mean", "task_ci_low", "task_ci_high", "med_steps",
    "med_tokens", "med_duration_s", "cost_usd", "cost_known", "cost_coverage",
    "cost_per_solved", "cost_p50", "cost_p90", "cost_p95", "latency_p50", "latency_p90",
    "latency_p95", "simulated",
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


def _sql(by: list[str], where: str, full: bool = True) -> str:
    """One statement: scan and join once, aggregate per task, then per configuration.

    ``f`` (the selected trials, joined once) is materialised; ``task`` holds one row per
    (configuration, [slice,] universe, case) with its counts, so the common-task set, the
    task-level mean and the incomplete counts come from ~tasks × configs rows instead of
    re-scanning trials. Only the per-configuration aggregate (medians, quantiles, cost)
    reads trial rows again, minus the (usually few) tasks outside the common set.
    Configurations with excluded tasks come back through the FULL JOIN with ``excl``
    (``x_*`` columns), so no second query is needed. ``full=False`` skips medians and
    quantiles (Pareto needs only counts and cost).
    """
    by_sel = "".join(f",\n    {_COLUMNS[b]} AS {b}" for b in by)  # fixed column map
    by_cols = "".join(f", {b}" for b in by)
    distinct = "DISTINCT" if by else ""  # without slices task rows are already distinct
    holistic = """
    median(steps) FILTER (WHERE is_valid) AS med_steps,
    median(tokens) FILTER (WHERE is_valid) AS med_tokens,
    median(duration_s) FILTER (WHERE is_valid) AS med_duration_s,
    quantile_cont(cost_usd, [0.5, 0.9, 0.95]) AS cost_q,
    quantile_cont(duration_s, [0.5, 0.9, 0.95]) AS lat_q,""" if full else ""
    return f"""
WITH f AS MATERIALIZED (
  SELECT
    t.config_id,
    {_COLUMNS['variant']} AS variant,
    {_COLUMNS['model']} AS model,
    {_COLUMNS['harness']} AS harness,
    {_COLUMNS['harness_version']} AS harness_version,
    {_COLUMNS['universe']} AS universe,
    t.case_id, t.outcome, t.complete, t.steps, t.duration_s, t.cost_usd, t.simulated,
    t.input_tokens + t.output_tokens AS tokens,
    t.outcome NOT IN ('infra_error', 'invalid') AS is_valid,
    t.outcome = 'accepted' AS is_solved{by_sel}
  FROM trials t
  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
  LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
  LEFT JOIN runs r ON r.run_id = t.run_id
  WHERE {where}
),
task AS MATERIALIZED (
  SELECT config_id{by_cols}, universe, case_id,
         count(*) FILTER (WHERE complete) AS n_complete,
         count(*) FILTER (WHERE NOT complete) AS n_incomplete,
         count(*) FILTER (WHERE complete AND is_valid) AS n_valid,
         count(*) FILTER (WHERE complete AND is_solved) AS n_solved
  FROM f GROUP BY ALL
),
done AS (SELECT {distinct} config_id, universe, case_id FROM task WHERE n_complete > 0),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM done GROUP BY universe),
cnt AS (SELECT universe, case_id, count(*) AS k FROM done GROUP BY universe, case_id),
outside AS MATERIALIZED (
  SELECT cnt.universe, cnt.case_id FROM cnt JOIN ucfg USING (universe) WHERE cnt.k < ucfg.n
),
x AS (
  SELECT * FROM f WHERE complete AND NOT EXISTS (
    SELECT 1 FROM outside o WHERE o.universe = f.universe AND o.case_id = f.case_id)
),
taskagg AS (
  SELECT config_id{by_cols}, count(*) AS tasks, avg(p) AS task_mean, stddev_samp(p) AS task_sd
  FROM (SELECT config_id{by_cols}, n_solved / n_valid AS p
        FROM task ANTI JOIN outside USING (universe, case_id)
        WHERE n_complete > 0 AND n_valid > 0)
  GROUP BY ALL
),
inc AS (
  SELECT config_id{by_cols}, sum(n_incomplete) AS incomplete FROM task
  GROUP BY ALL HAVING sum(n_incomplete) > 0
),
agg AS (
  SELECT
    config_id{by_cols},
    min(variant) AS variant, min(model) AS model, min(harness) AS harness,
    min(harness_version) AS harness_version,
    count(*) AS trials,
    count(*) FILTER (WHERE is_valid) AS valid,
    count(*) FILTER (WHERE is_solved) AS solved,
    count(*) FILTER (WHERE outcome = 'infra_error') AS infra,
    count(*) FILTER (WHERE outcome = 'invalid') AS invalid,{holistic}
    sum(cost_usd) AS cost_sum,
    count(cost_usd) AS cost_known,
    bool_or(simulated) AS simulated
  FROM x GROUP BY ALL
),
excl AS (
  SELECT config_id AS x_config_id, min(variant) AS x_variant, min(model) AS x_model,
         min(harness) AS x_harness, min(harness_version) AS x_harness_version,
         list(DISTINCT case_id ORDER BY case_id) AS x_case_ids
  FROM f WHERE complete AND EXISTS (
    SELECT 1 FROM outside o WHERE o.universe = f.universe AND o.case_id = f.case_id)
  GROUP BY config_id
)
SELECT agg.*, coalesce(inc.incomplete, 0) AS incomplete,
       coalesce(taskagg.tasks, 0) AS tasks, taskagg.task_mean, taskagg.task_sd, excl.*
FROM agg
LEFT JOIN taskagg USING (config_id{by_cols})
LEFT JOIN inc USING (config_id{by_cols})
FULL JOIN excl ON excl.x_config_id = agg.config_id
ORDER BY model NULLS LAST, harness NULLS LAST, harness_version NULLS LAST,
         agg.config_id{by_cols}
"""  # noqa: S608 -- fixed fragments only; values are parameters


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
        "med_duration_s": rec.get("med_duration_s"), "cost_usd": cost, "cost_known": known,
        "cost_coverage": known / trials if trials else None, "cost_per_solved": per_solved,
        "cost_p50": cq[0] if cq else None, "cost_p90": cq[1] if cq else None,
        "cost_p95": cq[2] if cq else None,
        "latency_p50": lq[0] if lq else None, "latency_p90": lq[1] if lq else None,
        "latency_p95": lq[2] if lq else None, "simulated": bool(rec["simulated"]),
    }


def summarize(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
              by: list[str] | str | None = None, full: bool = True) -> Summary:
    """Per-configuration summary on common tasks (see docs/analysis.md).

    Tasks are common within a *task universe* — the case's benchmark label, else the
    run's manifest id, else the run — so configurations from different sources (our
    runs, a runs-jsonl export, an Inspect log) sit side by side, each on the tasks it
    shares with the configurations of its own benchmark. ``full=False`` leaves the
    medians and quantiles null (cheaper; for callers that need only counts and cost).
    """
    filters = filters or Filters()
    by_cols = check_by(by)
    where, params = filters.where()
    cur = con.execute(_sql(by_cols, where, full), params)
    names = [d[0] for d in cur.description]
    recs = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    excluded = {}
    for rec in recs:  # per configuration, repeated on each of its slices
        if rec["x_config_id"] is not None:
            excluded[rec["x_config_id"]] = {
                "config_id": rec["x_config_id"], "variant": rec["x_variant"],
                "model": rec["x_model"], "harness": rec["x_harness"],
                "harness_version": rec["x_harness_version"], "case_ids": rec["x_case_ids"]}
    excluded = [excluded[k] for k in sorted(excluded)]
    recs = [rec for rec in recs if rec["config_id"] is not None]
    if not recs:
        raise AnalysisError(
            f"no complete trials match the filters {filters.as_dict()}; check "
            "--run/--label/--since or ingest a run first"
        )
    rows = []
    for rec in recs:
        row = {k: rec[k] for k in CONFIG_KEYS}
        row.update({b: rec[b] for b in by_cols})
        row.update(_row(rec))
        rows.append(row)
    warnings = []
    for ex in excluded:
        warnings.append(
            f"{ex['model']}/{ex['harness']} {ex['harness_version']} ({ex['config_id'][:12]}): "
            f"{len(ex['case_ids'])} task(s) outside the common set excluded"
        )
    for row in rows:
        if row["tasks"] < SMALL_TASKS:
            warnings.append(
                f"{row['config_id'][:12]} ({row['variant'] or row['model']}): "
                f"{row['tasks']} task(s): descriptive sample, intervals are rough"
            )
        if row["cost_known"] < row["trials"]:
            warnings.append(
                f"{row['config_id'][:12]}: cost known for {row['cost_known']}/{row['trials']} "
                "trials; total cost and cost per solved are unknown"
            )
    return Summary(rows=rows, by=by_cols, excluded_cases=excluded, warnings=warnings)


def _py_median(value: float | None, count: int) -> str:
    """Print a median as Python's statistics.median of ints would (int when n is odd)."""
    if count == 0 or value is None:
        return "0"
    if count % 2 == 1:
        return str(int(value))
    return str(float(value))


def seed_lines(summary: Summary) -> list[str]:
    """The seed-002 script's table, tab-separated, header first (see docs/analysis.md)."""
    out = ["\t".join(["model", "harness", "version", "valid", "solved", "rate", "ci95",
                      "infra", "med_steps", "med_tokens", "cost", "cost_per_solved"])]
    rows = sorted(summary.rows, key=lambda r: (str(r["model"]), str(r["harness"]),
                                               str(r["harness_version"])))
    for r in rows:
        valid, solved = r["valid"], r["solved"]
        lo, hi = stats.wilson(solved, valid, z=1.96)
        lo, hi = (lo or 0.0), (hi or 0.0)
        rate = solved / valid if valid else 0.0
        cost = r["cost_usd"]
        cost_s = "unknown" if cost is None else f"{cost:.4f}"
        if not solved:
            per = "—"
        else:
            per = "unknown" if cost is None else f"{cost / solved:.4f}"
        out.append("\t".join(map(str, [
            r["model"], r["harness"], r["harness_version"], valid, solved, f"{rate:.3f}",
            f"{lo:.2f}–{hi:.2f}", r["infra"], _py_median(r["med_steps"], valid),
            _py_median(r["med_tokens"], valid), cost_s, per,
        ])))
    return out
