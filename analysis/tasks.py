"""What a task is, and which tasks configurations share: the one place for both.

A **task** is a case id within a task universe (``filters.UNIVERSE_SQL``: the case's
benchmark label, else the run's manifest id, else the run). The **common tasks** of a
universe are those on which *every* configuration of that universe has at least one
complete trial (any outcome, as the seed summary script counts them). ``summarize``,
``consistency``, ``noise``, ``rank`` and ``pareto`` all read the common tasks staged here,
so the task sets they report are equal for the same selection by construction.
(Paired questions, ``compare`` and ``matrix``, pair on the tasks *both* sides share.)

``stage`` writes two temporary tables on the connection:

- ``task_cells``: one row per (run, configuration, [slice,] case) with its trial counts,
  known cost, universe and universe kind (from ``task_rollup``, or from the trials when a
  filter reads a trial's own columns);
- ``task_outside``: the (run, case) pairs whose task is *not* common in its universe
  (absent when every task is common).

The task key is (case, evaluator fingerprint): two versions of a case in one universe are
two tasks (``case@<fingerprint prefix>``), never pooled, and ``versions`` names them;
paired questions refuse to pair across them (``evaluator_changes``). Unscored cases are
left out by ``Filters.where`` (``filters.UNSCORED_SQL``); ``analysis.unscored`` says which
and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis.data import TRIALS, slice_sql
from analysis.filters import CONDITION_PREFIX, Filters, case_label

if TYPE_CHECKING:
    import duckdb

_TASK_SQL = """
CREATE OR REPLACE TEMP TABLE task_cells AS
SELECT * EXCLUDE (case_id, fingerprint, versions),
       CASE WHEN versions > 1 THEN case_id || '@' || left(fingerprint, 12) ELSE case_id END
         AS case_id,
       case_id AS raw_case_id, fingerprint
FROM (
  SELECT *, count(DISTINCT fingerprint) OVER (PARTITION BY universe, case_id) AS versions
  FROM (
    SELECT k.*, {universe} AS universe, {universe_kind} AS universe_kind, c.fingerprint
    FROM ({counts}) k
    LEFT JOIN cases c ON c.run_id = k.run_id AND c.case_id = k.case_id
    LEFT JOIN runs r ON r.run_id = k.run_id
  )
)
"""
_TASK_ONE_VERSION_SQL = """
CREATE OR REPLACE TEMP TABLE task_cells AS
SELECT k.*, {universe} AS universe, {universe_kind} AS universe_kind,
       k.case_id AS raw_case_id, NULL::VARCHAR AS fingerprint
FROM ({counts}) k{cases}
LEFT JOIN runs r ON r.run_id = k.run_id
"""
"""The same when no case of the warehouse has two fingerprints (the common case): no
window, and the cases are joined only when some case carries a ``benchmark`` label."""
_CHANGED_ANYWHERE_SQL = """
SELECT count(*) FROM (SELECT case_id FROM cases WHERE fingerprint IS NOT NULL
                      GROUP BY case_id HAVING count(DISTINCT fingerprint) > 1)
"""
"""The task key is (case, evaluator fingerprint): when one universe holds a case under two
fingerprints (a grader changed between runs), each version becomes a task of its own,
``case@<fingerprint prefix>``, and is never pooled with the other; ``raw_case_id`` keeps
the case id the trial rows carry. A missing fingerprint (foreign sources, older runs) is
unknown, not a version of its own."""

COUNTS_FROM_ROLLUP = """
  SELECT t.run_id, t.config_id{by_sel}, t.case_id, t.complete AS n_complete,
         t.trials - t.complete AS n_incomplete, t.valid AS n_valid, t.solved AS n_solved,
         t.infra AS n_infra, t.invalid AS n_invalid, t.cost_usd AS cost_sum, t.cost_known
  FROM task_rollup t{joins}
  WHERE {where}"""
COUNTS_FROM_TRIALS = """
  SELECT t.run_id, t.config_id{by_sel}, t.case_id,
         count(*) FILTER (WHERE t.complete) AS n_complete,
         count(*) FILTER (WHERE NOT t.complete) AS n_incomplete,
         count(*) FILTER (WHERE t.valid) AS n_valid,
         count(*) FILTER (WHERE t.solved) AS n_solved,
         count(*) FILTER (WHERE t.complete AND t.outcome = 'infra_error') AS n_infra,
         count(*) FILTER (WHERE t.complete AND t.outcome = 'invalid') AS n_invalid,
         fsum(t.cost_usd) FILTER (WHERE t.complete) AS cost_sum,
         count(t.cost_usd) FILTER (WHERE t.complete) AS cost_known
  FROM {trials} t{joins}
  WHERE {where}
  GROUP BY ALL"""
"""One row per (run, configuration, [slice,] case) with its trial counts: from the
``task_rollup`` table (built when trials are written), or from the trials themselves when a
filter needs a trial's own columns (--since/--until, --cost-coverage complete)."""

_UNIVERSES_SQL = """
SELECT universe, config_id, run_id, min(universe_kind),
       count(*) FILTER (WHERE n_complete > 0) AS done,
       sum(n_complete), sum(n_invalid), sum(n_infra)
FROM task_cells GROUP BY universe, config_id, run_id
"""
"""Per task universe, configuration and run: its kind, finished tasks, and the trial counts
the eligibility gates and sanity checks read (``analysis.checks``). With one run per
universe, task rows are already one per (configuration, task)."""

_TASKS_SQL = """
SELECT universe, min(k), count(*) FROM (
  SELECT universe, case_id, count(*) AS k FROM task_cells WHERE n_complete > 0 GROUP BY ALL
) GROUP BY universe
"""
"""Per universe: its finished tasks and, with one run per universe, the fewest
configurations that finished any one task."""

_OUTSIDE_SQL = """
CREATE OR REPLACE TEMP TABLE task_outside AS
WITH done AS (SELECT DISTINCT config_id, universe, case_id FROM task_cells WHERE n_complete > 0),
ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM done GROUP BY universe),
cnt AS (SELECT universe, case_id, count(*) AS k FROM done GROUP BY universe, case_id)
SELECT DISTINCT s.run_id, s.case_id, s.raw_case_id, s.universe
FROM task_cells s
JOIN cnt ON cnt.universe = s.universe AND cnt.case_id = s.case_id
JOIN ucfg ON ucfg.universe = s.universe
WHERE cnt.k < ucfg.n
"""
"""(run, case) pairs whose task is not done by every configuration of its universe."""

_OUTSIDE_ONE_RUN_SQL = """
CREATE OR REPLACE TEMP TABLE task_outside AS
WITH ucfg AS (SELECT universe, count(DISTINCT config_id) AS n FROM task_cells
              WHERE n_complete > 0 GROUP BY universe)
SELECT any_value(s.run_id) AS run_id, s.case_id, any_value(s.raw_case_id) AS raw_case_id,
       s.universe
FROM task_cells s JOIN ucfg USING (universe)
WHERE s.n_complete > 0
GROUP BY s.universe, s.case_id
HAVING count(*) < any_value(ucfg.n)
"""
"""The same when every universe is one run: a task's rows are one per configuration."""

_OUTSIDE_PER_UNIVERSE_SQL = """
SELECT universe, count(DISTINCT case_id) FROM task_outside GROUP BY universe
"""

COMMON = """NOT EXISTS (
           SELECT 1 FROM task_outside o WHERE o.run_id = s.run_id AND o.case_id = s.case_id)"""
"""SQL predicate over ``task_cells s``: the row's task is common in its universe."""


@dataclass(frozen=True)
class TaskUniverse:
    """The common tasks of one universe (the task set a question reports)."""

    name: str
    kind: str  # benchmark | manifest | run
    runs: list[str]
    config_ids: list[str]
    tasks: int  # tasks some configuration completed
    common: int  # tasks every configuration of the universe completed

    def as_dict(self) -> dict[str, Any]:
        return {"universe": self.name, "kind": self.kind, "runs": self.runs,
                "configurations": len(self.config_ids), "tasks": self.tasks,
                "common_tasks": self.common}

    def sentence(self) -> str:
        runs = ", ".join(self.runs) if len(self.runs) <= 3 else f"{len(self.runs)} runs"
        left = f" ({self.tasks - self.common} left out)" if self.common < self.tasks else ""
        return (f"Tasks: universe {self.name} ({self.kind}; {runs}): {self.common:,} common "
                f"task(s) of {self.tasks:,}{left}, {len(self.config_ids)} configuration(s).")


@dataclass
class Staged:
    """What staging the task rows found out about the selection's shape."""

    one_run: bool  # every task universe is one run
    n_outside: int  # (run, case) pairs outside the common-task set
    config_runs: dict[str, set[str]]  # config_id -> runs it appears in
    config_universes: dict[str, set[str]]  # config_id -> universes it appears in
    universes: list[TaskUniverse] = field(default_factory=list)
    trial_counts: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)
    """(config_id, run_id) -> its complete, invalid and infra-error trials (every selected
    trial, on common tasks or not)."""

    @property
    def common(self) -> str:
        """SQL predicate over ``task_cells s``: the task is common (TRUE when all are)."""
        return COMMON if self.n_outside else "TRUE"

    @property
    def one_universe_per_config(self) -> bool:
        return all(len(u) == 1 for u in self.config_universes.values())


def _joins(filters: Filters, by_cols: list[str], universe: bool = False) -> str:
    joins = ""
    if by_cols or filters.needs_cases or universe:
        joins += "\n  LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id"
    if any(b.startswith(CONDITION_PREFIX) for b in by_cols):
        joins += "\n  LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id"
    if filters.needs_runs or universe:
        joins += "\n  LEFT JOIN runs r ON r.run_id = t.run_id"
    return joins


def _shape(con: duckdb.DuckDBPyConnection) -> Staged:
    runs: dict[str, set[str]] = {}
    kinds: dict[str, str] = {}
    configs: dict[str, list[str]] = {}
    config_runs: dict[str, set[str]] = {}
    config_universes: dict[str, set[str]] = {}
    done_in: dict[tuple[str, str], int] = {}
    counts: dict[tuple[str, str], list[int]] = {}
    for universe, cid, run, kind, done, *numbers in con.execute(_UNIVERSES_SQL).fetchall():
        runs.setdefault(universe, set()).add(run)
        kinds[universe] = min(kinds.get(universe, kind), kind)
        config_runs.setdefault(cid, set()).add(run)
        config_universes.setdefault(cid, set()).add(universe)
        done_in[(universe, cid)] = done_in.get((universe, cid), 0) + done
        acc = counts.setdefault((cid, run), [0, 0, 0])
        for i, n in enumerate(numbers):
            acc[i] += int(n or 0)
    for (universe, cid), done in sorted(done_in.items()):
        if done > 0:
            configs.setdefault(universe, []).append(cid)
    one_run = all(len(r) == 1 for r in runs.values())
    per_universe = {u: (fewest, n) for u, fewest, n in con.execute(_TASKS_SQL).fetchall()}
    st = Staged(one_run, 0, config_runs, config_universes,
                trial_counts={k: (c[0], c[1], c[2]) for k, c in counts.items()})
    if not (one_run and all(f == len(configs.get(u, [])) for u, (f, _) in per_universe.items())):
        con.execute(_OUTSIDE_ONE_RUN_SQL if one_run else _OUTSIDE_SQL)
        st.n_outside = con.execute("SELECT count(*) FROM task_outside").fetchall()[0][0]
    outside = dict(con.execute(_OUTSIDE_PER_UNIVERSE_SQL).fetchall()) if st.n_outside else {}
    st.universes = [TaskUniverse(u, kinds[u], sorted(runs[u]), sorted(configs.get(u, [])),
                                 per_universe.get(u, (0, 0))[1],
                                 per_universe.get(u, (0, 0))[1] - outside.get(u, 0))
                    for u in sorted(runs)]
    return st


def stage(con: duckdb.DuckDBPyConnection, filters: Filters, by_cols: list[str],
          from_trials: bool = False) -> Staged:
    """Write ``task_cells`` (and ``task_outside``) for the selection; see the module doc.
    ``filters`` must be resolved (``scope.resolve``)."""
    where, params = filters.where()
    by_sel = "".join(f',\n    {slice_sql(b)} AS "{b}"' for b in by_cols)  # fixed column map
    counts = (COUNTS_FROM_TRIALS if filters.needs_trials or from_trials else COUNTS_FROM_ROLLUP)
    column, in_json = con.execute(
        "SELECT count(benchmark), count(json_extract_string(labels_json, '$.benchmark')) "
        "FROM cases").fetchall()[0]
    # The universe's benchmark part, as filters.UNIVERSE_SQL reads it: the labels_json
    # fallback costs a JSON parse per row, so it is left out when no case needs it.
    bench = case_label("benchmark") if in_json else "c.benchmark"
    labelled = column or in_json
    changed = con.execute(_CHANGED_ANYWHERE_SQL).fetchall()[0][0]
    con.execute((_TASK_SQL if changed else _TASK_ONE_VERSION_SQL).format(
        counts=counts.format(by_sel=by_sel, joins=_joins(filters, by_cols), where=where,
                             trials=TRIALS),
        universe=f"coalesce({bench}, r.manifest_id, k.run_id)" if labelled
        else "coalesce(r.manifest_id, k.run_id)",
        universe_kind=(f"CASE WHEN {bench} IS NOT NULL THEN 'benchmark' " if labelled
                       else "CASE ") + "WHEN r.manifest_id IS NOT NULL THEN 'manifest' "
                                       "ELSE 'run' END",
        cases="\nLEFT JOIN cases c ON c.run_id = k.run_id AND c.case_id = k.case_id"
        if labelled else ""), params)
    return _shape(con)


def drop(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DROP TABLE IF EXISTS task_cells")
    con.execute("DROP TABLE IF EXISTS task_outside")


@contextmanager
def staged(con: duckdb.DuckDBPyConnection, filters: Filters, by_cols: list[str],
           from_trials: bool = False) -> Iterator[Staged]:
    """``stage`` for the duration of a block; the temporary tables are dropped after."""
    try:
        yield stage(con, filters, by_cols, from_trials)
    finally:
        drop(con)


def joins(filters: Filters, by_cols: list[str], universe: bool = False) -> str:
    """The case/run joins a trial query needs for ``filters``, the slice columns and
    (``universe``) the task universe expression."""
    return _joins(filters, by_cols, universe)


# ------------------------------------------------------------------ task versions

_VERSIONS_SQL = """
SELECT universe, raw_case_id, list(DISTINCT fingerprint ORDER BY fingerprint)
FROM task_cells WHERE fingerprint IS NOT NULL
GROUP BY ALL HAVING count(DISTINCT fingerprint) > 1 ORDER BY ALL
"""

_CHANGES_SQL = """
SELECT case_id, list(DISTINCT case_fingerprint ORDER BY case_fingerprint)
FROM {rel} WHERE case_fingerprint IS NOT NULL
GROUP BY case_id HAVING count(DISTINCT case_fingerprint) > 1 ORDER BY case_id
"""  # noqa: S608 -- {rel} is an internal relation name


@dataclass(frozen=True)
class TaskVersions:
    """One case graded by more than one evaluator (its fingerprints, short)."""

    case_id: str
    fingerprints: list[str]
    universe: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "universe": self.universe,
                "fingerprints": self.fingerprints}


def _short(fps: list[str]) -> list[str]:
    return [fp[:12] for fp in fps]


def versions(con: duckdb.DuckDBPyConnection) -> list[TaskVersions]:
    """The cases of the staged ``task_cells`` that changed evaluator: each version is a
    task of its own (``case@<fingerprint>``), named here so a reader sees why."""
    return [TaskVersions(case, _short(fps), universe)
            for universe, case, fps in con.execute(_VERSIONS_SQL).fetchall()]


def version_warning(changed: list[TaskVersions]) -> list[str]:
    if not changed:
        return []
    named = ", ".join(c.case_id for c in changed[:8]) + (" …" if len(changed) > 8 else "")
    return [f"evaluator changed for {len(changed)} case(s) ({named}): each evaluator version "
            "is a task of its own (case@fingerprint), never pooled"]


def evaluator_changes(con: duckdb.DuckDBPyConnection, rel: str, allow: bool) -> list[str]:
    """Refuse to pair a case across evaluator fingerprints in the staged trial relation
    ``rel`` (columns ``case_id``, ``case_fingerprint``) unless ``allow``; then the notes
    that say the comparison spans a changed evaluator."""
    from analysis.errors import AnalysisError

    changed = [TaskVersions(c, _short(fps))
               for c, fps in con.execute(_CHANGES_SQL.format(rel=rel)).fetchall()]
    if not changed:
        return []
    named = ", ".join(f"{c.case_id} ({' → '.join(c.fingerprints)})" for c in changed[:5])
    more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
    if not allow:
        raise AnalysisError(
            f"the evaluator changed for {len(changed)} case(s) between the compared trials: "
            f"{named}{more}; these are different task versions (an agent change cannot be told "
            "from a grader change). Select runs of one evaluator, or pass "
            "--allow-evaluator-change to compare anyway (labelled)")
    return [f"EVALUATOR CHANGED (--allow-evaluator-change): {len(changed)} case(s) compared "
            f"across evaluator fingerprints: {named}{more}; a difference may be the grader's"]
