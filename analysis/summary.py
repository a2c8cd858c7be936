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


def _sql(by: list[str], where: str) -> str:
    by_sel = "".join(f",\n    {_COLUMNS[b]} AS {b}" for b in by)  # fixed column map
    by_cols = "".join(f", {b}" for b in by)
    return f"""
WITH f AS (
  SELECT
    t.config_id,
    {_COLUMNS['variant']} AS variant,
    {_COLUMNS['model']} AS model,
    {_COLUMNS['harness']} AS harness,
    {_COLUMNS['harness_version']} AS harness_version,
    coalesce(c.benchmark, r.manifest_id, t.run_id) AS universe,
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
comp AS (SELECT * FROM f WHERE complete),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM comp GROUP BY universe),
cnt AS (
  SELECT universe, case_id, count(DISTINCT config_id) AS k FROM comp GROUP BY universe, case_id
),
common AS (SELECT cnt.universe, cnt.case_id FROM cnt JOIN ucfg USING (universe) WHERE cnt.k = ucfg.n),
x AS (SELECT * FROM comp SEMI JOIN common USING (universe, case_id)),
task AS (
  SELECT config_id{by_cols}, universe, case_id,
         count(*) FILTER (WHERE is_solved) / count(*) FILTER (WHERE is_valid) AS p
  FROM x GROUP BY ALL HAVING count(*) FILTER (WHERE is_valid) > 0
),
taskagg AS (
  SELECT config_id{by_cols}, count(*) AS tasks, avg(p) AS task_mean, stddev_samp(p) AS task_sd
  FROM task GROUP BY ALL
),
inc AS (
  SELECT config_id{by_cols}, count(*) AS incomplete FROM f WHERE NOT complete GROUP BY ALL
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
    count(*) FILTER (WHERE outcome = 'invalid') AS invalid,
    median(steps) FILTER (WHERE is_valid) AS med_steps,
    median(tokens) FILTER (WHERE is_valid) AS med_tokens,
    median(duration_s) FILTER (WHERE is_valid) AS med_duration_s,
    sum(cost_usd) AS cost_sum,
    count(cost_usd) AS cost_known,
    quantile_cont(cost_usd, [0.5, 0.9, 0.95]) AS cost_q,
    quantile_cont(duration_s, [0.5, 0.9, 0.95]) AS lat_q,
    bool_or(simulated) AS simulated
  FROM x GROUP BY ALL
)
SELECT agg.*, coalesce(inc.incomplete, 0) AS incomplete,
       coalesce(taskagg.tasks, 0) AS tasks, taskagg.task_mean, taskagg.task_sd
FROM agg
LEFT JOIN taskagg USING (config_id{by_cols})
LEFT JOIN inc USING (config_id{by_cols})
ORDER BY model NULLS LAST, harness NULLS LAST, harness_version NULLS LAST, config_id{by_cols}
"""  # noqa: S608 -- fixed fragments only; values are parameters


_EXCLUDED_SQL = """
WITH f AS (
  SELECT t.config_id, t.case_id, coalesce(c.benchmark, r.manifest_id, t.run_id) AS universe,
    {variant} AS variant, {model} AS model, {harness} AS harness,
    {harness_version} AS harness_version
  FROM trials t
  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
  LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
  LEFT JOIN runs r ON r.run_id = t.run_id
  WHERE t.complete AND {where}
),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM f GROUP BY universe),
cnt AS (SELECT universe, case_id, count(DISTINCT config_id) AS k FROM f GROUP BY universe, case_id),
common AS (SELECT cnt.universe, cnt.case_id FROM cnt JOIN ucfg USING (universe) WHERE cnt.k = ucfg.n)
SELECT config_id, min(variant), min(model), min(harness), min(harness_version),
       list(DISTINCT case_id ORDER BY case_id)
FROM f ANTI JOIN common USING (universe, case_id)
GROUP BY config_id ORDER BY config_id
"""


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
    cq = rec["cost_q"] if known else None
    lq = rec["lat_q"]
    return {
        "trials": trials, "incomplete": rec["incomplete"], "valid": valid, "solved": solved,
        "rate": solved / valid if valid else None, "ci_low": lo, "ci_high": hi,
        "infra": rec["infra"], "invalid": rec["invalid"], "tasks": tasks,
        "task_mean": tmean, "task_ci_low": tlo, "task_ci_high": thi,
        "med_steps": rec["med_steps"], "med_tokens": rec["med_tokens"],
        "med_duration_s": rec["med_duration_s"], "cost_usd": cost, "cost_known": known,
        "cost_coverage": known / trials if trials else None, "cost_per_solved": per_solved,
        "cost_p50": cq[0] if cq else None, "cost_p90": cq[1] if cq else None,
        "cost_p95": cq[2] if cq else None,
        "latency_p50": lq[0] if lq else None, "latency_p90": lq[1] if lq else None,
        "latency_p95": lq[2] if lq else None, "simulated": bool(rec["simulated"]),
    }


def summarize(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
              by: list[str] | str | None = None) -> Summary:
    """Per-configuration summary on common tasks (see docs/analysis.md).

    Tasks are common within a *task universe* — the case's benchmark label, else the
    run's manifest id, else the run — so configurations from different sources (our
    runs, a runs-jsonl export, an Inspect log) sit side by side, each on the tasks it
    shares with the configurations of its own benchmark.
    """
    filters = filters or Filters()
    by_cols = check_by(by)
    where, params = filters.where()
    cur = con.execute(_sql(by_cols, where), params)
    names = [d[0] for d in cur.description]
    recs = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
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
    cur = con.execute(_EXCLUDED_SQL.format(where=where, **{
        k: _COLUMNS[k] for k in ("variant", "model", "harness", "harness_version")}), params)
    excluded = [dict(zip(["config_id", "variant", "model", "harness", "harness_version",
                          "case_ids"], r, strict=True)) for r in cur.fetchall()]
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
