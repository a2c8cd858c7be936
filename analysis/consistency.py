"""Consistency: tasks passed on every repetition, and the pass^k / pass@k curves."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from analysis import scope, stats, tasks
from analysis.data import CONFIG_KEYS, config_names
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by, no_match
from analysis.results import CONFIG_SCHEMA, RowsResult
from analysis.scope import coverage_notes
from analysis.tasks import TaskUniverse

if TYPE_CHECKING:
    import duckdb


_HIST_SQL = """
WITH task AS (
  SELECT config_id, universe{by_cols}, case_id, sum(n_valid) AS n, sum(n_solved) AS c
  FROM task_cells s WHERE {common} GROUP BY ALL
)
SELECT config_id, universe{by_cols}, n, c, count(*) AS w
FROM task WHERE n > 0
GROUP BY ALL
ORDER BY config_id, universe{by_cols}, n, c
"""
"""Per configuration × universe [× slice]: the histogram of per-task (valid, accepted)
counts over the common tasks (``analysis.tasks``); only this reaches Python."""

_LEFT_OUT_SQL = """
SELECT config_id, universe, count(*) AS all_tasks,
       list(case_id ORDER BY case_id) FILTER (WHERE common AND n = 0 AND done) AS no_valid
FROM (SELECT config_id, universe, case_id, bool_and({common}) AS common,
             sum(n_valid) AS n, sum(n_complete) > 0 AS done
      FROM task_cells s GROUP BY ALL)
GROUP BY config_id, universe
"""
"""Per configuration × universe: its tasks, and the common ones where it has no valid
trial (all infra_error/invalid): left out of its consistency (and of its task mean)."""


class Consistency(RowsResult):
    """Per configuration [× slice]: consistent tasks (Wilson over tasks), pass^k, pass@k."""

    TASK_SETS: ClassVar[bool] = True
    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "universe": "String", "tasks": "Int64", "consistent": "Int64", "ci_low": "Float64",
        "ci_high": "Float64", "min_n": "Int64", "max_n": "Int64", "equal_n": "Boolean",
        "pass_hat_k": "List(Float64)", "pass_at_k": "List(Float64)",
        "excluded_tasks": "Int64"}

    def row(self, name: str) -> dict:
        """The row of a configuration by config id or variant name."""
        for r in self.rows:
            if name in (r["config_id"], r.get("variant")):
                return r
        raise AnalysisError(f"configuration {name!r} not in the consistency table")


def _sort_key(row: dict, keys: list[str]) -> tuple:
    """Nulls last, as polars ``sort(nulls_last=True)``."""
    return tuple((row[k] is None, row[k] if row[k] is not None else "") for k in keys)


@dataclass
class Histograms:
    """Per configuration × universe [× slice] the (n, c) → tasks histogram of the common
    tasks (sorted rows ``(config_id, universe, *slice, n, c, tasks)``), what was left out,
    the configurations' names and the task set of each universe."""

    rows: list[tuple]
    left_out: dict[tuple[str, str], tuple[int, list[str]]]
    names: dict[str, dict]
    universes: list[TaskUniverse]


def histograms(con: duckdb.DuckDBPyConnection, filters: Filters, by_cols: list[str],
               from_trials: bool = False) -> Histograms:
    """The histograms ``consistency`` and ``noise`` compute from (filters resolved)."""
    by_list = "".join(f", {b}" for b in by_cols)
    with tasks.staged(con, filters, by_cols, from_trials) as st:
        hist = con.execute(_HIST_SQL.format(by_cols=by_list, common=st.common)).fetchall()
        left_out = {(cid, u): (n, ids or []) for cid, u, n, ids in
                    con.execute(_LEFT_OUT_SQL.format(common=st.common)).fetchall()}
        # every configuration of the cells: one with no valid trial on a common task is named
        # in a warning too
        names = config_names(con, "SELECT DISTINCT run_id, config_id FROM task_cells") if hist else {}
    if not hist:
        if not st.config_runs:
            raise no_match(filters)
        raise AnalysisError("no common task has a valid trial; narrow the selection with "
                            "--run, --universe or --label")
    return Histograms(hist, left_out, names, st.universes)


def _row(key: tuple, part: list[tuple], names: dict, by_cols: list[str],
         left_out: dict) -> dict:
    counts = {(n, c): w for *_, n, c, w in part}
    n_tasks = sum(counts.values())
    consistent = sum(w for (n, c), w in counts.items() if c == n)
    lo, hi = stats.wilson(consistent, n_tasks)
    hat, at = stats.pass_curves(counts)
    ns = [n for n, _ in counts]
    cid, universe = key[0], key[1]
    all_tasks = left_out.get((cid, universe), (n_tasks, []))[0]
    return {"config_id": cid, **{k: names[cid][k] for k in CONFIG_KEYS[1:]},
            "universe": universe, **dict(zip(by_cols, key[2:], strict=True)),
            "tasks": n_tasks, "consistent": consistent, "ci_low": lo, "ci_high": hi,
            "min_n": min(ns), "max_n": max(ns), "equal_n": min(ns) == max(ns),
            "pass_hat_k": hat, "pass_at_k": at,
            "excluded_tasks": None if by_cols else all_tasks - n_tasks}


def _no_valid_notes(left_out: dict, names: dict) -> list[str]:
    out = []
    for (cid, universe), (_all, ids) in sorted(left_out.items()):
        if ids:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            out.append(f"{names[cid]['variant'] or cid[:12]} ({universe}): {len(ids)} common "
                       f"task(s) without a valid trial (all infra_error/invalid) left out: {shown}")
    return out


def consistency(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                by: list[str] | str | None = None, from_trials: bool = False) -> Consistency:
    """Per configuration × universe [× slice]: consistent tasks with a Wilson interval,
    pass^k, pass@k.

    Uses the common tasks of each task universe (``analysis.tasks``, the same set
    ``summarize`` uses), minus, per configuration, the common tasks where it has no valid
    trial (named in a warning; ``excluded_tasks`` counts every task of the configuration
    left out). DuckDB reduces the task cells to a histogram of per-task (n, c) per
    configuration; only that histogram reaches Python. ``from_trials`` counts the cells
    from the trials instead of ``task_rollup`` (same result; tested).
    """
    filters = scope.resolve(con, filters)
    by_cols = check_by(by)
    h = histograms(con, filters, by_cols, from_trials)
    hist, left_out, names = h.rows, h.left_out, h.names
    nkey = 2 + len(by_cols)
    rows = [_row(key, list(group), names, by_cols, left_out)
            for key, group in itertools.groupby(hist, key=lambda r: r[:nkey])]
    rows.sort(key=lambda r: _sort_key(r, ["model", "harness", "harness_version", "config_id",
                                          "universe", *by_cols]))
    warnings = _no_valid_notes(left_out, names)
    if len({r["min_n"] for r in rows}) > 1 or not all(r["equal_n"] for r in rows):
        warnings.append("repetition counts differ between configurations or tasks: compare "
                        "pass^k at a common k, not the consistency counts")
    return Consistency(rows, by_cols, [*coverage_notes(con, filters), *warnings],
                       universes=h.universes)


def check_comparable(result: Consistency, a: str, b: str) -> None:
    """Refuse to compare consistency counts when repetition counts differ (AnalysisError)."""
    ra, rb = result.row(a), result.row(b)
    if not (ra["equal_n"] and rb["equal_n"] and ra["min_n"] == rb["min_n"]):
        raise AnalysisError(
            f"consistency of {a!r} (n = {ra['min_n']}..{ra['max_n']}) and {b!r} "
            f"(n = {rb['min_n']}..{rb['max_n']}) is not comparable: the repetition counts "
            "differ; compare pass^k for a common k instead"
        )
