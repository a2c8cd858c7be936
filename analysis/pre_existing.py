"""The scored cases whose repository was already red: regression and repository criteria
that fail on the initial commit (``cases.pre_existing``). Their cases are scored; a
trial's failure of such a criterion is noise, never a regression (docs/runner.md,
"Pre-existing failures"). ``summarize`` and the report say how many there are per case,
so a reader knows which checks could not tell an agent's damage from the old one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analysis.filters import Filters
from analysis.unscored import selected_runs

if TYPE_CHECKING:
    import duckdb

_PRE_SQL = """
SELECT run_id, case_id, pre_existing, pre_existing_json
FROM cases
WHERE coalesce(pre_existing, 0) > 0 AND run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY case_id, run_id
"""
LISTED = 6
"""Cases named in a note; the rest are counted."""


@dataclass(frozen=True)
class PreExistingCase:
    """A case of a run with criteria that already failed on its initial commit."""

    run_id: str
    case_id: str
    criteria: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "case_id": self.case_id, "criteria": self.criteria,
                "count": len(self.criteria)}


@dataclass
class PreExisting:
    """The selection's cases with pre-existing failures."""

    cases: list[PreExistingCase]

    def as_dict(self) -> dict[str, Any]:
        return {"count": len(self.cases), "criteria": sum(len(c.criteria) for c in self.cases),
                "cases": [c.as_dict() for c in self.cases]}

    def notes(self) -> list[str]:
        if not self.cases:
            return []
        listed = "; ".join(f"{c.case_id} ({', '.join(c.criteria)})" for c in self.cases[:LISTED])
        more = f"; and {len(self.cases) - LISTED} more" if len(self.cases) > LISTED else ""
        return [f"{len(self.cases)} case(s) scored with pre-existing failures (regression or "
                f"repository criteria already failing on the initial commit; a trial's failure of "
                f"them is noise, not a regression): {listed}{more}"]


def pre_existing(con: duckdb.DuckDBPyConnection, filters: Filters) -> PreExisting:
    """The pre-existing criteria per case of the runs the selection reads (``filters`` resolved)."""
    rows = con.execute(_PRE_SQL, [selected_runs(con, filters)]).fetchall()
    return PreExisting([PreExistingCase(run, case, [p["criterion_id"] for p in json.loads(text or "[]")])
                        for run, case, _n, text in rows])
