"""A trial's outcome, decided by two typed tables read top to bottom: the first matching row wins.

``GRADE_TABLE`` turns the final state's gradings into an outcome (which layer failed,
whether a grader was inconclusive); ``ATTEMPT_TABLE`` says whether an attempt's outcome is
that grade, the stop that ended it (time, spend, an agent at its own limit, a failure),
or ``invalid`` because grading was tampered with. The order is docs/runner.md's ("A
trial", step 6); ``tests/runner/test_outcome.py`` walks every row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from contract.envelope import Outcome
from runner.grading import GradeResult

LayerResult = Literal["pass", "fail", "none"]
"""A layer on the final state: every criterion passed, one did not, or the case has none."""
ANY = None
"""A table cell that matches every value."""
LAYERS = ("target", "regression", "repository")

ENDS_THE_TRIAL: frozenset[str] = frozenset({"accepted", "invalid", "infra_error", "budget_exhausted",
                                            "agent_output_error"})
"""An attempt with one of these outcomes is the last: a retry cannot change it."""
NOT_JUDGED: frozenset[str] = frozenset({"invalid", "infra_error", "agent_output_error"})
"""Outcomes whose final state is not judged: it cannot be trusted, or no grade exists."""


@dataclass(frozen=True)
class Stop:
    """Why a trial (or an attempt) ends before or instead of a grade."""

    outcome: Outcome
    reason: str
    grade: bool = True
    """Whether the state reached is still graded (a timed-out stage is; an oversized
    workspace, an integrity violation or an infrastructure failure is not)."""
    unless_accepted: bool = False
    """The grade wins when it is ``accepted`` (an agent that stopped at its own turn
    limit with the task done solved it; otherwise the stop is the outcome)."""


# -- the final state's gradings -------------------------------------------------------
@dataclass(frozen=True)
class GradeRow:
    inconclusive: bool | None
    """A grader was inconclusive (None: either)."""
    target: LayerResult | None
    existing: LayerResult | None
    """The regression and repository layers together: ``fail`` when either fails,
    failures already present on the initial commit not counted."""
    outcome: Outcome
    reason: str
    """Filled from the criteria: ``{inconclusive}``, ``{target_failed}``,
    ``{existing_failed}``, ``{note}`` (the pre-existing failures ignored)."""


GRADE_TABLE: tuple[GradeRow, ...] = (
    #        inconclusive  target  existing  outcome          reason
    GradeRow(True,         ANY,    ANY,      "infra_error",   "grader inconclusive: {inconclusive}"),
    GradeRow(False,        "fail", ANY,      "target_failed", "target failed: {target_failed}{note}"),
    GradeRow(False,        ANY,    "fail",   "regression",    "broke existing behaviour: {existing_failed}{note}"),
    GradeRow(False,        ANY,    ANY,      "accepted",      "all criteria passed{note}"),
)


def layer_results(results: list[GradeResult], baseline: dict[str, str]
                  ) -> tuple[dict[str, LayerResult], list[str]]:
    """Layer → pass|fail|none on the final state, and the failures that pre-existed
    (failed on the initial commit too: ignored outside the target layer)."""
    layers: dict[str, LayerResult] = {}
    pre_existing: list[str] = []
    for layer in LAYERS:
        mine = [r for r in results if r.layer == layer]
        if not mine:
            layers[layer] = "none"
            continue
        failing = [r for r in mine if r.verdict != "passed"]
        if layer != "target":
            pre = [r for r in failing if r.verdict == "failed" and baseline.get(r.criterion_id) == "failed"]
            pre_existing += [r.criterion_id for r in pre]
            failing = [r for r in failing if r not in pre]
        layers[layer] = "fail" if failing else "pass"
    return layers, pre_existing


def grade_row(inconclusive: bool, layers: dict[str, LayerResult]) -> GradeRow:
    """The first row of ``GRADE_TABLE`` these gradings match (the last row matches all)."""
    existing: LayerResult = ("fail" if "fail" in (layers["regression"], layers["repository"]) else
                             "pass" if "pass" in (layers["regression"], layers["repository"]) else "none")
    for row in GRADE_TABLE:
        if ((row.inconclusive is ANY or row.inconclusive == inconclusive)
                and (row.target is ANY or row.target == layers["target"])
                and (row.existing is ANY or row.existing == existing)):
            return row
    raise AssertionError("GRADE_TABLE's last row matches every grading")


def grading_outcome(results: list[GradeResult], baseline: dict[str, str]) -> tuple[Outcome, str]:
    """Outcome and reason from the final-state gradings alone."""
    inconclusive = [r.criterion_id for r in results if r.verdict == "inconclusive"]
    layers, pre = layer_results(results, baseline)
    row = grade_row(bool(inconclusive), layers)
    target_failed = [r.criterion_id for r in results if r.layer == "target" and r.verdict == "failed"]
    existing_failed = [r.criterion_id for r in results if r.layer != "target" and r.verdict == "failed"
                       and baseline.get(r.criterion_id) != "failed"]
    return row.outcome, row.reason.format(
        inconclusive=", ".join(inconclusive), target_failed=", ".join(target_failed),
        existing_failed=", ".join(existing_failed),
        note=f" (pre-existing failures ignored: {', '.join(pre)})" if pre else "")


# -- one attempt ----------------------------------------------------------------------
StopKind = Literal["none", "ungraded", "graded", "unless_accepted"]
"""How an attempt's stop relates to its grade: none; the state is not graded; graded,
the stop still decides; graded, and an ``accepted`` grade wins."""
Source = Literal["stop", "grade", "integrity"]
"""Where the attempt's outcome comes from: the stop, the grade, or ``invalid`` because
an agent's or grader's reach was found during grading."""


@dataclass(frozen=True)
class AttemptRow:
    stop: StopKind | None
    integrity_ok: bool | None
    """No violation found while grading (None: either, or not graded)."""
    grade: Outcome | None
    outcome_from: Source


ATTEMPT_TABLE: tuple[AttemptRow, ...] = (
    #          stop               integrity_ok  grade       outcome from
    AttemptRow("ungraded",        ANY,          ANY,        "stop"),
    AttemptRow(ANY,               False,        ANY,        "integrity"),
    AttemptRow("none",            True,         ANY,        "grade"),
    AttemptRow("unless_accepted", True,         "accepted", "grade"),
    AttemptRow(ANY,               True,         ANY,        "stop"),
)


def stop_kind(stop: Stop | None) -> StopKind:
    if stop is None:
        return "none"
    if not stop.grade:
        return "ungraded"
    return "unless_accepted" if stop.unless_accepted else "graded"


def stop_fields(stop: Stop | None) -> dict[str, str | None]:
    """What ``attempt_finished`` records of an attempt's stop (``stop_kind``, ``stop_outcome``,
    ``stop_reason``), so a regrade can decide the outcome again from a new grade."""
    return {"stop_kind": stop_kind(stop), "stop_outcome": stop.outcome if stop else None,
            "stop_reason": stop.reason if stop else None}


def recorded_stop(kind: StopKind, outcome: Outcome | None, reason: str | None) -> Stop | None:
    """The ``Stop`` ``stop_fields`` recorded (None for ``none``)."""
    if kind == "none" or outcome is None:
        return None
    return Stop(outcome, reason or "", grade=kind != "ungraded", unless_accepted=kind == "unless_accepted")


def attempt_row(kind: StopKind, integrity_ok: bool | None, grade: Outcome | None) -> AttemptRow:
    """The first row of ``ATTEMPT_TABLE`` that matches."""
    for row in ATTEMPT_TABLE:
        if ((row.stop is ANY or row.stop == kind)
                and (row.integrity_ok is ANY or row.integrity_ok == integrity_ok)
                and (row.grade is ANY or row.grade == grade)):
            return row
    raise AssertionError(f"no row of ATTEMPT_TABLE for {kind}, {integrity_ok}, {grade}")


def attempt_outcome(stop: Stop | None, violations: list[str] | None,
                    graded: tuple[Outcome, str] | None) -> tuple[Outcome, str]:
    """An attempt's outcome and reason: ``violations`` and ``graded`` are None when the
    state was not graded (an ungraded stop)."""
    row = attempt_row(stop_kind(stop), None if violations is None else not violations,
                      graded[0] if graded else None)
    if row.outcome_from == "integrity":
        return "invalid", f"integrity violated during grading: {', '.join(violations or [])}"
    if row.outcome_from == "grade" and graded is not None:
        return graded
    assert stop is not None, "an attempt without a stop is decided by its grade"
    return stop.outcome, stop.reason


def summary_line(case_id: str, variant: str, rep: int, outcome: str, layers: dict[str, str],
                 cost: float | None, wall: float, flags: int) -> str:
    """The trial's one line (``trial_finished.line``, printed by ``trialhouse run``)."""
    cost_text = "unknown" if cost is None else f"{cost:.2f}"
    return (
        f"task={case_id} variant={variant} rep={rep} outcome={outcome} "
        f"target={layers.get('target', 'none')} regression={layers.get('regression', 'none')} "
        f"repository={layers.get('repository', 'none')} cost_usd={cost_text} "
        f"wall_seconds={round(wall)} flags={flags}"
    )
