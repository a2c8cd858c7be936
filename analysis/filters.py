"""Which trials an analysis looks at: runs, configurations, sources, benchmarks, task
universes, a time window, case labels, holdout and cost coverage.

Turned into a parameterised SQL WHERE clause (values are never interpolated). Selectors
that name configurations (``configs``, ``models``, ``harnesses``) are resolved to
configuration ids against the warehouse by ``analysis.scope.resolve`` before a query is
built; every question calls it first. What a *task* is, and which tasks two
configurations share, is ``analysis.tasks``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Literal

from analysis.errors import AnalysisError

Holdout = Literal["include", "exclude", "only"]
CostCoverage = Literal["all", "complete"]

# Case columns a label filter or a slice may name (mapped, never interpolated from input).
CASE_COLUMNS = ("repository", "familiarity", "task_class", "difficulty", "language",
                "subsystem", "benchmark")
SLICE_COLUMNS = ("task_class", "repository", "difficulty", "language", "familiarity",
                 "subsystem")
CONDITION_PREFIX = "condition."
CONDITION_KEY = re.compile(r"[a-z][a-z0-9_]{0,31}")
"""A named condition's key, as the manifest allows it (docs/rollout.md, "Named conditions"):
``--by condition.<key>`` slices by its value, read from ``configs.conditions_json``."""


def condition_sql(col: str, alias: str = "cf") -> str:
    """``condition.<key>`` as SQL over the configs alias: the key is checked against
    ``CONDITION_KEY`` (a fixed alphabet, so the JSON path is never user text)."""
    key = col.removeprefix(CONDITION_PREFIX)
    if not col.startswith(CONDITION_PREFIX) or not CONDITION_KEY.fullmatch(key):
        raise AnalysisError(f"--by {col!r}: a condition slice is condition.<key> with a key of "
                            "lower-case letters, digits and _ (e.g. condition.cache)")
    return f"json_extract_string({alias}.conditions_json, '$.{key}')"


def case_label(col: str, alias: str = "c") -> str:
    """A task label as SQL: the case column, else the same key in the case's labels_json
    (how an importer that has no column for it stores it). ``col`` is from CASE_COLUMNS."""
    if col not in CASE_COLUMNS:
        raise AnalysisError(f"unknown case column {col!r}")
    return f"coalesce({alias}.{col}, json_extract_string({alias}.labels_json, '$.{col}'))"


UNIVERSE_SQL = f"coalesce({case_label('benchmark')}, r.manifest_id, t.run_id)"
"""The task universe of a trial (aliases t, c, r): its case's benchmark label, else its
run's manifest id, else its run. Tasks are compared only within one universe."""
UNSCORED_SQL = """EXISTS (SELECT 1 FROM cases u WHERE u.scored = FALSE
                  AND u.run_id = t.run_id AND u.case_id = t.case_id)"""
"""The trial's case was not scored in its run (failed or flaky controls; alias t): the one
place "unscored cases are left out" is written. ``t`` may be trials or ``task_rollup``."""

_REGRADED_CELLS = """(SELECT DISTINCT g.run_id, g.regraded_from_run_id AS original_run_id, g.config_id,
        g.case_id, gr.started_at AS regraded_at
    FROM trials g JOIN runs gr ON gr.run_id = g.run_id
    WHERE g.regraded_from_run_id IS NOT NULL{runs})"""
SUPERSEDED_SQL = """(EXISTS (SELECT 1 FROM {cells} g
        WHERE g.original_run_id = t.run_id AND g.config_id = t.config_id AND g.case_id = t.case_id)
    OR EXISTS (SELECT 1 FROM {cells} mine JOIN {cells} later
        ON later.original_run_id = mine.original_run_id AND later.config_id = mine.config_id
           AND later.case_id = mine.case_id AND later.regraded_at > mine.regraded_at
        WHERE mine.run_id = t.run_id AND mine.config_id = t.config_id AND mine.case_id = t.case_id))"""
"""The trial was graded again by a regrade the selection holds (alias t; trials or
``task_rollup``): its (run, configuration, case) was regraded, or a later regrade graded
the same trials again. Analyses read each agent trial once, under the latest evaluator
the selection holds (docs/analysis.md, "Regrades"); ``Filters.all_grades`` reads both."""

UNIVERSE_KIND_SQL = (f"CASE WHEN {case_label('benchmark')} IS NOT NULL THEN 'benchmark' "
                     "WHEN r.manifest_id IS NOT NULL THEN 'manifest' ELSE 'run' END")


def parse_time(value: str | date | datetime | None, name: str) -> datetime | None:
    """``--since``/``--until`` as an aware datetime (a date is its midnight UTC); a bad value
    is an AnalysisError naming the option ``name``."""
    if value is None or isinstance(value, datetime):
        if isinstance(value, datetime) and value.tzinfo is None:
            raise AnalysisError(f"--{name} {value}: give a timezone-aware time (e.g. ...Z)")
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise AnalysisError(
            f"--{name} {text!r}: not an ISO date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _strings(values) -> tuple[str, ...]:
    return tuple(str(v) for v in (values or ()))


@dataclass(frozen=True)
class Filters:
    """Trial selection shared by every analysis (empty = everything).

    ``configs`` (variant name, config id or unique id prefix), ``models`` and
    ``harnesses`` select configurations; ``scope.resolve`` turns them into
    ``config_ids`` (their intersection when several kinds are given). ``sources`` are
    source formats (``trialhouse``, ``runs-jsonl``, ``inspect``, ...), ``benchmarks``
    case benchmark labels, ``universes`` task universes (``UNIVERSE_SQL``).
    ``cost_coverage="complete"`` keeps only trials with a known cost.
    """

    runs: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None  # exclusive
    labels: tuple[tuple[str, str], ...] = ()
    holdout: Holdout = "include"
    configs: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    harnesses: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    benchmarks: tuple[str, ...] = ()
    universes: tuple[str, ...] = ()
    cost_coverage: CostCoverage = "all"
    config_ids: tuple[str, ...] | None = None  # set by scope.resolve
    include_unvalidated: bool = False
    """Also count cases whose controls failed or disagreed (``cases.scored = false``);
    by default they are left out of every question (``UNSCORED_SQL``)."""
    unscored_present: bool | None = None
    """Set by ``scope.resolve``: whether the warehouse holds any unscored case (when it holds
    none, the unscored clause is left out of the SQL: the same rows, less work)."""
    allow_evaluator_change: bool = False
    """Let a paired question (compare, period) pair a case across two evaluator
    fingerprints; otherwise it refuses (``analysis.tasks.evaluator_changes``)."""
    all_grades: bool = False
    """Also read trials a selected regrade graded again (``SUPERSEDED_SQL``); by default
    each agent trial is read once, from its latest regrade in the selection."""
    regrades_present: bool | None = None
    """Set by ``scope.resolve``: whether the warehouse holds a regrade run (when none, the
    superseded clause is left out of the SQL)."""
    pool_conditions: bool = False
    """Let a paired comparison pair a baseline and a candidate that ran under different named
    conditions (``cache: cold`` against ``cache: warm``); otherwise such a candidate is left
    out, or refused when named (``analysis.conditions``)."""

    @classmethod
    def parse(cls, runs=None, since=None, until=None, labels=None,
              holdout: str = "include", configs=None, models=None, harnesses=None,
              sources=None, benchmarks=None, universes=None,
              cost_coverage: str = "all", include_unvalidated: bool = False,
              allow_evaluator_change: bool = False, pool_conditions: bool = False) -> Filters:
        """Build from CLI strings; bad input is an AnalysisError naming the option."""
        pairs = []
        for item in labels or []:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise AnalysisError(f"--label {item!r}: expected key=value, e.g. task_class=bugfix")
            pairs.append((key.strip(), value.strip()))
        if holdout not in ("include", "exclude", "only"):
            raise AnalysisError(f"--holdout {holdout!r}: expected include, exclude or only")
        if cost_coverage not in ("all", "complete"):
            raise AnalysisError(f"--cost-coverage {cost_coverage!r}: expected all or complete")
        return cls(runs=_strings(runs), since=parse_time(since, "since"),
                   until=parse_time(until, "until"), labels=tuple(pairs),
                   holdout=holdout,  # type: ignore[arg-type]
                   configs=_strings(configs), models=_strings(models),
                   harnesses=_strings(harnesses), sources=_strings(sources),
                   benchmarks=_strings(benchmarks), universes=_strings(universes),
                   cost_coverage=cost_coverage,  # type: ignore[arg-type]
                   include_unvalidated=bool(include_unvalidated),
                   allow_evaluator_change=bool(allow_evaluator_change),
                   pool_conditions=bool(pool_conditions))

    @property
    def names_configs(self) -> bool:
        """Whether a selector names configurations (resolved by ``scope.resolve``)."""
        return bool(self.configs or self.models or self.harnesses)

    def without_config_selectors(self) -> Filters:
        return replace(self, configs=(), models=(), harnesses=(), config_ids=None)

    def where(self) -> tuple[str, list]:
        """SQL predicate over aliases t (trials), c (cases), r (runs) and its parameters."""
        if self.names_configs and self.config_ids is None:
            raise AnalysisError("configuration selectors are not resolved yet: call "
                                "analysis.scope.resolve(con, filters) first")
        clauses: list[str] = ["TRUE"]
        params: list = []

        def within(sql: str, values) -> None:
            clauses.append(f"{sql} IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(values))

        if self.runs:
            within("t.run_id", self.runs)
        if self.config_ids is not None:
            within("t.config_id", self.config_ids)
        if self.sources:
            clauses.append("t.run_id IN (SELECT run_id FROM runs "
                           "WHERE source_format IN (SELECT unnest(?::VARCHAR[])))")
            params.append(list(self.sources))
        if self.benchmarks:
            within(case_label("benchmark"), self.benchmarks)
        if self.universes:
            within(UNIVERSE_SQL, self.universes)
        if self.since is not None:
            clauses.append("coalesce(t.started_at, r.started_at) >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("coalesce(t.started_at, r.started_at) < ?")
            params.append(self.until)
        if self.cost_coverage == "complete":
            clauses.append("t.cost_usd IS NOT NULL")
        if not self.include_unvalidated and self.unscored_present is not False:
            clauses.append(f"NOT {UNSCORED_SQL}")
        if not self.all_grades and self.regrades_present is not False:
            runs = ""
            if self.runs:  # only a regrade the selection names replaces a trial
                runs = " AND g.run_id IN (SELECT unnest(?::VARCHAR[]))"
                params += [list(self.runs)] * 3
            clauses.append("NOT " + SUPERSEDED_SQL.format(cells=_REGRADED_CELLS.format(runs=runs)))
        for key, value in self.labels:
            if key in CASE_COLUMNS:
                clauses.append(f"{case_label(key)} = ?")  # key is from a fixed whitelist
            else:
                clauses.append("json_extract_string(c.labels_json, ?) = ?")
                params.append('$."' + key.replace('"', '\\"') + '"')
            params.append(value)
        if self.holdout == "exclude":
            clauses.append("NOT coalesce(c.holdout, FALSE)")
        elif self.holdout == "only":
            clauses.append("coalesce(c.holdout, FALSE)")
        return "\n  AND ".join(clauses), params

    @property
    def needs_cases(self) -> bool:
        """Whether ``where()`` reads the cases table (alias c)."""
        return bool(self.labels or self.benchmarks or self.universes) or self.holdout != "include"

    @property
    def needs_runs(self) -> bool:
        """Whether ``where()`` reads the runs table (alias r)."""
        return self.since is not None or self.until is not None or bool(self.universes)

    @property
    def needs_trials(self) -> bool:
        """Whether ``where()`` reads a trial's own columns (start time, cost), so per-task
        rollups cannot answer and counts come from the trial rows."""
        return self.since is not None or self.until is not None or self.cost_coverage != "all"

    def describe(self) -> str:
        """The selection in the words of the command line (``--run r1 --label k=v``), or
        "the whole warehouse" when nothing is selected."""
        words: list[str] = []
        for option, values in (("run", self.runs), ("config", self.configs),
                               ("model", self.models), ("harness", self.harnesses),
                               ("source", self.sources), ("benchmark", self.benchmarks),
                               ("universe", self.universes)):
            words += [f"--{option} {v}" for v in values]
        words += [f"--label {k}={v}" for k, v in self.labels]
        words += [f"--since {self.since.isoformat()}"] if self.since else []
        words += [f"--until {self.until.isoformat()}"] if self.until else []
        words += [f"--holdout {self.holdout}"] if self.holdout != "include" else []
        words += ["--cost-coverage complete"] if self.cost_coverage == "complete" else []
        return " ".join(words) or "the whole warehouse"

    def as_dict(self) -> dict:
        out: dict[str, object] = {"runs": list(self.runs),
               "since": self.since.isoformat() if self.since else None,
               "until": self.until.isoformat() if self.until else None,
               "labels": {k: v for k, v in self.labels}, "holdout": self.holdout}
        for key in ("configs", "models", "harnesses", "sources", "benchmarks", "universes"):
            if getattr(self, key):
                out[key] = list(getattr(self, key))
        if self.cost_coverage != "all":
            out["cost_coverage"] = self.cost_coverage
        if self.include_unvalidated:
            out["include_unvalidated"] = True
        if self.allow_evaluator_change:
            out["allow_evaluator_change"] = True
        if self.pool_conditions:
            out["pool_conditions"] = True
        return out


def check_by(by: list[str] | tuple[str, ...] | str | None, conditions: bool = False) -> list[str]:
    """The slice columns of ``--by``; ``conditions``: ``condition.<key>`` is one too (the
    questions whose rows are per configuration: a condition is part of one)."""
    if by is None:
        return []
    cols = [by] if isinstance(by, str) else list(by)
    for col in cols:
        if conditions and col.startswith(CONDITION_PREFIX):
            condition_sql(col)  # refuses a malformed key
        elif col not in SLICE_COLUMNS:
            more = ", condition.<key>" if conditions else ""
            raise AnalysisError(f"--by {col!r}: slice by one of {', '.join(SLICE_COLUMNS)}{more}")
    return cols


def slice_names(by_cols: list[str]) -> str:
    """``, "col"`` for each slice column: quoted, since ``condition.cache`` has a dot."""
    return "".join(f', "{b}"' for b in by_cols)


def no_match(filters: Filters, what: str = "trials") -> AnalysisError:
    """The error for a selection that matches nothing: the selection as it was typed and
    where to look (every name given was checked by ``scope.resolve``, so it is the
    combination, the time window or an empty warehouse)."""
    if filters.describe() == "the whole warehouse":
        return AnalysisError(f"no {what} match: the warehouse holds none; ingest a run first "
                             "(trialhouse ingest RUN_DIR --warehouse W)")
    return AnalysisError(
        f"no {what} match {filters.describe()}: every name given exists, but together (or in "
        "that time window) they select nothing; drop one, or see what exists with "
        "`trialhouse runs` and `trialhouse summarize`")
