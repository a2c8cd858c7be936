"""The unscored cases of a selection: which cases a run did not score (failed or flaky
controls, ``cases.scored = false``) and why, so every question can say what it left out
(``Filters.where`` leaves them out; ``--include-unvalidated`` counts them, labelled)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from analysis.filters import Filters
from analysis.tasks import joins

if TYPE_CHECKING:
    import duckdb

_UNSCORED_SQL = """
SELECT u.run_id, u.case_id, coalesce(u.unscored_reason, 'controls failed') AS reason,
       (SELECT count(*) FROM trials t WHERE t.run_id = u.run_id AND t.case_id = u.case_id),
       (SELECT count(*) FROM skipped_trials k WHERE k.run_id = u.run_id AND k.case_id = u.case_id)
FROM cases u
WHERE u.scored = FALSE AND u.run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY u.case_id, u.run_id
"""
_SELECTED_RUNS_SQL = """
SELECT DISTINCT t.run_id FROM {table} t{joins} WHERE {where}
"""  # noqa: S608 -- fixed fragments; values are parameters


@dataclass(frozen=True)
class UnscoredCase:
    """A case a run did not score (failed or flaky controls), with why."""

    run_id: str
    case_id: str
    reason: str
    trials: int  # trials recorded anyway (--score-unvalidated)
    skipped: int  # trials not run

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "case_id": self.case_id, "reason": self.reason,
                "trials": self.trials, "skipped_trials": self.skipped}


@dataclass
class Unscored:
    """The unscored cases of the selected runs and whether the question counted them."""

    cases: list[UnscoredCase]
    included: bool

    def as_dict(self) -> dict[str, Any]:
        return {"count": len(self.cases), "included": self.included,
                "cases": [c.as_dict() for c in self.cases]}

    def notes(self) -> list[str]:
        if not self.cases:
            return []
        listed = "; ".join(f"{c.case_id} ({c.run_id}): {c.reason}" for c in self.cases[:6])
        more = f"; and {len(self.cases) - 6} more" if len(self.cases) > 6 else ""
        if self.included:
            return [f"UNVALIDATED INCLUDED (--include-unvalidated): {len(self.cases)} unscored "
                    f"case(s) are counted: {listed}{more}"]
        return [f"{len(self.cases)} unscored case(s) left out (their controls failed or "
                f"disagreed): {listed}{more}; --include-unvalidated counts them"]


def selected_runs(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[str]:
    """The runs the selection reads (``filters`` resolved), unscored cases included."""
    if filters.runs:
        return list(filters.runs)
    wide = replace(filters, include_unvalidated=True)
    where, params = wide.where()
    sql = _SELECTED_RUNS_SQL.format(table="trials" if wide.needs_trials else "task_rollup",
                                    joins=joins(wide, []), where=where)
    return [r for (r,) in con.execute(sql, params).fetchall()]


def unscored(con: duckdb.DuckDBPyConnection, filters: Filters) -> Unscored:
    """The unscored cases of the runs the selection reads (``filters`` resolved)."""
    if filters.unscored_present is False:  # resolved: the warehouse holds no unscored case
        return Unscored([], filters.include_unvalidated)
    rows = con.execute(_UNSCORED_SQL, [selected_runs(con, filters)]).fetchall()
    return Unscored([UnscoredCase(*r) for r in rows], filters.include_unvalidated)
