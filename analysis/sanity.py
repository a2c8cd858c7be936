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
  complete trials (the comparison then rests on whatever the environment let through);
- ``model_substituted``: trials whose agent asked the gateway for a model other than the
  configuration's ``model`` label (the trial measured that model; docs/agents.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from analysis.data import TRIALS
from analysis.filters import UNIVERSE_SQL, Filters
from analysis.tasks import joins

if TYPE_CHECKING:
    import duckdb

    from analysis.checks import TrialCounts

INFRA_SHARE = 0.10
"""Above this share of infra errors among a configuration's complete trials, warn."""

_UNEQUAL = """
SELECT count(*), min((universe, case_id)) FROM (
  SELECT universe, case_id FROM ({counts}) GROUP BY ALL HAVING min(n) <> max(n)
)
"""
"""Tasks on which configurations have different numbers of complete trials: how many, and
the first (by universe, case), the warning's example."""

_EXAMPLE = """
SELECT config_id, n FROM ({counts}) WHERE universe = ? AND case_id = ? ORDER BY config_id
"""

_SUBSTITUTED = """
SELECT t.config_id, count(*), any_value(cf.model), any_value(t.gateway_models_json)
FROM {trials} t{joins}
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE {where} AND t.model_substituted
GROUP BY t.config_id ORDER BY t.config_id
"""  # noqa: S608 -- fixed fragments only; values are parameters
"""Configurations with trials that called another model than their label: few rows, skipped
by row group when the Parquet statistics show none."""

_TRIAL_COUNTS = """
  SELECT {universe} AS universe, t.case_id, t.config_id, count(*) AS n
  FROM {trials} t{joins}
  WHERE t.complete AND {where}
  GROUP BY ALL"""  # noqa: S608 -- fixed fragments only; values are parameters

_CELL_COUNTS = """
  SELECT universe, raw_case_id AS case_id, config_id, sum(n_complete) AS n
  FROM task_cells WHERE n_complete > 0 GROUP BY ALL"""
"""The same from the staged ``task_cells`` (``analysis.tasks``), when a question has them."""

_ONE_CELL_COUNTS = """
  SELECT universe, raw_case_id AS case_id, config_id, n_complete AS n
  FROM task_cells WHERE n_complete > 0"""
"""The same when each cell is already one (universe, case, configuration): one run per
universe and no slice (``Staged.one_run``), so there is nothing to add up."""


@dataclass(frozen=True)
class SanityWarning:
    """One named check that failed, with its counts."""

    check: str  # unequal_runs | empty_success | infra_share | model_substituted
    count: int
    message: str
    config_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "config_id": self.config_id, "count": self.count,
                "message": self.message}


def sanity(con: duckdb.DuckDBPyConnection, filters: Filters, staged: bool = False,
           counts: Mapping[str, TrialCounts] | None = None, one_cell: bool = False
           ) -> list[SanityWarning]:
    """The checks of the module doc over the selected trials (``filters`` resolved).
    ``staged``: the selection's ``task_cells`` exist (inside ``tasks.staged``), so the
    per-task counts come from them instead of a pass over the trials (``one_cell``: each
    cell is one task of one configuration). ``counts``: the selection's
    ``analysis.checks`` counts when the caller has them (else counted here)."""
    from analysis.checks import counts as count_trials

    where, params = filters.where()
    per_task = ((_ONE_CELL_COUNTS if one_cell else _CELL_COUNTS) if staged else
                _TRIAL_COUNTS.format(universe=UNIVERSE_SQL, trials=TRIALS,
                                     joins=joins(filters, [], universe=True), where=where))
    given = [] if staged else params
    out: list[SanityWarning] = []
    (n, first), = con.execute(_UNEQUAL.format(counts=per_task), given).fetchall()
    if n:
        universe, case = first
        example = con.execute(_EXAMPLE.format(counts=per_task),
                              [*given, universe, case]).fetchall()
        listed = ", ".join(f"{cid[:12]}: {k}" for cid, k in example)
        out.append(SanityWarning("unequal_runs", n, (
            f"unequal runs per task: on {n} task(s) configurations have different "
            f"numbers of complete trials (e.g. {case}: {listed}); trial-level rates weigh "
            "those tasks unequally")))
    found = count_trials(con, filters) if counts is None else counts
    for cid in sorted(found):
        c = found[cid]
        if c.empty_success:
            out.append(SanityWarning("empty_success", c.empty_success, (
                f"{cid[:12]}: {c.empty_success} solved/accepted trial(s) with 0 steps or 0 "
                "output tokens: check the task and the usage logging"), cid))
        if c.complete and c.infra / c.complete > INFRA_SHARE:
            out.append(SanityWarning("infra_share", c.infra, (
                f"{cid[:12]}: {c.infra} of {c.complete} complete trials are infra errors "
                f"({c.infra / c.complete:.0%} > {INFRA_SHARE:.0%}): the comparison is "
                "unreliable"), cid))
    return out + substituted(con, filters)


def substituted(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[SanityWarning]:
    """One ``model_substituted`` warning per configuration that has such trials."""
    where, params = filters.where()
    sql = _SUBSTITUTED.format(trials=TRIALS, joins=joins(filters, []), where=where)
    out = []
    for cid, n, label, models in con.execute(sql, params).fetchall():
        asked = ", ".join(json.loads(models)) if models else "unknown"
        out.append(SanityWarning("model_substituted", n, (
            f"{cid[:12]}: {n} trial(s) asked the gateway for another model than the label "
            f"{label or '(none)'} (asked for: {asked}): they measure that model"), cid))
    return out
