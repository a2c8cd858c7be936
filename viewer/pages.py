"""The list pages: runs → configurations → tasks → trials, the filtered trial list and the
inspection queues. Each function takes an open connection and returns (HTTP status, HTML);
the server and the bundle call the same functions (docs/viewer.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from viewer import queries, site
from viewer.render import Context, page
from viewer.review import ReviewSetup
from viewer.trial import Limits

if TYPE_CHECKING:
    import duckdb

OUTCOMES = ("accepted", "target_failed", "regression", "repository_failed", "budget_exhausted",
            "agent_failed", "agent_output_error", "infra_error", "invalid", "incomplete")


@dataclass(frozen=True)
class Options:
    """What the pages are built from besides the warehouse rows."""

    db_path: Path
    ctx: Context
    runs_roots: tuple[Path, ...] = ()
    limits: Limits = field(default_factory=Limits)
    review: ReviewSetup | None = None
    list_rows: int = 1000


def not_found(opts: Options, path: str, what: str) -> tuple[int, str]:
    return 404, page("missing.html.j2", path, opts.ctx, title="Not found", what=what)


def runs_page(con: duckdb.DuckDBPyConnection, opts: Options) -> tuple[int, str]:
    return 200, page("runs.html.j2", site.RUNS, opts.ctx, title="Runs", runs=queries.runs(opts.db_path, con))


def run_page(con: duckdb.DuckDBPyConnection, opts: Options, run: str) -> tuple[int, str]:
    path = site.run_page(run)
    found = [r for r in queries.runs(opts.db_path, con) if r["run_id"] == run]
    if not found:
        return not_found(opts, path, f"run {run!r}")
    configs, note = queries.run_configs(con, run)
    cases = queries.rows(con, "run_cases", run=run)
    return 200, page("run.html.j2", path, opts.ctx, title=f"Run {run}", run=found[0], configs=configs,
                     rates_note=note, cases=cases)


def config_page(con: duckdb.DuckDBPyConnection, opts: Options, run: str, config: str) -> tuple[int, str]:
    path = site.config_page(run, config)
    configs, _note = queries.run_configs(con, run)
    found = [c for c in configs if c["config_id"] == config]
    if not found:
        return not_found(opts, path, f"configuration {config!r} in run {run!r}")
    tasks = queries.rows(con, "config_tasks", run=run, config=config)
    return 200, page("config.html.j2", path, opts.ctx, title=f"{found[0]['variant'] or config}", run=run,
                     config=found[0], tasks=tasks)


def task_page(con: duckdb.DuckDBPyConnection, opts: Options, run: str, case: str) -> tuple[int, str]:
    path = site.task_page(run, case)
    trials = queries.rows(con, "task_trials", run=run, case=case)
    labels = queries.rows(con, "task_case", run=run, case=case)
    if not trials and not labels:
        return not_found(opts, path, f"task {case!r} in run {run!r}")
    offered = pairs(trials)
    return 200, page("task.html.j2", path, opts.ctx, title=f"Task {case}", run=run, case=case,
                     labels=labels[0] if labels else {}, trials=trials, pairs=offered)


def pairs(trials: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Side-by-side pairs the task page offers: the first repetition of each configuration
    against the first of every other (the bundle writes exactly these)."""
    first: dict[str, dict[str, Any]] = {}
    for t in trials:
        first.setdefault(t["config_id"], t)
    heads = list(first.values())
    return [(a, b) for i, a in enumerate(heads) for b in heads[i + 1:]]


def trials_page(con: duckdb.DuckDBPyConnection, opts: Options, f: queries.TrialFilter) -> tuple[int, str]:
    """The filtered trial list; the bundle lists every trial and filters in the browser."""
    from analysis.errors import AnalysisError

    client = opts.ctx.mode == "bundle"
    error = None
    try:
        df = queries.trial_list(con, queries.TrialFilter() if client else f)
    except AnalysisError as exc:
        error, df = str(exc), None
    rows = [] if df is None else df.head(opts.list_rows).to_dicts()
    choices = _choices(con)
    return (400 if error else 200), page(
        "trials.html.j2", site.TRIALS, opts.ctx, title="Trials", rows=rows, total=0 if df is None else df.height,
        shown=len(rows), f=f, error=error, choices=choices, outcomes=OUTCOMES, client=client,
        label_columns=queries.LABEL_COLUMNS)


def _choices(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    from analysis.filters import Filters
    from analysis.scope import universes

    q = queries.queue(con)
    return {"runs": [r["run_id"] for r in queries.rows(con, "run_ids")],
            "universes": [u.name for u in universes(con, Filters(include_unvalidated=True))],
            "flags": [r["kind"] for r in queries.rows(con, "flag_names")],
            "queues": sorted(set(q["kind"].to_list()))}


def queues_page(con: duckdb.DuckDBPyConnection, opts: Options) -> tuple[int, str]:
    """The inspection queues (``analysis.review.inspect_queue``) as worklists of trial pages."""
    q = queries.queue(con, str(opts.runs_roots[0]) if opts.runs_roots else None)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for row in q.to_dicts():
        kinds.setdefault(row["kind"], []).append(row)
    return 200, page("queues.html.j2", site.QUEUES, opts.ctx, title="Inspection queues", kinds=kinds)
