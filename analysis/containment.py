"""How the selected runs contained their agents and graders, as notes beside their numbers.

Two things a reader must know next to a pass rate (docs/security.md): a run whose agents had
the host's network (``isolation.network: open``, "network open": an agent could download an
upstream fix or reach other trials), and a criterion whose grader imports workspace code in
its own process (declared ``in_process``, "in-process": code written against that grader
can read or rewrite it). ``summarize`` and the report print these notes; the report's
controls table says the same per run.
"""

from __future__ import annotations

import duckdb

from analysis.filters import Filters

_SELECTED = """
SELECT DISTINCT t.run_id
FROM trials t
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN runs r ON r.run_id = t.run_id
WHERE {where}
"""

_OPEN_SQL = """
SELECT run_id, coalesce(isolated, TRUE) AS isolated FROM runs
WHERE network_policy = 'open' AND run_id IN ({selected})
ORDER BY run_id
"""

_IN_PROCESS_SQL = """
SELECT run_id, case_id, criterion_id FROM criteria
WHERE in_process AND run_id IN ({selected})
ORDER BY run_id, case_id, criterion_id
"""

NETWORK_OPEN = "network open"
IN_PROCESS = "in-process"


def network_open_runs(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[tuple[str, bool]]:
    """(run id, isolated) of the selected runs whose agents had the host's network."""
    where, params = filters.where()
    rows = con.execute(_OPEN_SQL.format(selected=_SELECTED.format(where=where)), params).fetchall()
    return [(r[0], bool(r[1])) for r in rows]


def containment_notes(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[str]:
    """One note per selected run with an open network, one per run with in-process graders."""
    where, params = filters.where()
    selected = _SELECTED.format(where=where)
    notes = [f"{NETWORK_OPEN.upper()}: run {run}: agents had the host's network (isolation.network open): "
             "an agent could fetch an upstream fix or reach other trials; its results say so"
             for run, _isolated in network_open_runs(con, filters)]
    by_run: dict[str, list[str]] = {}
    for run, case, crit in con.execute(_IN_PROCESS_SQL.format(selected=selected), params).fetchall():
        by_run.setdefault(run, []).append(f"{case}/{crit}")
    notes += [f"{IN_PROCESS.upper()} graders in run {run}: {', '.join(items[:8])}"
              + (f" and {len(items) - 8} more" if len(items) > 8 else "")
              + ": they import workspace code in their own process, so code written against them can "
              "read or rewrite them (see the patch flags grader_introspection, grader_helper)"
              for run, items in by_run.items()]
    return notes
