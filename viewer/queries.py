"""The viewer's reads of the warehouse: SQL in ``viewer/sql/`` with parameters, and the
``analysis`` functions where an answer already exists (the per-configuration rates of
``analysis.summary``, the trial selection of ``analysis.data``/``analysis.filters``, the
inspection queue of ``analysis.review``, the judgments' calibration status of
``analysis.judges``). Values are never interpolated into SQL (docs/viewer.md).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warehouse.rules import trial_status

if TYPE_CHECKING:
    import duckdb
    import polars as pl

LIST_COLUMNS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "case_id", "repetition",
                "outcome", "duration_s", "cost_usd", "simulated", "universe", "task_class",
                "difficulty", "repository", "run_started_at"]
LABEL_COLUMNS = ("task_class", "difficulty", "repository")


SCOPED = {
    "attempts": "run_id = $run", "stages": "run_id = $run", "criteria": "run_id = $run",
    "gradings": "run_id = $run", "steps": "run_id = $run", "model_calls": "run_id = $run",
    "flags": "run_id = $run", "judgments": "run_id = $run OR run_id LIKE 'annotations-%'",
    "reviews": "trial_run_id = $run", "trials": "run_id = $run", "configs": "run_id = $run",
    "cases": "run_id = $run", "runs": "run_id = $run",
}
"""The per-trial tables a trial page reads (``{name}`` in its SQL), and which of their rows
belong to one run: a bundle copies them into temp tables once per run (``RunScope``)."""


@cache
def sql(name: str, scoped: bool = False) -> str:
    """``viewer/sql/<name>.sql`` without comments; ``{trial_status}`` is the valid-trial
    relation, ``{<table>}`` the table or its run's temp copy (constants, never input)."""
    text = resources.files("viewer").joinpath("sql", f"{name}.sql").read_text("utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    body = body.replace("{trial_status}", trial_status())
    for table in SCOPED:
        body = body.replace("{" + table + "}", f"run_{table}" if scoped else table)
    return body


class RunScope:
    """One run's rows of the per-trial tables as temp tables: a bundle writes hundreds of
    trial pages of one run, and a query over a small in-memory table is a few times faster
    than one over the Parquet views. Also caches per-run answers (``cache``)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, run: str) -> None:
        for table, rule in SCOPED.items():
            # table names and rules are the constants above; the run is a parameter
            con.execute(f"CREATE OR REPLACE TEMP TABLE run_{table} AS SELECT * FROM {table} WHERE {rule}",  # noqa: S608
                        {"run": run})
        self.run = run
        self.cache: dict[str, Any] = {}


def rows(con: duckdb.DuckDBPyConnection, name: str, scope: RunScope | None = None,
         **params: Any) -> list[dict[str, Any]]:
    """The rows of ``viewer/sql/<name>.sql`` as dicts (from ``scope``'s tables when it is the run asked for)."""
    scoped = scope is not None and params.get("run") == scope.run
    cur = con.execute(sql(name, scoped), params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def runs(db_path: Path, con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every run (invalidated ones with their reason), with network, engine and evaluator facts."""
    from warehouse.runs import list_runs

    extra = {r["run_id"]: r for r in rows(con, "run_extra")}
    return [{**extra.get(r.run_id, {}), **{f.name: getattr(r, f.name) for f in fields(r)}}
            for r in list_runs(db_path)]


def run_configs(con: duckdb.DuckDBPyConnection, run: str) -> tuple[list[dict[str, Any]], str | None]:
    """A run's configurations with their counts, and ``summarize``'s rates on common tasks
    (rate, Wilson interval, cost per solved); the note says why rates are absent."""
    from analysis.errors import AnalysisError
    from analysis.filters import Filters
    from analysis.summary import summarize

    configs = rows(con, "run_configs", run=run)
    keys = ("rate", "ci_low", "ci_high", "tasks", "cost_per_solved", "universe")
    try:
        summary = summarize(con, Filters(runs=(run,)), full=False, checks=False)
    except AnalysisError as exc:
        return [{**c, **dict.fromkeys(keys)} for c in configs], str(exc)
    rates = {r["config_id"]: r for r in summary.rows}
    return [{**c, **{k: rates.get(c["config_id"], {}).get(k) for k in keys}} for c in configs], None


@dataclass(frozen=True)
class TrialFilter:
    """The trial list's filters (each empty = any), as the page's form names them."""

    run: str = ""
    config: str = ""
    case: str = ""
    outcome: str = ""
    flag: str = ""
    queue: str = ""
    label: str = ""
    universe: str = ""
    q: str = ""

    @classmethod
    def from_query(cls, query: Any) -> TrialFilter:
        return cls(**{f.name: str(query.get(f.name, "") or "").strip()[:500] for f in fields(cls)})

    def given(self) -> dict[str, str]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}


def queue(con: duckdb.DuckDBPyConnection, runs_root: str | None = None) -> pl.DataFrame:
    """The inspection queue (``analysis.review.inspect_queue``) over every run."""
    from analysis.review import inspect_queue

    return inspect_queue(con, None, runs_root)


def trial_list(con: duckdb.DuckDBPyConnection, f: TrialFilter) -> pl.DataFrame:
    """Trials (``analysis.data.load_trials``: run, label and universe selectors) with their
    flag kinds and queue kinds, narrowed by outcome, flag, queue and id search."""
    import polars as pl

    from analysis.data import load_trials
    from analysis.filters import Filters

    filters = Filters.parse(runs=[f.run] if f.run else None, labels=[f.label] if f.label else None,
                            universes=[f.universe] if f.universe else None, include_unvalidated=True)
    df = load_trials(con, filters, columns=LIST_COLUMNS)
    flags = pl.DataFrame(rows(con, "flag_kinds"), schema={"run_id": pl.String, "trial_id": pl.String,
                                                          "flag_kinds": pl.String})
    df = df.join(flags, on=["run_id", "trial_id"], how="left")
    df = df.join(_queue_kinds(con), on=["run_id", "trial_id"], how="left")
    q = queue(con)
    case_kinds = q.filter(pl.col("trial_id").is_null()).group_by("case_id").agg(
        pl.col("kind").unique().sort().str.join(" ").alias("case_queue"))
    df = df.join(case_kinds, on="case_id", how="left").with_columns(
        pl.concat_str([pl.col("queue_kinds"), pl.col("case_queue")], separator=" ", ignore_nulls=True)
        .str.strip_chars().alias("queue_kinds")).drop("case_queue")
    conds = []
    if f.config:
        conds.append((pl.col("config_id") == f.config) | (pl.col("variant") == f.config))
    if f.case:
        conds.append(pl.col("case_id") == f.case)
    if f.outcome:
        conds.append(pl.col("outcome").fill_null("incomplete") == f.outcome)
    for col, want in (("flag_kinds", f.flag), ("queue_kinds", f.queue)):
        if want == "any":
            conds.append(pl.col(col).fill_null("") != "")
        elif want:
            conds.append(pl.col(col).fill_null("").str.split(" ").list.contains(want))
    if f.q:
        conds.append(pl.col("trial_id").str.to_lowercase().str.contains(f.q.lower(), literal=True))
    for c in conds:
        df = df.filter(c)
    return df.sort(["run_started_at", "run_id", "case_id", "variant", "repetition"], nulls_last=True,
                   descending=[True, False, False, False, False])


def _queue_kinds(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    import polars as pl

    q = queue(con).filter(pl.col("trial_id").is_not_null())
    return q.group_by(["run_id", "trial_id"]).agg(pl.col("kind").unique().sort().str.join(" ").alias("queue_kinds"))


def resolve(con: duckdb.DuckDBPyConnection, kind: str, segment: str, run: str = "") -> str | None:
    """The id a path segment names (``viewer.site.slug``), or None."""
    from viewer.site import matches, unslug

    value, hashed = unslug(segment)
    if value is not None or hashed is None:
        return value
    return matches(segment, [r["id"] for r in rows(con, "long_ids", run=run) if r["kind"] == kind])
