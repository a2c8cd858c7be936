"""The outcome tables (runner.outcome): every row walked, every combination checked against the
order docs/runner.md states ("A trial", step 6), written out independently here."""

from __future__ import annotations

import itertools

import pytest

from contract.envelope import OUTCOMES
from runner.grading import GradeResult
from runner.outcome import (
    ATTEMPT_TABLE,
    GRADE_TABLE,
    Stop,
    attempt_outcome,
    attempt_row,
    grade_row,
    grading_outcome,
    layer_results,
    stop_kind,
)

VERDICT = {"pass": "passed", "fail": "failed"}


def result(cid: str, layer: str, verdict: str) -> GradeResult:
    return GradeResult(criterion_id=cid, layer=layer, verdict=verdict, exit_code=0, signal=None,
                       timed_out=False, duration_s=0.1)


def gradings(target: str, regression: str, repository: str, inconclusive: bool) -> list[GradeResult]:
    """Real grade results whose layers are the given pass|fail|none (one criterion a layer)."""
    out = [result(layer[:3], layer, VERDICT[value])
           for layer, value in (("target", target), ("regression", regression), ("repository", repository))
           if value != "none"]
    if inconclusive:
        out.append(result("flaky", "repository", "inconclusive"))
    return out


def expected_grade(target: str, regression: str, repository: str, inconclusive: bool) -> str:
    """docs/runner.md's order, independently: inconclusive grader → infra_error; then the
    target; then the existing behaviour; else accepted."""
    if inconclusive:
        return "infra_error"
    if target == "fail":
        return "target_failed"
    if "fail" in (regression, repository):
        return "regression"
    return "accepted"


LAYER_VALUES = ("pass", "fail", "none")
GRADE_CASES = list(itertools.product(LAYER_VALUES, LAYER_VALUES, LAYER_VALUES, (False, True)))


@pytest.mark.parametrize(("target", "regression", "repository", "inconclusive"), GRADE_CASES)
def test_every_grading_gets_the_documented_outcome(target, regression, repository, inconclusive):
    outcome, reason = grading_outcome(gradings(target, regression, repository, inconclusive), {})
    assert outcome == expected_grade(target, regression, repository, inconclusive)
    assert outcome in OUTCOMES and reason


def test_every_grade_row_is_reached_and_decides():
    reached = {id(grade_row(inc, {"target": t, "regression": r, "repository": p}))
               for t, r, p, inc in GRADE_CASES}
    assert reached == {id(row) for row in GRADE_TABLE}, "a row no grading reaches is dead"
    for row in GRADE_TABLE:  # the row's own example: its cells, ANY as "pass"
        t, e = row.target or "pass", row.existing or "pass"
        results = gradings(t, e, "none", bool(row.inconclusive))
        assert grading_outcome(results, {})[0] == row.outcome


def test_the_reasons_name_the_criteria():
    results = [result("t1", "target", "failed"), result("t2", "target", "passed"),
               result("r1", "regression", "failed")]
    assert grading_outcome(results, {}) == ("target_failed", "target failed: t1")
    results = [result("t1", "target", "passed"), result("r1", "regression", "failed"),
               result("p1", "repository", "failed")]
    assert grading_outcome(results, {}) == ("regression", "broke existing behaviour: r1, p1")
    results.append(result("x", "target", "inconclusive"))
    assert grading_outcome(results, {}) == ("infra_error", "grader inconclusive: x")


def test_failures_present_on_the_initial_commit_are_ignored_and_named():
    results = [result("t1", "target", "passed"), result("r1", "regression", "failed"),
               result("p1", "repository", "failed")]
    baseline = {"r1": "failed", "p1": "passed"}
    assert grading_outcome(results, baseline) == (
        "regression", "broke existing behaviour: p1 (pre-existing failures ignored: r1)")
    assert layer_results(results, baseline) == (
        {"target": "pass", "regression": "pass", "repository": "fail"}, ["r1"])
    baseline["p1"] = "failed"
    assert grading_outcome(results, baseline) == (
        "accepted", "all criteria passed (pre-existing failures ignored: r1, p1)")
    # a target that failed before still fails: the task is to make it pass
    assert grading_outcome([result("t1", "target", "failed")], {"t1": "failed"})[0] == "target_failed"


STOPS = {
    "none": None,
    "ungraded": Stop("infra_error", "agent could not start", grade=False),
    "graded": Stop("budget_exhausted", "time budget of 5s exhausted in build"),
    "unless_accepted": Stop("budget_exhausted", "agent stopped at its own limit", unless_accepted=True),
}


def expected_attempt(kind: str, integrity_ok: bool | None, grade: str | None) -> str:
    """docs/runner.md, independently: an ungraded stop decides alone; integrity broken while
    grading is invalid; a stop at the agent's own limit yields to an accepted grade; any
    other stop decides; without a stop the grade does."""
    if kind == "ungraded":
        return "stop"
    if not integrity_ok:
        return "invalid"
    if kind == "none" or (kind == "unless_accepted" and grade == "accepted"):
        return "grade"
    return "stop"


ATTEMPT_CASES = [("ungraded", None, None)] + list(
    itertools.product(("none", "graded", "unless_accepted"), (True, False),
                      ("accepted", "target_failed", "regression", "infra_error")))


@pytest.mark.parametrize(("kind", "integrity_ok", "grade"), ATTEMPT_CASES)
def test_every_attempt_gets_the_documented_outcome(kind, integrity_ok, grade):
    stop = STOPS[kind]
    assert stop_kind(stop) == kind
    violations = None if integrity_ok is None else ([] if integrity_ok else ["inputs/rubric.md"])
    graded = None if grade is None else (grade, f"graded {grade}")
    outcome, reason = attempt_outcome(stop, violations, graded)
    want = expected_attempt(kind, integrity_ok, grade)
    if want == "stop":
        assert stop is not None and (outcome, reason) == (stop.outcome, stop.reason)
    elif want == "grade":
        assert (outcome, reason) == graded
    else:
        assert (outcome, reason) == ("invalid", "integrity violated during grading: inputs/rubric.md")


def test_every_attempt_row_is_reached():
    reached = {id(attempt_row(k, i, g)) for k, i, g in ATTEMPT_CASES}
    assert reached == {id(row) for row in ATTEMPT_TABLE}, "a row no attempt reaches is dead"
