"""Consistency: tasks passed on every repetition, and the pass^k / pass@k curves."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, ClassVar

from analysis import stats
from analysis.data import _COLUMNS, CONFIG_KEYS, TRIALS, config_names
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb


_CELLS_FROM_ROLLUP = """
  SELECT t.run_id, t.config_id, {universe} AS universe, t.case_id, t.valid, t.solved{by_sel}
  FROM task_rollup t
  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
  LEFT JOIN runs r ON r.run_id = t.run_id
  WHERE {where}"""
_CELLS_FROM_TRIALS = """
  SELECT t.run_id, t.config_id, {universe} AS universe, t.case_id,
         count(*) FILTER (WHERE t.valid) AS valid,
         count(*) FILTER (WHERE t.solved) AS solved{by_sel}
  FROM {trials} t
  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
  LEFT JOIN runs r ON r.run_id = t.run_id
  WHERE {where}
  GROUP BY ALL"""
"""(run, configuration, task) cells with valid and accepted trial counts: from
``task_rollup``, or from the trials when a filter reads a trial's start time."""

_SQL = """
WITH f AS ({cells}),
task AS MATERIALIZED (
  SELECT config_id{by_cols}, universe, case_id, sum(valid) AS n, sum(solved) AS c
  FROM f WHERE valid > 0 GROUP BY ALL
),
done AS (SELECT DISTINCT config_id, universe, case_id FROM task),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n_cfg FROM done GROUP BY universe),
common AS (
  SELECT universe, case_id FROM done JOIN ucfg USING (universe)
  GROUP BY universe, case_id HAVING count(*) = any_value(n_cfg)
),
alltasks AS (
  SELECT config_id, count(DISTINCT (universe, case_id)) AS all_tasks FROM f GROUP BY config_id
)
SELECT g.*, a.all_tasks
FROM (SELECT config_id{by_cols}, n, c, count(*) AS w
      FROM task SEMI JOIN common USING (universe, case_id) GROUP BY ALL) g
JOIN alltasks a USING (config_id)
ORDER BY config_id{by_cols}, n, c
"""  # noqa: S608 -- fixed fragments only; values are parameters



class Consistency(RowsResult):
    """Per configuration [× slice]: consistent tasks (Wilson over tasks), pass^k, pass@k."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "tasks": "Int64", "consistent": "Int64", "ci_low": "Float64",
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


def consistency(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                by: list[str] | str | None = None, from_trials: bool = False) -> Consistency:
    """Per configuration [× slice]: consistent tasks with a Wilson interval, pass^k, pass@k.

    Uses the tasks on which every configuration of the same task universe (benchmark)
    has ≥ 1 valid trial (``excluded_tasks`` counts the rest), so counts line up side by side.
    DuckDB reduces the (run, configuration, task) cells of ``task_rollup`` to a histogram
    of per-task (n, c) per configuration; only that histogram reaches Python.
    ``from_trials`` counts the cells from the trials instead (same result; tested).
    """
    filters = filters or Filters()
    by_cols = check_by(by)
    where, params = filters.where()
    cells = (_CELLS_FROM_TRIALS if filters.needs_runs or from_trials else _CELLS_FROM_ROLLUP)
    cells = cells.format(universe=_COLUMNS["universe"], where=where, trials=TRIALS,
                         by_sel="".join(f", {_COLUMNS[b]} AS {b}" for b in by_cols))
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE consistency_cells AS {cells}", params)
        hist = con.execute(_SQL.format(cells="SELECT * FROM consistency_cells",
                                       by_cols="".join(f", {b}" for b in by_cols))).fetchall()
        names = config_names(con, "SELECT DISTINCT run_id, config_id FROM consistency_cells "
                                  "WHERE valid > 0") if hist else {}
    finally:
        con.execute("DROP TABLE IF EXISTS consistency_cells")
    if not hist:
        count_sql = ("SELECT count(*) FROM trials t LEFT JOIN cases c ON c.run_id = t.run_id "  # noqa: S608
                     "AND c.case_id = t.case_id LEFT JOIN runs r ON r.run_id = t.run_id "
                     "WHERE " + where)
        n_sel = con.execute(count_sql, params).fetchall()[0][0]
        if not n_sel:
            raise AnalysisError(
                f"no trials match the filters {filters.as_dict()}; check --run/--label/--since "
                "or ingest a run first")
        raise AnalysisError("no task has a valid trial for every configuration; narrow the "
                            "selection with --run or --label")
    nkey = 1 + len(by_cols)
    rows = []
    for key, group in itertools.groupby(hist, key=lambda r: r[:nkey]):
        part = list(group)
        counts = {(n, c): w for *_, n, c, w, _all in part}
        tasks = sum(counts.values())
        consistent = sum(w for (n, c), w in counts.items() if c == n)
        lo, hi = stats.wilson(consistent, tasks)
        hat, at = stats.pass_curves(counts)
        ns = [n for n, _ in counts]
        rows.append({"config_id": key[0], **{k: names[key[0]][k] for k in CONFIG_KEYS[1:]},
                     **dict(zip(by_cols, key[1:], strict=True)),
                     "tasks": tasks, "consistent": consistent, "ci_low": lo, "ci_high": hi,
                     "min_n": min(ns), "max_n": max(ns), "equal_n": min(ns) == max(ns),
                     "pass_hat_k": hat, "pass_at_k": at,
                     "excluded_tasks": None if by_cols else part[0][-1] - tasks})
    rows.sort(key=lambda r: _sort_key(r, ["model", "harness", "harness_version", "config_id",
                                          *by_cols]))
    warnings = []
    if len({r["min_n"] for r in rows}) > 1 or not all(r["equal_n"] for r in rows):
        warnings.append("repetition counts differ between configurations or tasks: compare "
                        "pass^k at a common k, not the consistency counts")
    return Consistency(rows, by_cols, warnings)


def check_comparable(result: Consistency, a: str, b: str) -> None:
    """Refuse to compare consistency counts when repetition counts differ (AnalysisError)."""
    ra, rb = result.row(a), result.row(b)
    if not (ra["equal_n"] and rb["equal_n"] and ra["min_n"] == rb["min_n"]):
        raise AnalysisError(
            f"consistency of {a!r} (n = {ra['min_n']}..{ra['max_n']}) and {b!r} "
            f"(n = {rb['min_n']}..{rb['max_n']}) is not comparable: the repetition counts "
            "differ; compare pass^k for a common k instead"
        )
