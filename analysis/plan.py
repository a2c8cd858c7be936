"""``plan``: how big a paired comparison must be, and whether repetitions or tasks help.

From a pilot (two configurations of a warehouse, compared as ``compare`` pairs them) or
from given variance components, the minimum detectable difference in acceptance rate of
the paired t test on per-task differences at T tasks × R repetitions, α and power, and
the tasks × repetitions needed for a target difference (``analysis.variance`` has the
definitions). Because the variance splits into a between-task part that repetitions
cannot remove and a within-task part they divide, the plan says which one to buy. A
one-repetition pilot (one trial per task and side) measures only their sum, which is all a
one-repetition design needs (``plan_single``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis import variance
from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import duckdb

    from analysis.filters import Filters

REPS = (1, 2, 3, 5, 10, math.inf)
TASK_FACTORS = (1, 2, 4)
DOMINANT = 0.8  # between-task share above which more repetitions "barely help"


@dataclass
class Plan:
    """The planner's answer (``as_dict`` keys in docs/analysis.md)."""

    source: str  # pilot | given
    between: float | None  # None: a one-repetition pilot, whose split is unknown
    within: float | None
    tasks: int
    reps: float
    alpha: float
    power: float
    se: float | None
    mde: float | None
    grid: list[dict[str, Any]]
    pilot: dict[str, Any] | None = None
    target: float | None = None
    tasks_needed: list[dict[str, Any]] = field(default_factory=list)
    reps_needed: int | None = None
    verdict: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    single_var: float | None = None
    """A one-repetition pilot: the variance of single-trial differences, τ² + ω² (the only
    component it measures)."""

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return clean({"source": self.source, "pilot": self.pilot,
                      "components": {"between": self.between, "within": self.within,
                                     "between_share": None if self.between is None else
                                     _share(self.between, self.within or 0.0, self.reps),
                                     "single_trial": self.single_var},
                      "test": "paired t on per-task differences, two-sided",
                      "alpha": self.alpha, "power": self.power, "tasks": self.tasks,
                      "reps": self.reps, "se": self.se, "mde": self.mde, "grid": self.grid,
                      "target": self.target, "tasks_needed": self.tasks_needed,
                      "reps_needed": self.reps_needed, "verdict": self.verdict,
                      "warnings": self.warnings})

    def records(self) -> list[dict[str, Any]]:
        from analysis.jsonout import clean

        return clean(self.grid)


def _share(between: float, within: float, reps: float) -> float | None:
    per = between + (0.0 if math.isinf(reps) else within / reps)
    return between / per if per > 0 else None


def _pp(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} pp"


def reps_label(r: float) -> str:
    """Repetitions as written in a plan: ∞ for the floor, else as a number (2, 2.5)."""
    return "∞" if math.isinf(r) else f"{r:g}"


def _verdict(p: Plan) -> list[str]:
    b, w, t, r = p.between or 0.0, p.within or 0.0, p.tasks, p.reps
    out = [f"At {t} tasks × {reps_label(r)} repetitions (α = {p.alpha:g}, power = {p.power:g}): "
           f"minimum detectable difference {_pp(p.mde)} (SE of the task-mean difference "
           f"{_pp(p.se)})."]
    share = _share(b, w, r)
    floor = variance.mde(b, w, t, math.inf, p.alpha, p.power)
    more = variance.mde(b, w, 4 * t, r, p.alpha, p.power)
    if share is None:
        out.append("No variation at all in the pilot: any difference would show.")
    elif share >= DOMINANT:
        out.append(f"Between-task variance is {100 * share:.0f}% of the per-task variance: "
                   f"more repetitions barely help (even infinitely many: {_pp(floor)}); only "
                   f"more tasks do (4× the tasks: {_pp(more)}).")
    else:
        twice = variance.mde(b, w, t, 2 * r, p.alpha, p.power)
        out.append(f"Repetition noise is {100 * (1 - share):.0f}% of the per-task variance: "
                   f"more repetitions help ({reps_label(2 * r)} repetitions: {_pp(twice)}; the "
                   f"floor at ∞ is {_pp(floor)}); 4× the tasks: {_pp(more)}.")
    if p.target is not None:
        need = ", ".join(f"{n['tasks']} tasks at {reps_label(n['reps'])}"
                         for n in p.tasks_needed if n["tasks"] is not None)
        at_t = (f"with {t} tasks, {p.reps_needed} repetition(s) suffice"
                if p.reps_needed is not None else
                f"with {t} tasks no number of repetitions suffices (floor {_pp(floor)}): "
                "add tasks")
        out.append(f"To detect {_pp(p.target)}: {need}; {at_t}.")
    return out


def plan_components(between: float, within: float, tasks: int, reps: float = 1,
                    alpha: float = 0.05, power: float = 0.8, target: float | None = None,
                    pilot: dict[str, Any] | None = None) -> Plan:
    """The plan for given components (τ², ω² of the per-task difference)."""
    if between < 0 or within < 0:
        raise AnalysisError("--between and --within are variances: give values ≥ 0")
    if tasks < 2:
        raise AnalysisError("--tasks: a paired t test needs at least 2 tasks")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise AnalysisError("--alpha and --power must lie strictly between 0 and 1")
    if reps < 1:
        raise AnalysisError("--reps: at least 1 repetition per task")
    if target is not None and not 0 < target <= 1:
        raise AnalysisError("--target: a difference in acceptance rate, in (0, 1], e.g. 0.05")
    grid = [{"tasks": t * f, "reps": r, "se": variance.design_se(between, within, t * f, r),
             "mde": variance.mde(between, within, t * f, r, alpha, power)}
            for t in (tasks,) for f in TASK_FACTORS for r in REPS]
    p = Plan("pilot" if pilot else "given", between, within, tasks, reps, alpha, power,
             variance.design_se(between, within, tasks, reps),
             variance.mde(between, within, tasks, reps, alpha, power), grid, pilot, target)
    if target is not None:
        p.tasks_needed = [{"reps": r, "tasks": variance.tasks_needed(between, within, target,
                                                                      r, alpha, power)}
                          for r in REPS]
        p.reps_needed = variance.reps_needed(between, within, target, tasks, alpha, power)
    p.verdict = _verdict(p)
    return p


def _bounds(var1: float, tasks: int, reps: float, alpha: float, power: float
            ) -> tuple[float | None, float | None]:
    """The MDE at ``reps`` repetitions when only τ² + ω² = ``var1`` is known: from all of it
    repetition noise (divided by ``reps``) to all of it task spread (not divided)."""
    return (variance.mde(0.0, var1, tasks, reps, alpha, power),
            variance.mde(var1, 0.0, tasks, reps, alpha, power))


def plan_single(var1: float, tasks: int, reps: float = 1, alpha: float = 0.05,
                power: float = 0.8, target: float | None = None,
                pilot: dict[str, Any] | None = None) -> Plan:
    """The plan from a one-repetition pilot (one trial per task and side, as every public
    leaderboard): the single-trial differences' variance ``var1`` = τ² + ω² is the per-task
    variance of a one-repetition design, so its MDE needs no split; at R > 1 repetitions the
    MDE lies between the two ends of the unknown split (``_bounds``)."""
    plan_components(var1, 0.0, tasks, reps, alpha, power, target)  # the same input checks
    grid = []
    for t in (tasks * f for f in TASK_FACTORS):
        for r in REPS:
            row: dict[str, Any] = {"tasks": t, "reps": r, "se": None, "mde": None}
            if r == 1:
                row.update(se=variance.design_se(var1, 0.0, t, 1),
                           mde=variance.mde(var1, 0.0, t, 1, alpha, power))
            else:
                row["mde_bounds"] = list(_bounds(var1, t, r, alpha, power))
            grid.append(row)
    one = reps == 1
    p = Plan("pilot" if pilot else "given", None, None, tasks, reps, alpha, power,
             variance.design_se(var1, 0.0, tasks, 1) if one else None,
             variance.mde(var1, 0.0, tasks, 1, alpha, power) if one else None, grid, pilot,
             target, single_var=var1)
    if target is not None:
        p.tasks_needed = [{"reps": r, "tasks": variance.tasks_needed(var1, 0.0, target, 1,
                                                                      alpha, power)
                           if r == 1 else None} for r in REPS]
    p.verdict = _single_verdict(p, var1)
    return p


def _single_verdict(p: Plan, var1: float) -> list[str]:
    t, m1 = p.tasks, variance.mde(var1, 0.0, p.tasks, 1, p.alpha, p.power)
    lo3, hi3 = _bounds(var1, t, 3, p.alpha, p.power)
    out = [f"One repetition per task: at {t} tasks × 1 repetition (α = {p.alpha:g}, power = "
           f"{p.power:g}) the minimum detectable difference is {_pp(m1)} (sd of the "
           f"single-trial differences {_pp(math.sqrt(var1))}).",
           "What repetitions would buy depends on how much of that variance is repetition "
           f"noise, which one trial per task cannot tell: at 3 repetitions the MDE lies between "
           f"{_pp(lo3)} (all of it repetition noise) and {_pp(hi3)} (all of it task spread); "
           f"4× the tasks at 1 repetition: "
           f"{_pp(variance.mde(var1, 0.0, 4 * t, 1, p.alpha, p.power))}. To split it, run "
           "≥ 2 repetitions of both configurations on some tasks and plan again."]
    if p.reps != 1:
        lo, hi = _bounds(var1, t, p.reps, p.alpha, p.power)
        out.insert(1, f"At {t} tasks × {reps_label(p.reps)} repetitions: between {_pp(lo)} "
                      f"and {_pp(hi)}.")
    if p.target is not None:
        n1 = p.tasks_needed[0]["tasks"]
        out.append(f"To detect {_pp(p.target)} at 1 repetition: "
                   + (f"{n1} tasks." if n1 is not None else "more tasks than can be planned.")
                   + " With more repetitions: unknown until the split is measured.")
    return out


def plan(con: duckdb.DuckDBPyConnection, filters: Filters | None, baseline: str | None,
         candidate: str | None, tasks: int | None = None, reps: float | None = None,
         alpha: float = 0.05, power: float = 0.8, target: float | None = None) -> Plan:
    """The plan from a pilot: the two configurations' per-task counts on their common tasks
    (the pairs ``compare`` uses); ``tasks``/``reps`` default to the pilot's design."""
    from analysis.compare import compare

    cmp = compare(con, filters, baseline, [candidate] if candidate else None, question="plan")
    if len(cmp.comparisons) != 1:
        raise AnalysisError(
            f"plan needs one pair of configurations; the selection has {len(cmp.comparisons)} "
            "candidates: name one with --candidate (and the baseline with --baseline)")
    c = cmp.comparisons[0]
    rows = [(d.baseline_solved, d.baseline_n, d.candidate_solved, d.candidate_n)
            for d in c.main.directions]
    comp = variance.paired_components(rows)
    if comp["tasks"] < 2:
        raise AnalysisError("the pilot shares fewer than 2 tasks with valid trials on both "
                            "sides; a plan needs a pilot of at least 2 tasks")
    one_rep = comp["within"] is None and comp["mean_reps"] == 1
    if comp["within"] is None and not one_rep:
        raise AnalysisError(
            "the pilot has one repetition per task on one side and more on the other, so "
            "repetition noise cannot be told from task spread: run ≥ 2 repetitions of both "
            "on some tasks, or give --between and --within")
    pilot = {"baseline": c.baseline.as_dict(), "candidate": c.candidate.as_dict(),
             "universe": cmp.universe, "tasks": comp["tasks"], "mean_reps": comp["mean_reps"],
             "observed_diff": c.paired_difference.mean_diff,
             "observed_se": c.paired_difference.se}
    if one_rep:
        p = plan_single(comp["observed_var"], tasks or comp["tasks"], reps or 1, alpha, power,
                        target, pilot)
    else:
        p = plan_components(comp["between"], comp["within"], tasks or comp["tasks"],
                            reps or round(comp["mean_reps"], 2), alpha, power, target, pilot)
    p.warnings = list(cmp.notes) + ([f"the pilot has {comp['tasks']} tasks: its variance "
                                     "components are rough"] if comp["tasks"] < 20 else [])
    if comp["truncated"]:
        p.warnings.append("the between-task variance is estimated at 0 (the pilot's per-task "
                          "differences spread no more than repetition noise explains): the "
                          "figures with many repetitions assume no task-to-task variation in "
                          "the difference and are optimistic")
    return p
