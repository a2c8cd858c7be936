"""Leaderboard ranks with bootstrap intervals: which configurations are statistically tied.

Per task universe, configurations are ranked by their mean per-task rate on the tasks
where every ranked configuration has a valid trial (the common tasks of ``analysis.tasks``
minus any task one of them has no valid trial on, named). Rank 1 is the best; the rank
interval comes from resampling tasks (``analysis.resampling.rank_intervals``, seeded), and
two configurations whose intervals overlap are listed as tied. Baselines (null,
reference) are reference points, and ineligible candidates (``eligibility.assess``) are
never named best: both are listed with their mean, never ranked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from analysis import resampling, scope, tasks
from analysis.data import CONFIG_KEYS, config_names
from analysis.eligibility import assess, baseline_ids, ineligible_ids
from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

_RATES_SQL = """
SELECT universe, case_id, config_id, sum(n_solved) / sum(n_valid) AS p
FROM task_cells s WHERE {common} AND n_valid > 0
GROUP BY ALL HAVING sum(n_valid) > 0
ORDER BY universe, case_id, config_id
"""


class Ranks(RowsResult):
    """Per configuration × universe: mean rate, rank, rank interval, ties."""

    TASK_SETS: ClassVar[bool] = True
    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "universe": "String", "role": "String", "tasks": "Int64",
        "task_mean": "Float64", "rank": "Int64", "rank_low": "Int64", "rank_high": "Int64",
        "tied_with": "List(String)"}


def _rank_universe(universe: str, rates: dict[str, dict[str, float]], ranked: list[str],
                   seed: int, resamples: int) -> tuple[list[dict], list[str]]:
    task_ids = sorted(set.intersection(*(set(rates[c]) for c in ranked)))
    dropped = sorted(set().union(*(set(rates[c]) for c in ranked)) - set(task_ids))
    notes = ([f"{universe}: {len(dropped)} common task(s) without a valid trial of every "
              "ranked configuration left out of the ranks"] if dropped else [])
    if not task_ids:
        raise AnalysisError(f"{universe}: no task has a valid trial of every configuration "
                            "to rank; narrow the selection with --config")
    res = resampling.rank_intervals([[rates[c][t] for c in ranked] for t in task_ids],
                                    seed=seed, resamples=resamples)
    rows = []
    for j, cid in enumerate(ranked):
        lo, hi = res["low"][j], res["high"][j]
        tied = [ranked[k] for k in range(len(ranked)) if k != j and lo is not None
                and res["low"][k] <= hi and lo <= res["high"][k]]
        rows.append({"config_id": cid, "universe": universe, "role": "candidate",
                     "tasks": len(task_ids), "task_mean": res["means"][j],
                     "rank": res["rank"][j], "rank_low": lo, "rank_high": hi,
                     "tied_with": tied})
    return rows, notes


def ranks(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
          seed: int = resampling.SEED, resamples: int = resampling.RESAMPLES) -> Ranks:
    """Ranks with bootstrap rank intervals per task universe (see the module docstring)."""
    filters = scope.resolve(con, filters)
    with tasks.staged(con, filters, []) as st:
        found = con.execute(_RATES_SQL.format(common=st.common)).fetchall()
        names = config_names(con, "SELECT DISTINCT run_id, config_id FROM task_cells")
    per: dict[str, dict[str, dict[str, float]]] = {}
    for universe, case_id, cid, p in found:
        per.setdefault(universe, {}).setdefault(cid, {})[case_id] = p
    roles = assess(con, filters, {cid for u in per.values() for cid in u})
    baselines = baseline_ids(roles)
    unranked = baselines | ineligible_ids(roles)
    rows: list[dict] = []
    notes: list[str] = []
    for universe in sorted(per):
        ranked = sorted(c for c in per[universe] if c not in unranked)
        if ranked:
            got, extra = _rank_universe(universe, per[universe], ranked, seed, resamples)
            rows += got
            notes += extra
        for cid in sorted(set(per[universe]) & unranked):
            vals = list(per[universe][cid].values())
            rows.append({"config_id": cid, "universe": universe,
                         "role": "baseline" if cid in baselines else "ineligible",
                         "tasks": len(vals), "task_mean": sum(vals) / len(vals), "rank": None,
                         "rank_low": None, "rank_high": None, "tied_with": []})
    for r in rows:
        r.update({k: names[r["config_id"]][k] for k in CONFIG_KEYS[1:]})
    notes += [f"INELIGIBLE, not ranked: {cid[:12]}: {'; '.join(e.reasons)}"
              for cid, e in sorted(roles.items()) if e.reasons]
    rows.sort(key=lambda r: (r["universe"], r["role"] != "candidate",
                             r["rank"] if r["rank"] is not None else 0, -r["task_mean"],
                             r["config_id"]))
    notes.append(f"rank intervals: {resamples} bootstrap resamples of tasks, seed {seed}; "
                 "overlapping intervals are statistical ties")
    return Ranks(rows, [], notes, universes=st.universes)
