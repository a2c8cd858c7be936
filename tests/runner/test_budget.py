"""The trial budget (runner.budget): every "time left" and its floor read from one clock that the
test drives; known and unknown spend against max_cost_usd; each budget stop written as a real
``budget`` event through the run's event log."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from contract.stage_events import GatewayUsage, Usage
from runner.budget import (
    COMMAND_FLOOR,
    EVIDENCE_FLOOR,
    FINISH_SHARE,
    GIT_FLOOR,
    StageSpend,
    TrialBudget,
)
from runner.eventlog import EventLog
from runner.git import GitError

MIB = 2**20


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self, now: float = 5000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def log(tmp_path):
    log = EventLog(tmp_path / "events.jsonl", "run-1")
    yield log
    log.close()


def budget(log: EventLog, clock: Clock, timeout: float = 10.0, max_cost: float | None = None,
           workspace: int = 10 * MIB) -> TrialBudget:
    return TrialBudget(timeout, max_cost, workspace,
                       lambda cls, **f: log.emit(cls, trial_id="mul__v__r1", **f), clock)


def budget_events(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: r[k] for k in ("trial_id", "type", "status", "limit", "used")}
            for r in rows if r["event"] == "budget"]


def test_every_time_left_and_floor_reads_the_one_clock(log):
    clock = Clock()
    b = budget(log, clock)
    assert (b.left(), b.for_agent(), b.for_command(), b.for_git(), b.for_evidence()) == (10, 10, 10, 10, 10)
    assert not b.exhausted() and b.elapsed() == 0
    clock.now += 7
    assert (b.left(), b.for_agent(), b.for_command(), b.for_git()) == (3, 3, 3, 3)
    # a patch of evidence gets its 5 s, but only within the finishing share (15% of 10 s past the end)
    assert b.finish_left() == 3 + FINISH_SHARE * 10 == 4.5 and b.for_evidence() == 4.5
    clock.now += 3  # exactly at the deadline: spent
    assert b.left() == 0 and b.exhausted() and b.for_agent() == 0
    clock.now += 1.5
    assert b.left() == -1.5 and b.elapsed() == 11.5 and b.finish_left() == 0
    assert (b.for_agent(), b.for_command(), b.for_git(), b.for_evidence()) == (
        0.0, COMMAND_FLOOR, GIT_FLOOR, GIT_FLOOR) == (0.0, 0.001, 0.01, 0.01)
    assert budget_events(log.path) == []  # reading the clock records nothing


def test_the_evidence_floor_holds_where_the_finishing_share_allows_it(log):
    clock = Clock()
    b = budget(log, clock, timeout=100.0)
    clock.now += 99  # 1 s left, 16 s of finishing share
    assert b.for_evidence() == EVIDENCE_FLOOR == 5.0
    clock.now += 1 + 14  # 1 s of the share left
    assert b.for_evidence() == pytest.approx(1.0)
    before = time.monotonic()
    assert before + 0.9 <= b.finish_by() <= time.monotonic() + 1.0  # the same moment on the real clock


def test_a_spent_time_budget_is_a_budget_event_with_what_was_used(log):
    clock = Clock()
    b = budget(log, clock)
    clock.now += 12.34567
    stop = b.time_stop("time budget exhausted before qa")
    assert (stop.outcome, stop.reason, stop.grade, stop.unless_accepted) == (
        "budget_exhausted", "time budget exhausted before qa", True, False)
    assert budget_events(log.path) == [
        {"trial_id": "mul__v__r1", "type": "time", "status": "exceeded", "limit": 10.0, "used": 12.346}]


def test_failed_runner_work_is_the_budget_only_once_the_time_is_spent(log):
    clock = Clock()
    b = budget(log, clock)
    stop = b.work_failed("capturing the workspace", GitError("git write-tree: killed"))
    assert (stop.outcome, stop.reason, stop.grade) == (
        "infra_error", "capturing the workspace failed: git write-tree: killed", False)
    assert budget_events(log.path) == []
    clock.now += 10
    stop = b.work_failed("capturing the workspace", GitError("git write-tree: killed"))
    assert (stop.outcome, stop.reason, stop.grade) == (
        "budget_exhausted", "time budget exhausted while capturing the workspace", False)
    assert [e["type"] for e in budget_events(log.path)] == ["time"]


def test_without_max_cost_usd_spend_is_unlimited_even_when_unknown(log):
    b = budget(log, Clock())
    b.spend(StageSpend(Usage(cost_usd=None), 1.0))
    b.spend(StageSpend(Usage(cost_usd=1e6), 1.0))
    assert b.cost_stop() is None and b.cost_status == "unlimited"
    assert budget_events(log.path) == []


def test_unknown_spend_is_recorded_once_and_never_counted_as_zero(log):
    b = budget(log, Clock(), max_cost=1.0)
    assert b.cost_status == "within"
    b.spend(StageSpend(Usage(cost_usd=0.4), 1.0))
    assert b.cost_stop() is None and b.cost_status == "within"
    b.spend(StageSpend(Usage(cost_usd=None), 1.0))
    assert b.cost_stop() is None and b.cost_status == "unknown"
    b.spend(StageSpend(Usage(cost_usd=None), 1.0))
    assert b.cost_stop() is None  # still unknown: not recorded twice
    assert budget_events(log.path) == [
        {"trial_id": "mul__v__r1", "type": "cost", "status": "unknown", "limit": 1.0, "used": None}]
    b.spend(StageSpend(Usage(cost_usd=0.7), 1.0))
    stop = b.cost_stop()
    assert stop is not None and (stop.outcome, stop.reason, stop.grade) == (
        "budget_exhausted", "known spend above max_cost_usd=1", True)
    assert b.cost_status == "exceeded" and b.known_cost() == pytest.approx(1.1)
    (exceeded,) = budget_events(log.path)[1:]
    assert exceeded["status"] == "exceeded" and exceeded["used"] == pytest.approx(1.1)
    assert b.usage().cost_usd is None  # the trial's total stays unknown


def test_a_workspace_over_its_limit_is_an_ungraded_budget_stop(log):
    b = budget(log, Clock(), workspace=10 * MIB)
    assert b.workspace_stop(10 * MIB) is None
    stop = b.workspace_stop(25 * MIB + 1)
    assert stop is not None and (stop.outcome, stop.reason, stop.grade) == (
        "budget_exhausted", "workspace grew to 25 MB, over max_workspace_mb=10", False)
    assert budget_events(log.path) == [
        {"trial_id": "mul__v__r1", "type": "workspace", "status": "exceeded", "limit": 10.0, "used": 25.0}]


def test_trial_totals_sum_the_stages_and_keep_unknowns_unknown(log):
    b = budget(log, Clock())
    assert b.usage() == Usage() and b.agent_seconds() == 0 and b.gateway_usage() is None
    b.spend(StageSpend(Usage(input_tokens=100, output_tokens=10, cost_usd=0.25, cost_basis="reported",
                             source="claude-json", time_to_first_edit_s=3.0), 2.5))
    b.spend(StageSpend(Usage(input_tokens=50, output_tokens=None, cost_usd=0.5, cost_basis="reported",
                             source="agent-events"), 1.25,
                       GatewayUsage(calls=2, failed_calls=0, retries=0, model_s=1.5, input_tokens=7,
                                    output_tokens=3, cache_read_tokens=0, cache_write_tokens=0)))
    usage = b.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.cost_usd, usage.cost_basis) == (150, None, 0.75, "reported")
    assert usage.source == "agent-events+claude-json" and usage.time_to_first_edit_s == 3.0
    assert b.agent_seconds() == 3.75
    gateway = b.gateway_usage()
    assert gateway is not None and (gateway.calls, gateway.input_tokens) == (2, 7)
