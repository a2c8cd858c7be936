"""The per-configuration counts the eligibility gates and the seed's sanity checks read.

Both used to scan the selected trials on their own, each per question that asked. Here one
pass counts, per configuration and run, what either needs: complete trials, invalid and
infra-error ones, trials that leaked a run secret, and empty successes (accepted with 0
steps or 0 output tokens; baselines make no model calls and are not counted).
``analysis.eligibility.gates`` and ``analysis.sanity.sanity`` take these counts.

Inside ``analysis.tasks.staged`` the task cells already hold the complete, invalid and
infra-error counts of every selected trial, so ``staged_counts`` adds only the two counts
the cells lack, from the few trials that have them (a filter DuckDB can check against the
Parquet statistics): the same numbers, without a second pass over every trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from analysis.data import TRIALS
from analysis.filters import Filters
from analysis.tasks import joins

if TYPE_CHECKING:
    import duckdb

    from analysis.tasks import Staged

EMPTY_SUCCESS_SQL = ("t.solved AND (t.steps = 0 OR t.output_tokens = 0) "
                     "AND coalesce(cf.agent_kind NOT IN ('null', 'reference'), TRUE)")
"""An accepted trial nobody worked for (aliases t: trials, cf: its configs row)."""
LEAKED_SQL = "t.secrets_leaked > 0"

_ALL_SQL = """
SELECT t.config_id, t.run_id,
       count(*) FILTER (WHERE t.complete) AS complete,
       count(*) FILTER (WHERE t.complete AND t.outcome = 'invalid') AS invalid,
       count(*) FILTER (WHERE t.complete AND t.outcome = 'infra_error') AS infra,
       count(*) FILTER (WHERE {leaked}) AS leaked,
       count(*) FILTER (WHERE {empty}) AS empty
FROM {trials} t{joins}
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE {where}
GROUP BY t.config_id, t.run_id
"""  # noqa: S608 -- fixed fragments only; values are parameters

_FEW_SQL = """
SELECT t.config_id,
       count(*) FILTER (WHERE {leaked}) AS leaked,
       count(*) FILTER (WHERE {empty}) AS empty
FROM {trials} t{joins}
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE {where}
  AND ({leaked} OR (t.solved AND (t.steps = 0 OR t.output_tokens = 0)))
GROUP BY t.config_id
"""  # noqa: S608 -- fixed fragments only; values are parameters
"""Only the trials that leaked or look like an empty success: few, and skipped by row group
when the Parquet statistics show none (no leak, no zero steps or tokens)."""

@dataclass(frozen=True)
class TrialCounts:
    """One configuration's selected trials, counted for the gates and the sanity checks."""

    complete: int = 0
    invalid: int = 0  # complete, outcome invalid
    infra: int = 0  # complete, outcome infra_error
    leaked: int = 0  # any trial whose evidence held a run secret
    empty_success: int = 0  # accepted with 0 steps or 0 output tokens, baselines aside
    runs: tuple[str, ...] = ()  # the runs its selected trials come from, sorted


def _collect(rows: list[tuple], extra: dict[str, tuple[int, int]]) -> dict[str, TrialCounts]:
    """(config, run, complete, invalid, infra[, leaked, empty]) rows → per configuration."""
    sums: dict[str, list[int]] = {}
    runs: dict[str, set[str]] = {}
    for cid, run, *numbers in rows:
        acc = sums.setdefault(cid, [0] * 5)
        for i, n in enumerate(numbers):
            acc[i] += int(n or 0)
        runs.setdefault(cid, set()).add(run)
    for cid, (leaked, empty) in extra.items():
        acc = sums.setdefault(cid, [0] * 5)
        acc[3] += int(leaked)
        acc[4] += int(empty)
    return {cid: TrialCounts(complete, invalid, infra, leaked, empty,
                             tuple(sorted(runs.get(cid, ()))))
            for cid, (complete, invalid, infra, leaked, empty) in sums.items()}


def counts(con: duckdb.DuckDBPyConnection, filters: Filters) -> dict[str, TrialCounts]:
    """config_id → its counts, in one pass over the trials ``filters`` (resolved) selects."""
    where, params = filters.where()
    sql = _ALL_SQL.format(trials=TRIALS, joins=joins(filters, []), where=where,
                          leaked=LEAKED_SQL, empty=EMPTY_SUCCESS_SQL)
    return _collect(con.execute(sql, params).fetchall(), {})


def staged_counts(con: duckdb.DuckDBPyConnection, filters: Filters, staged: Staged
                  ) -> dict[str, TrialCounts]:
    """The same counts inside ``analysis.tasks.staged``: complete, invalid and infra from
    what staging counted (``Staged.trial_counts``: every selected trial is in exactly one
    task cell, incomplete ones included), leaks and empty successes from the trials that
    have them."""
    where, params = filters.where()
    few = _FEW_SQL.format(trials=TRIALS, joins=joins(filters, []), where=where,
                          leaked=LEAKED_SQL, empty=EMPTY_SUCCESS_SQL)
    extra = {cid: (leaked, empty) for cid, leaked, empty in con.execute(few, params).fetchall()}
    return _collect([(cid, run, *n) for (cid, run), n in staged.trial_counts.items()], extra)
