"""Gathering: ask every analysis its question once, keep the typed answers.

The report computes no statistic: each field of :class:`ReportData` is the return value
of one analysis function (or why it could not answer), and the comparison is the very
``analysis.compare.compare`` call the ``compare`` command makes, with the same baseline
resolution and Holm family, so the two print the same numbers by construction.

Each analysis runs once per report: the selection is resolved once; the summary's checks
(eligibility gates, unscored cases, sanity; ``Summary.checked``) are the report's, and the
comparison, the roles and the blockers read them instead of asking again; both Pareto
fronts are drawn from the one summary (``analysis.pareto.front``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError
from analysis.filters import Filters

if TYPE_CHECKING:
    import duckdb
    import polars as pl

    from analysis.budget_curve import BudgetCurve
    from analysis.check_tiers import CheckResults
    from analysis.cohorts import Cohorts
    from analysis.comparison import ComparisonSet
    from analysis.consistency import Consistency
    from analysis.dashboard import Dashboard
    from analysis.eligibility import Blockers, Eligibility, Gates
    from analysis.failures import Failures
    from analysis.familiarity import Familiarity
    from analysis.flags import Flags
    from analysis.headline import Headline
    from analysis.latency import Latency
    from analysis.matrix import Matrix
    from analysis.pareto import Pareto
    from analysis.period import Period
    from analysis.pre_existing import PreExisting
    from analysis.regrade import Regrades
    from analysis.rules_check import RulesCheck
    from analysis.sanity import SanityWarning
    from analysis.stop_rules import RulesFile
    from analysis.summary import Checked, Summary
    from analysis.trajectory import TrajectorySummary
    from analysis.unscored import Unscored
    from analysis.visibility import Visibility


@dataclass
class ReportData:
    """Every analysis answer the report lays out (sections read only this)."""

    filters: Filters
    window: dict[str, str | None]
    baseline_requested: str | None
    run_ids: list[str]
    runs: list[dict[str, Any]]
    configs: list[dict[str, Any]]
    simulated: frozenset[str]
    roles: dict[str, Eligibility]
    trials: pl.DataFrame  # per trial: run, trial id, config keys, outcome, complete, cost, duration
    summary: Summary
    comparisons: ComparisonSet | None
    compare_absent: str | None
    headline: Headline | None
    consistency: Consistency
    pareto: Pareto
    pareto_trial: Pareto
    matrix: Matrix | None
    matrix_absent: str | None
    failures: Failures
    familiarity: Familiarity | None
    familiarity_absent: str | None
    latency: Latency
    flags: Flags
    blockers: Blockers
    period: Period | None = None
    trajectory: TrajectorySummary | None = None  # None: the selected runs recorded no step
    notes: list[str] = field(default_factory=list)
    unscored: Unscored | None = None  # cases left out (or counted) as unscored
    pre_existing: PreExisting | None = None  # scored cases with criteria red on the initial commit
    regrades: Regrades | None = None  # regrade runs in the selection, old vs new outcomes
    invalidated: list[dict[str, Any]] = field(default_factory=list)  # runs excluded, why
    sanity: list[SanityWarning] = field(default_factory=list)
    review: dict[str, pl.DataFrame] = field(default_factory=dict)
    """Judgments with calibration status, calibrations, grader–reviewer agreement, review
    minutes (``analysis.review.judged_and_reviewed``)."""
    stop_rules: RulesCheck | None = None  # None: no rules file given (``report --rules``)
    cohorts: Cohorts | None = None  # None: no cohort ticket in the warehouse
    budget_curve: BudgetCurve | None = None  # None: no sweep, or why not (budget_curve_absent)
    budget_curve_absent: str | None = None
    visibility: Visibility | None = None  # None: no visible check in the selection
    dashboard: Dashboard | None = None  # target-fix, regression-free, accepted, review minutes
    checks: dict[str, CheckResults] | None = None  # by tier and bank tag; None: no tier or tag declared


_RUNS_SQL = """
SELECT run_id, source_format, source_path, manifest_id, manifest_sha256, started_at,
       finished_at, status, engine_version, os, python, git_version, repository,
       initial_commit, repetitions, max_attempts, timeout_seconds, max_cost_usd,
       simulated, prices_as_of, run_cost_usd, integrity, isolation_backend, isolated,
       network, network_policy, executor, executor_address, ray_version, control_repeats, controls_from,
       grading_semantics, trials_skipped
FROM runs
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY started_at NULLS LAST, run_id
"""

_INVALIDATED_SQL = """
SELECT s.run_id, s.reason, s.set_at, r.source_format, r.manifest_id, r.started_at
FROM run_status s LEFT JOIN runs r ON r.run_id = s.run_id
WHERE s.status = 'invalidated'
  AND (len(?::VARCHAR[]) = 0 OR s.run_id IN (SELECT unnest(?::VARCHAR[])))
  AND s.run_id NOT IN (SELECT unnest(?::VARCHAR[]))
ORDER BY r.started_at NULLS LAST, s.run_id
"""
"""Invalidated runs the selection would otherwise read (all of them without --run), unless
the session counts invalidated runs (then they are among the selected runs)."""

_CONFIGS_SQL = """
SELECT config_id, any_value(variant) AS variant, any_value(model) AS model,
       any_value(harness) AS harness, any_value(harness_version) AS harness_version,
       any_value(reasoning_effort) AS reasoning_effort, bool_or(simulated) AS simulated,
       min(agent_kind) AS agent_kind, any_value(conditions_json) AS conditions_json,
       string_agg(DISTINCT source_format, ', ') AS source_format,
       min(variant_order) AS variant_order
FROM configs
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY config_id
ORDER BY min(variant_order) NULLS LAST, config_id
"""

_TRIAL_COLUMNS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "harness_version",
                  "outcome", "complete", "cost_usd", "duration_s", "simulated"]


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict]:
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def _comparisons(con: duckdb.DuckDBPyConnection, filters: Filters, baseline: str | None,
                 candidates: list[str] | None, checked: Checked | None
                 ) -> tuple[ComparisonSet | None, str | None]:
    from analysis.compare import compare

    try:
        return compare(con, filters, baseline, candidates, checked=checked), None
    except AnalysisError as exc:
        if baseline is not None or candidates:
            raise  # the user named a side: an error, not an absent section
        return None, str(exc)


def _optional(fn: Any, *args: Any) -> tuple[Any, str | None]:
    try:
        return fn(*args), None
    except AnalysisError as exc:
        return None, str(exc)


def _blockers(trials: pl.DataFrame, configs: list[dict], comparisons: ComparisonSet | None,
              period: Period | None, roles: dict[str, Eligibility], simulated: frozenset[str],
              found_gates: dict[str, Gates]) -> Blockers:
    import polars as pl

    from analysis.eligibility import RegressionCheck, blockers

    invalid = dict(trials.filter(pl.col("outcome") == "invalid").group_by("config_id")
                   .agg(pl.len()).iter_rows())
    names = {c["config_id"]: c for c in configs}
    for r in trials.select("config_id", "variant", "model", "harness",
                           "harness_version").unique("config_id").iter_rows(named=True):
        names.setdefault(r["config_id"], r)
    checks = [RegressionCheck(c.candidate.as_dict(), c.baseline.config_id,
                              c.sign_test.improvements, c.sign_test.regressions,
                              c.sign_test.p_family)
              for c in (comparisons or [])]
    for row in (period.rows if period and not period.blocked else []):  # withheld: drift
        if row.comparison is not None:
            st = row.comparison.sign_test
            checks.append(RegressionCheck(row.config.as_dict(), "previous_period",
                                          st.improvements, st.regressions, st.p_family,
                                          "the previous period"))
    return blockers(invalid, names, checks, roles, simulated, found_gates)


def gather(con: duckdb.DuckDBPyConnection, filters: Filters, *, window: dict[str, str | None],
           baseline: str | None = None, candidates: list[str] | None = None,
           previous: Filters | None = None, rules: RulesFile | None = None,
           rules_at: datetime | None = None) -> ReportData:
    """Ask every analysis its question; an analysis that cannot answer says why. ``rules``:
    the stop rules, evaluated at ``rules_at`` (the window's end, else now)."""
    from analysis import consistency, failures, familiarity, flags, latency, matrix
    from analysis.cohorts import cohorts, has_cohorts
    from analysis.dashboard import dashboard
    from analysis.data import load_trials, require_trials
    from analysis.eligibility import assess
    from analysis.headline import headline
    from analysis.pareto import front
    from analysis.period import period_changes
    from analysis.review import judged_and_reviewed
    from analysis.rules_check import check_rules
    from analysis.scope import resolve
    from analysis.summary import summarize

    filters = resolve(con, filters)
    trials = load_trials(con, filters, columns=_TRIAL_COLUMNS)
    require_trials(trials, filters)
    run_ids = sorted(set(trials["run_id"].to_list()))
    configs = _records(con, _CONFIGS_SQL, [run_ids])
    simulated = frozenset({c["config_id"] for c in configs if c.get("simulated")}
                          | set(trials.filter(trials["simulated"].fill_null(False))
                                ["config_id"].to_list()))
    summary = summarize(con, filters)
    checked = summary.checked
    assert checked is not None  # summarize checks by default
    roles = assess(con, filters, trials["config_id"].unique().to_list(), checked.gates)
    comps, absent = _comparisons(con, filters, baseline, candidates, checked)
    period = (period_changes(con, filters, previous, roles, window, simulated)
              if previous is not None else None)
    mat, mat_absent = _optional(matrix.matrix, con, filters)
    fam, fam_absent = _optional(familiarity.familiarity, con, filters)
    return ReportData(
        filters=filters, window=window, baseline_requested=baseline, run_ids=run_ids,
        runs=_records(con, _RUNS_SQL, [run_ids]), configs=configs, simulated=simulated,
        roles=roles, trials=trials, summary=summary, comparisons=comps,
        compare_absent=absent,
        headline=headline(comps) if comps is not None else None,
        consistency=consistency.consistency(con, filters),
        pareto=front(summary, roles, x="cost_per_accepted"),
        pareto_trial=front(summary, roles, x="cost_per_trial"),
        matrix=mat, matrix_absent=mat_absent, failures=failures.failures(con, filters),
        familiarity=fam, familiarity_absent=fam_absent,
        latency=latency.latency(con, filters), flags=flags.flags(con, filters),
        blockers=_blockers(trials, configs, comps, period, roles, simulated, checked.gates),
        period=period, unscored=checked.unscored, sanity=checked.sanity,
        pre_existing=checked.pre_existing, regrades=_regrades(con, filters),
        invalidated=_records(con, _INVALIDATED_SQL,
                             [list(filters.runs), list(filters.runs), run_ids]),
        trajectory=_trajectory(con, filters, run_ids), review=judged_and_reviewed(con, run_ids),
        stop_rules=check_rules(con, rules, rules_at) if rules is not None else None,
        cohorts=cohorts(con, filters) if has_cohorts(con) else None,
        dashboard=dashboard(con, filters), checks=_tiers(con, filters, run_ids),
        **_budgets_and_checks(con, filters))


def _budgets_and_checks(con: duckdb.DuckDBPyConnection, filters: Filters) -> dict[str, Any]:
    """The budget curve and the visible/hidden checks, when the selection has a sweep and a
    visible check (an absent sweep is no section; a sweep that cannot be drawn says why)."""
    from analysis.budget_curve import NO_SWEEP, budget_curve
    from analysis.visibility import visibility

    curve, why = _optional(budget_curve, con, filters)
    vis, _absent = _optional(visibility, con, filters)
    return {"budget_curve": curve, "budget_curve_absent": None if why is None or why.startswith(NO_SWEEP) else why,
            "visibility": vis}


def _tiers(con: duckdb.DuckDBPyConnection, filters: Filters, run_ids: list[str]) -> dict[str, CheckResults] | None:
    """Check results by tier and by each bank tag some check carries, when the selected runs
    declare a tier or a tag (docs/rollout.md); else None (no section)."""
    from analysis.check_tiers import SLICES, check_results, has_tiers_or_tags

    if not has_tiers_or_tags(con, run_ids):
        return None
    found = {by: check_results(con, filters, by) for by in SLICES}
    return {by: r for by, r in found.items() if by == "tier" or any(x["value"] is not None for x in r.rows)}


def _regrades(con: duckdb.DuckDBPyConnection, filters: Filters) -> Regrades:
    from analysis.regrade import regrades_in

    return regrades_in(con, filters)


_HAS_STEPS_SQL = "SELECT count(*) FROM steps WHERE run_id IN (SELECT unnest(?::VARCHAR[]))"


def _trajectory(con: duckdb.DuckDBPyConnection, filters: Filters, run_ids: list[str]) -> TrajectorySummary | None:
    """The trajectory metrics, or None when the selected runs recorded no step at all."""
    from analysis.trajectory import summary

    if not con.execute(_HAS_STEPS_SQL, [run_ids]).fetchall()[0][0]:
        return None
    return summary(con, filters)
