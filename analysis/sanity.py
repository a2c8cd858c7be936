"""The seed's input checks, as named warnings with counts (summarize and the report).

"Don't trust the table until its inputs are checked" (the user's source doc lists the
checks as shell one-liners). Each check here is a named warning with counts, shown in
``summarize`` (terminal and JSON) and the report:

- ``unequal_runs``: on some task, configurations have different numbers of trials (a
  configuration with more repetitions of a task weighs it more in a trial-level rate);
- ``empty_success``: a solved/accepted trial with 0 steps or 0 output tokens (a success
  nobody worked for is usually a broken task or a logging gap). Baselines (``null``,
  ``reference``) make no model calls by design and are not checked;
- ``infra_share``: a configuration whose infra errors exceed ``INFRA_SHARE`` of its
  complete trials (the comparison then rests on whatever the environment let through).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analysis.data import TRIALS
from analysis.filters import UNIVERSE_SQL, Filters
from analysis.tasks import joins

if TYPE_CHECKING:
    import duckdb

INFRA_SHARE = 0.10
"""Above this share of infra errors among a configuration's complete trials, warn."""

_UNEQUAL_SQL = """
WITH n AS (
  SELECT {universe} AS universe, t.case_id, t.config_id, count(*) AS n
  FROM {trials} t{joins}
  WHERE t.complete AND {where}
  GROUP BY ALL
)
SELECT universe, case_id, list((config_id, n) ORDER BY config_id)
FROM n GROUP BY ALL HAVING min(n) <> max(n) ORDER BY universe, case_id
"""  # noqa: S608 -- fixed fragments only; values are parameters

_UNEQUAL_CELLS_SQL = """
WITH n AS (SELECT universe, raw_case_id AS case_id, config_id, sum(n_complete) AS n
           FROM task_cells WHERE n_complete > 0 GROUP BY ALL)
SELECT universe, case_id, list((config_id, n) ORDER BY config_id)
FROM n GROUP BY ALL HAVING min(n) <> max(n) ORDER BY universe, case_id
"""
"""The same from the staged ``task_cells`` (``analysis.tasks``), when a question has them."""

_PER_CONFIG_SQL = """
SELECT t.config_id,
       count(*) FILTER (WHERE t.solved AND (t.steps = 0 OR t.output_tokens = 0)
                        AND coalesce(cf.agent_kind NOT IN ('null', 'reference'), TRUE)),
       count(*) FILTER (WHERE t.outcome = 'infra_error'), count(*)
FROM {trials} t{joins}
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE t.complete AND {where}
GROUP BY t.config_id ORDER BY t.config_id
"""  # noqa: S608 -- fixed fragments only; values are parameters


@dataclass(frozen=True)
class SanityWarning:
    """One named check that failed, with its counts."""

    check: str  # unequal_runs | empty_success | infra_share
    count: int
    message: str
    config_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "config_id": self.config_id, "count": self.count,
                "message": self.message}


def sanity(con: duckdb.DuckDBPyConnection, filters: Filters, staged: bool = False
           ) -> list[SanityWarning]:
    """The checks of the module doc over the selected trials (``filters`` resolved).
    ``staged``: the selection's ``task_cells`` exist (inside ``tasks.staged``), so the
    per-task counts come from them instead of a pass over the trials."""
    where, params = filters.where()
    out: list[SanityWarning] = []
    unequal = (con.execute(_UNEQUAL_CELLS_SQL) if staged else con.execute(_UNEQUAL_SQL.format(
        universe=UNIVERSE_SQL, trials=TRIALS, joins=joins(filters, [], universe=True),
        where=where), params)).fetchall()
    if unequal:
        _, case, counts = unequal[0]
        example = ", ".join(f"{cid[:12]}: {n}" for cid, n in counts)
        out.append(SanityWarning("unequal_runs", len(unequal), (
            f"unequal runs per task: on {len(unequal)} task(s) configurations have different "
            f"numbers of complete trials (e.g. {case}: {example}); trial-level rates weigh "
            "those tasks unequally")))
    rows = con.execute(_PER_CONFIG_SQL.format(trials=TRIALS, joins=joins(filters, []),
                                              where=where), params).fetchall()
    for cid, empty, infra, complete in rows:
        if empty:
            out.append(SanityWarning("empty_success", int(empty), (
                f"{cid[:12]}: {empty} solved/accepted trial(s) with 0 steps or 0 output "
                "tokens: check the task and the usage logging"), cid))
        if complete and infra / complete > INFRA_SHARE:
            out.append(SanityWarning("infra_share", int(infra), (
                f"{cid[:12]}: {infra} of {complete} complete trials are infra errors "
                f"({infra / complete:.0%} > {INFRA_SHARE:.0%}): the comparison is unreliable"),
                cid))
    return out
