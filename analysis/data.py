"""Trial facts from the warehouse: trials joined with their case labels, config and run.

The one place analysis reads trial rows; every question starts from ``load_trials``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.errors import AnalysisError
from analysis.filters import (
    CASE_COLUMNS,
    CONDITION_PREFIX,
    UNIVERSE_SQL,
    Filters,
    case_label,
    condition_sql,
    no_match,
)
from warehouse.rules import trial_status

if TYPE_CHECKING:
    import duckdb
    import polars as pl

CONFIG_KEYS = ["config_id", "variant", "model", "harness", "harness_version"]

TRIALS = trial_status("trials")
"""The trials with ``valid`` and ``solved`` (the valid-trial rule, warehouse/sql/trial_status.sql).
Every query in analysis/ reads trial rows from this relation, never from ``trials`` with
a rule of its own."""

COLUMN_SQL = {
    "run_id": "t.run_id",
    "trial_id": "t.trial_id",
    "config_id": "t.config_id",
    "variant": "coalesce(t.variant, cf.variant)",
    "model": "coalesce(t.model, cf.model)",
    "harness": "coalesce(t.harness, cf.harness)",
    "harness_version": "coalesce(t.harness_version, cf.harness_version)",
    "variant_order": "cf.variant_order",
    "case_id": "t.case_id",
    # The evaluator version graded: the trial's own, else its case's in that run.
    "case_fingerprint": "coalesce(t.case_fingerprint, c.fingerprint)",
    "repetition": "t.repetition",
    "outcome": "t.outcome",
    "complete": "t.complete",
    "valid": "t.valid",
    "solved": "t.solved",
    "duration_s": "t.duration_s",
    "setup_s": "t.setup_s",
    "agent_s": "t.agent_s",
    "verification_s": "t.verification_s",
    "time_to_first_edit_s": "t.time_to_first_edit_s",
    "input_tokens": "t.input_tokens",
    "output_tokens": "t.output_tokens",
    "steps": "t.steps",
    "cost_usd": "t.cost_usd",
    "simulated": "t.simulated",
    "holdout": "coalesce(c.holdout, FALSE)",
    "canary": "coalesce(c.canary, FALSE)",
    "run_started_at": "r.started_at",
    # Task universe: tasks are common within one benchmark (analysis.tasks).
    "universe": UNIVERSE_SQL,
    **{col: case_label(col) for col in CASE_COLUMNS},
}
"""Each trial column a question may select, as its SQL over aliases t (trials), c (cases),
cf (configs) and r (runs): the fixed map every query formats column names from."""


def slice_sql(col: str) -> str:
    """A slice column's SQL (``COLUMN_SQL``, or a ``condition.<key>`` over the configs alias cf)."""
    return condition_sql(col) if col.startswith(CONDITION_PREFIX) else COLUMN_SQL[col]


_NEEDS = {"cf": ("variant", "model", "harness", "harness_version", "variant_order"),
          "r": ("run_started_at", "universe"),
          "c": ("holdout", "canary", "universe", "case_fingerprint", *CASE_COLUMNS)}


def load_trials(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                columns: list[str] | None = None, with_rep: bool = False,
                config_ids: list[str] | None = None) -> pl.DataFrame:
    """One row per selected trial (incomplete ones included: callers count them).

    ``with_rep`` adds ``rep``: 1..n per (config, case) in (run start, run_id, repetition)
    order, so trials from several runs pair by position instead of colliding.
    """
    sql, params = trials_sql(filters, columns, with_rep, config_ids)
    return con.sql(sql, params=params).pl()


def trials_sql(filters: Filters | None = None, columns: list[str] | None = None,
               with_rep: bool = False, config_ids: list[str] | None = None
               ) -> tuple[str, list]:
    """The SELECT behind ``load_trials`` and its parameters (for staying inside DuckDB)."""
    filters = filters or Filters()
    cols = list(COLUMN_SQL) if columns is None else list(dict.fromkeys(columns))
    for col in cols:
        if col not in COLUMN_SQL:
            raise AnalysisError(f"unknown trial column {col!r}")
    joins_cf = any(c in _NEEDS["cf"] for c in cols)
    joins_c = any(c in _NEEDS["c"] for c in cols) or filters.needs_cases
    where, params = filters.where()
    if config_ids is not None:
        where += "\n  AND t.config_id IN (SELECT unnest(?::VARCHAR[]))"
        params = [*params, list(config_ids)]
    needs_r = any(c in _NEEDS["r"] for c in cols) or with_rep or filters.needs_runs
    select = ",\n  ".join(f"{COLUMN_SQL[c]} AS {c}" for c in cols)  # fixed column map
    if with_rep:
        select += (",\n  row_number() OVER (PARTITION BY t.config_id, t.case_id ORDER BY "
                   "r.started_at NULLS LAST, t.run_id, t.repetition, t.trial_id) AS rep")
    sql = f"""
SELECT
  {select}
FROM {TRIALS} t
{"LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id" if joins_c else ""}
{"LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id" if joins_cf else ""}
{"LEFT JOIN runs r ON r.run_id = t.run_id" if needs_r else ""}
WHERE {where}
"""  # noqa: S608 -- only fixed fragments are formatted in; values are parameters
    return sql, params


def configs(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Distinct configurations among the selected trials, with variant order and run start
    (one row per config and run; cheap: trials are reduced to distinct names first and
    only joined with cases/runs when a filter needs them)."""
    sql, params = _configs_sql(filters)
    return con.sql(sql, params=params).pl()


def config_rows(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> list[dict]:
    """``configs`` as plain records (no polars on the CLI path)."""
    sql, params = _configs_sql(filters)
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def config_list(rows: list[dict]) -> list[dict]:
    """``config_table`` for records: one per config_id (smallest non-null name of each
    key), ordered by (model, harness, version, id) with unknowns last."""
    by_id: dict[str, dict] = {}
    for r in rows:
        cur = by_id.setdefault(r["config_id"], {k: None for k in CONFIG_KEYS})
        cur["config_id"] = r["config_id"]
        for k in CONFIG_KEYS[1:]:
            v = r.get(k)
            if v is not None and (cur[k] is None or v < cur[k]):
                cur[k] = v
    keys = ["model", "harness", "harness_version", "config_id"]
    return sorted(by_id.values(),
                  key=lambda c: tuple((c[k] is None, c[k] or "") for k in keys))


def _configs_sql(filters: Filters | None) -> tuple[str, list]:
    filters = filters or Filters()
    where, params = filters.where()
    sql = f"""
WITH d AS (
  SELECT DISTINCT t.run_id, t.config_id, t.variant, t.model, t.harness, t.harness_version,
         t.simulated
  FROM trials t
  {"LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id"
   if filters.needs_cases else ""}
  {"LEFT JOIN runs r ON r.run_id = t.run_id" if filters.needs_runs else ""}
  WHERE {where}
)
SELECT DISTINCT t.config_id, {COLUMN_SQL['variant']} AS variant, {COLUMN_SQL['model']} AS model,
  {COLUMN_SQL['harness']} AS harness, {COLUMN_SQL['harness_version']} AS harness_version,
  cf.variant_order, cf.agent_kind, coalesce(t.simulated, cf.simulated) AS simulated,
  r.started_at AS run_started_at, t.run_id
FROM d t
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
LEFT JOIN runs r ON r.run_id = t.run_id
"""  # noqa: S608 -- fixed fragments only
    return sql, params


def config_table(df: pl.DataFrame) -> pl.DataFrame:
    """Distinct configurations in a trial frame, ordered by (model, harness, version, id)."""
    import polars as pl

    keys = [k for k in CONFIG_KEYS if k in df.columns]
    out = df.group_by("config_id").agg([pl.col(k).drop_nulls().first() for k in keys
                                        if k != "config_id"])
    return out.select(keys).sort(["model", "harness", "harness_version", "config_id"],
                                 nulls_last=True)


def config_dict(row: dict) -> dict:
    return {k: row.get(k) for k in CONFIG_KEYS}


def resolve_config(configs: pl.DataFrame | list[dict], name: str) -> dict:
    """A configuration by variant name, config_id or unique config_id prefix."""
    rows = configs if isinstance(configs, list) else configs.to_dicts()
    for test in (lambda r: r["config_id"] == name, lambda r: r.get("variant") == name,
                 lambda r: str(r["config_id"]).startswith(name)):
        hits = list({r["config_id"]: r for r in rows if test(r)}.values())  # a config in several runs is one
        if len(hits) == 1:
            return config_dict(hits[0])
        if len(hits) > 1:
            listed = ", ".join(f"{r['config_id'][:12]} ({r.get('variant')}, {r.get('model')})"
                               for r in hits[:8])
            raise AnalysisError(
                f"configuration {name!r} is ambiguous: {listed}; give a longer config_id prefix"
            )
    known = ", ".join(sorted({str(r.get("variant") or r["config_id"][:12]) for r in rows})[:12])
    raise AnalysisError(
        f"configuration {name!r} not found in the selected trials; known: {known or 'none'}"
    )


def require_trials(df: pl.DataFrame, filters: Filters) -> None:
    if df.height == 0:
        raise no_match(filters)


_NAMES_SQL = """
SELECT p.config_id, min(cf.variant), min(cf.model), min(cf.harness), min(cf.harness_version),
       bool_or(cf.simulated), count(*) FILTER (WHERE cf.config_id IS NULL)
FROM ({pairs}) p
LEFT JOIN configs cf ON cf.run_id = p.run_id AND cf.config_id = p.config_id
GROUP BY p.config_id
"""
_TRIAL_NAMES_SQL = """
SELECT config_id, min(variant), min(model), min(harness), min(harness_version),
       bool_or(simulated)
FROM trials WHERE config_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY config_id
"""
NAME_KEYS = [*CONFIG_KEYS[1:], "simulated"]


PAIRS_SQL = "SELECT unnest(?::VARCHAR[]) AS run_id, unnest(?::VARCHAR[]) AS config_id"
"""(run_id, config_id) pairs given as two parameter lists (for ``config_names``)."""


def config_names(con: duckdb.DuckDBPyConnection, pairs: str, params: list | None = None
                 ) -> dict[str, dict]:
    """config_id → variant, model, harness, harness_version, simulated.

    From the ``configs`` rows of the (run_id, config_id) pairs selected by ``pairs`` (a
    fixed SELECT over a table the caller built, or ``PAIRS_SQL`` with the pairs as
    ``params``); a run whose trials name a configuration its configs table lacks is named
    from those trials.
    """
    rows = con.execute(_NAMES_SQL.format(pairs=pairs), params or []).fetchall()
    names = {cid: dict(zip(NAME_KEYS, vals, strict=True)) for cid, *vals, _ in rows}
    unnamed = sorted(cid for cid, *_, missing in rows if missing)
    if unnamed:
        for cid, *vals in con.execute(_TRIAL_NAMES_SQL, [unnamed]).fetchall():
            for key, value in zip(NAME_KEYS, vals, strict=True):
                if names[cid][key] is None:
                    names[cid][key] = value
    return names
