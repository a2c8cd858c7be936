"""Scoping a question: resolving selectors, and the task universes a selection holds.

Every question starts with ``resolve(con, filters)``: names given to ``--config``,
``--model`` and ``--harness`` become configuration ids, and a ``--source``,
``--benchmark`` or ``--universe`` that names nothing in the warehouse is an
``AnalysisError`` listing what exists (so a typo never reads as "no data").

A *task universe* is the set of tasks configurations can share: a benchmark label, else
a manifest, else a run (``filters.UNIVERSE_SQL``). ``universes(con, filters)`` lists the
universes of a selection with their configurations and tasks; questions that compare
configurations (``compare``, ``pareto``, ``matrix``, ``rank``, ``plan``) never compare
across universes and use ``one_universe`` to ask for ``--universe`` or ``--run`` when the
choice matters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from analysis.data import config_rows, resolve_config
from analysis.errors import AnalysisError
from analysis.filters import UNIVERSE_KIND_SQL, UNIVERSE_SQL, Filters, case_label

if TYPE_CHECKING:
    import duckdb


def _distinct(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    return sorted(str(v) for (v,) in con.execute(sql).fetchall() if v is not None)


def _unknown(option: str, given: tuple[str, ...], known: list[str], what: str) -> None:
    missing = [g for g in given if g not in known]
    if missing:
        listed = ", ".join(known[:12]) + (f" and {len(known) - 12} more" if len(known) > 12
                                          else "")
        raise AnalysisError(
            f"--{option} {missing[0]!r}: no {what} of that name in the warehouse; "
            f"known: {listed or 'none'}")


def _config_ids(con: duckdb.DuckDBPyConnection, filters: Filters) -> tuple[str, ...]:
    """The configurations named by --config, --model and --harness (their intersection)."""
    rows = config_rows(con, filters.without_config_selectors())
    if not rows:
        raise AnalysisError(f"no trials match the filters {filters.as_dict()}; check "
                            "--run/--source/--label or ingest a run first")
    chosen: set[str] | None = None

    def narrow(ids: set[str]) -> None:
        nonlocal chosen
        chosen = ids if chosen is None else chosen & ids

    if filters.configs:
        narrow({resolve_config(rows, name)["config_id"] for name in filters.configs})
    for option, key, values in (("model", "model", filters.models),
                                ("harness", "harness", filters.harnesses)):
        if values:
            known = sorted({str(r[key]) for r in rows if r.get(key) is not None})
            _unknown(option, values, known, f"{key} among the selected trials")
            narrow({r["config_id"] for r in rows if r.get(key) in values})
    if not chosen:
        raise AnalysisError("--config/--model/--harness select no configuration together; "
                            "drop one of them (list configurations with trialhouse summarize)")
    return tuple(sorted(chosen))


def resolve(con: duckdb.DuckDBPyConnection, filters: Filters | None) -> Filters:
    """``filters`` with configuration selectors resolved to ids and every selector checked
    against the warehouse (AnalysisError naming the option and the known values).
    Filters it resolved come back unchanged (a report resolves its selection once)."""
    filters = filters or Filters()
    if filters.unscored_present is not None and (filters.config_ids is not None
                                                 or not filters.names_configs):
        return filters  # resolved already
    if filters.sources:
        _unknown("source", filters.sources,
                 _distinct(con, "SELECT DISTINCT source_format FROM runs"), "source")
    if filters.benchmarks:
        _unknown("benchmark", filters.benchmarks,
                 _distinct(con, f"SELECT DISTINCT {case_label('benchmark')} FROM cases c"),  # noqa: S608
                 "benchmark")
    if filters.universes:
        known = [u.name for u in universes(con, replace(
            filters, universes=(), configs=(), models=(), harnesses=(), config_ids=None,
            cost_coverage="all"))]
        _unknown("universe", filters.universes, known, "task universe in this selection")
    if filters.names_configs and filters.config_ids is None:
        filters = replace(filters, config_ids=_config_ids(con, filters))
    if filters.cost_coverage == "complete":
        coverage_notes(con, filters)  # none known: one clear error for every question
    if filters.unscored_present is None:
        (n,), = con.execute("SELECT count(*) FROM cases WHERE scored = FALSE").fetchall()
        filters = replace(filters, unscored_present=n > 0)
    if filters.regrades_present is None:
        (n,), = con.execute("SELECT count(*) FROM runs WHERE regrade_of IS NOT NULL").fetchall()
        filters = replace(filters, regrades_present=n > 0)
    return filters


@dataclass(frozen=True)
class Universe:
    """One task universe of a selection: its kind, runs, configurations and tasks."""

    name: str
    kind: str  # benchmark | manifest | run
    runs: tuple[str, ...]
    config_ids: tuple[str, ...]
    tasks: int  # tasks with a complete trial of some configuration

    def as_dict(self) -> dict[str, Any]:
        return {"universe": self.name, "kind": self.kind, "runs": list(self.runs),
                "configurations": len(self.config_ids), "tasks": self.tasks}

    def describe(self) -> str:
        runs = (", ".join(self.runs) if len(self.runs) <= 3 else f"{len(self.runs)} runs")
        return (f"{self.name} ({self.kind}; {runs}): {len(self.config_ids)} configuration(s), "
                f"{self.tasks} task(s)")


_UNIVERSES_SQL = """
SELECT {universe} AS universe, min({kind}) AS kind, list(DISTINCT t.run_id ORDER BY t.run_id),
       list(DISTINCT t.config_id ORDER BY t.config_id),
       count(DISTINCT t.case_id) FILTER (WHERE {complete})
FROM {source} t
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN runs r ON r.run_id = t.run_id
WHERE {where}
GROUP BY 1
ORDER BY 1
"""  # fixed fragments only; values are parameters
"""Over ``task_rollup`` (one row per run × configuration × case) unless a filter reads a
trial's own columns."""


def universes(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> list[Universe]:
    """The task universes of the selected trials (resolve the filters first)."""
    filters = filters or Filters()
    where, params = filters.where()
    rollup = not filters.needs_trials
    sql = _UNIVERSES_SQL.format(universe=UNIVERSE_SQL, kind=UNIVERSE_KIND_SQL, where=where,
                                source="task_rollup" if rollup else "trials",
                                complete="t.complete > 0" if rollup else "t.complete")
    return [Universe(str(u), str(k), tuple(r), tuple(c), int(n or 0))
            for u, k, r, c, n in con.execute(sql, params).fetchall()]


def one_universe(found: list[Universe], question: str) -> Universe:
    """The single universe of a question that compares configurations, or an error that
    lists the universes and names the options that choose one."""
    if len(found) == 1:
        return found[0]
    if not found:
        raise AnalysisError(f"{question}: no trials match the filters; check --run/--source/"
                            "--label or ingest a run first")
    listed = "; ".join(u.describe() for u in found[:8])
    more = f"; and {len(found) - 8} more" if len(found) > 8 else ""
    raise AnalysisError(
        f"{question}: the selection holds {len(found)} task universes ({listed}{more}); "
        "configurations of different universes share no tasks, so choose one with "
        f"--universe NAME (e.g. --universe {found[0].name}) or --run RUN")


def universe_of(found: list[Universe], config_id: str) -> list[Universe]:
    return [u for u in found if config_id in u.config_ids]


_COVERAGE_SQL = """
SELECT count(*) FILTER (WHERE t.cost_usd IS NOT NULL), count(*)
FROM trials t
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN runs r ON r.run_id = t.run_id
WHERE t.complete AND {where}
"""


def coverage_notes(con: duckdb.DuckDBPyConnection, filters: Filters) -> list[str]:
    """With ``--cost-coverage complete``: how many complete trials remain (known cost) of
    how many selected, as a note; nothing otherwise."""
    if filters.cost_coverage != "complete":
        return []
    where, params = replace(filters, cost_coverage="all").where()
    known, total = con.execute(_COVERAGE_SQL.format(where=where), params).fetchall()[0]
    if not known:
        raise AnalysisError(
            f"--cost-coverage complete: none of the {total:,} selected trials has a known "
            "cost; drop the option, or pass a prices file at ingest (--prices) so tokens "
            "are priced")
    return [f"cost coverage complete: {known:,} of {total:,} complete trials have a known cost "
            "and remain; every number here is computed on them alone"]


def choose_universe(con: duckdb.DuckDBPyConnection, filters: Filters, question: str,
                    anchor: str | None = None) -> tuple[Filters, list[str], str | None]:
    """Narrow a question that compares configurations to one task universe.

    Unchanged when the selection holds one universe. Otherwise the universe of ``anchor``
    (a configuration the user named, when it lives in exactly one), else the only
    universe with two or more configurations; else an error listing the universes and
    naming ``--universe``/``--run``. Returns the narrowed filters, a note saying what was
    chosen and what was left out, and the universe's name (None when nothing matched).
    """
    found = universes(con, filters)
    if len(found) <= 1:
        return filters, [], found[0].name if found else None
    home = universe_of(found, anchor) if anchor else []
    comparable = [u for u in found if len(u.config_ids) >= 2]
    if len(home) == 1:
        chosen, why = home[0], "the baseline's"
    elif not anchor and len(comparable) == 1:
        chosen, why = comparable[0], "the only one with two or more configurations"
    else:
        one_universe(found, question)
        raise AssertionError("unreachable")  # one_universe raised
    others = [u for u in found if u.name != chosen.name]
    left = sum(len(set(u.config_ids) - set(chosen.config_ids)) for u in others)
    note = (f"{question} within task universe {chosen.name} ({why}); {len(others)} other "
            f"universe(s) with {left} configuration(s) left out: "
            + ", ".join(u.name for u in others[:5]) + (" …" if len(others) > 5 else "")
            + " (choose with --universe)")
    return replace(filters, universes=(chosen.name,)), [note], chosen.name
