"""Patch-inspection flags: what a reviewer should look at, per configuration and kind.

The runner inspects each trial's final patch (broad exception handlers, deleted or
skipped tests, edits outside the task, …) and records one ``flags`` row per finding;
``trials.flags`` is the count per trial. A flag is for review, not a failure: it never
changes an outcome or a rate. Foreign sources record no inspection, so their flag counts
are unknown (null), never 0 (``patch_flags`` in warehouse/sql/trial_status.sql).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, ClassVar

from analysis.data import COLUMN_SQL, CONFIG_KEYS, TRIALS
from analysis.filters import Filters
from analysis.results import CONFIG_SCHEMA, RowsResult
from warehouse.rules import INSPECTING_SOURCES

if TYPE_CHECKING:
    import duckdb

EXAMPLES = 5
"""Trials listed (and linked in the report) per configuration and kind."""


class Flags(RowsResult):
    """One row per configuration and flag kind."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "kind": "String", "flags": "Int64", "trials_flagged": "Int64",
        "trials": "Int64", "paths": "List(String)", "trial_ids": "List(String)",
        "run_ids": "List(String)", "evidence": "List(String)"}


_FLAG_ROWS_SQL = """
SELECT t.config_id, {variant} AS variant, {model} AS model, {harness} AS harness,
       {harness_version} AS harness_version, f.kind, f.trial_id, f.path, r.source_path,
       t.run_id
FROM flags f
JOIN {trials} t ON t.run_id = f.run_id AND t.trial_id = f.trial_id
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
LEFT JOIN runs r ON r.run_id = t.run_id
WHERE t.complete AND {where}
ORDER BY t.config_id, f.kind, f.trial_id, f.path
"""  # noqa: S608 -- fixed fragments only; values are parameters

_COUNTS_SQL = """
SELECT t.config_id, count(*) AS trials, sum(t.patch_flags) AS flags,
       count(*) FILTER (WHERE t.patch_flags > 0) AS flagged
FROM {trials} t
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN runs r ON r.run_id = t.run_id
WHERE t.complete AND {where}
GROUP BY t.config_id
"""  # noqa: S608 -- fixed fragments only; values are parameters


_INSPECTED_RUNS_SQL = """
SELECT count(*) FROM runs r
WHERE r.source_format IN (SELECT unnest(?::VARCHAR[])){runs}
"""


def flag_counts(con: duckdb.DuckDBPyConnection, filters: Filters | None = None
                ) -> dict[str, dict[str, int | None]]:
    """config_id → {trials, flags, flagged}: complete trials, flags over them (null when no
    trial of the configuration was inspected) and trials with at least one flag.

    When no selected run comes from a source that inspects patches, every count is unknown:
    the result is empty and the trials are not scanned (that scan was a third of a
    whole-run ``summarize`` of a 1M-trial foreign run)."""
    filters = filters or Filters()
    runs = "\n  AND r.run_id IN (SELECT unnest(?::VARCHAR[]))" if filters.runs else ""
    inspected = con.execute(_INSPECTED_RUNS_SQL.format(runs=runs),
                            [list(INSPECTING_SOURCES), *([list(filters.runs)] if filters.runs
                                                         else [])]).fetchall()[0][0]
    if not inspected:
        return {}
    where, params = filters.where()
    rows = con.execute(_COUNTS_SQL.format(trials=TRIALS, where=where), params).fetchall()
    return {cid: {"trials": n, "flags": None if f is None else int(f),
                  "flagged": None if f is None else k} for cid, n, f, k in rows}


def evidence_dir(source_path: str | None, trial_id: str) -> str | None:
    """Where the runner kept a trial's evidence (``<run>/trials/<trial_id>``), as recorded."""
    if not source_path:
        return None
    run = PurePosixPath(source_path)
    if run.suffix == ".jsonl":
        run = run.parent
    return str(run / "trials" / trial_id)


def flags(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Flags:
    """Per configuration and flag kind: flags, trials flagged (of complete trials), the
    files named, and up to ``EXAMPLES`` flagged trials with their run and evidence directory."""
    from analysis import scope

    filters = scope.resolve(con, filters)
    where, params = filters.where()
    sql = _FLAG_ROWS_SQL.format(trials=TRIALS, where=where,
                                **{k: COLUMN_SQL[k] for k in CONFIG_KEYS[1:]})
    counts = flag_counts(con, filters)
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for cid, variant, model, harness, version, kind, trial_id, path, source, run in (
            con.execute(sql, params).fetchall()):
        g = groups.setdefault((cid, kind), {
            "config_id": cid, "variant": variant, "model": model, "harness": harness,
            "harness_version": version, "kind": kind, "flags": 0, "trials_flagged": 0,
            "trials": counts.get(cid, {}).get("trials"), "paths": [], "trial_ids": [],
            "run_ids": [], "evidence": [], "_seen": set()})
        g["flags"] += 1
        if path and path not in g["paths"]:
            g["paths"].append(path)
        if (run, trial_id) not in g["_seen"]:
            g["_seen"].add((run, trial_id))
            g["trials_flagged"] += 1
            if len(g["trial_ids"]) < EXAMPLES:
                g["trial_ids"].append(trial_id)
                g["run_ids"].append(run)
                g["evidence"].append(evidence_dir(source, trial_id))
    rows = [{k: v for k, v in g.items() if k != "_seen"} for g in groups.values()]
    rows.sort(key=lambda r: (-r["flags"], str(r["variant"] or r["config_id"]), r["kind"]))
    unknown = sorted(cid for cid, c in counts.items() if c["flags"] is None)
    warnings = ([f"{len(unknown)} configuration(s) without patch inspection (foreign "
                 "sources): their flags are unknown, not zero"] if unknown else [])
    if not counts:
        warnings = ["no selected trial comes from a source that inspects patches (our "
                    "runner): flags are unknown, not zero"]
    return Flags(rows, [], warnings)
