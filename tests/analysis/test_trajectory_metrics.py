"""Trajectory metrics on hand-built trajectories; every expected value is worked out in a comment."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from analysis.trajectory_metrics import (
    failed_check_to_edit,
    final_check,
    model_vs_tool_time,
    outside_reads,
    repeated_calls,
    time_to_first_edit,
    tokens_per_step,
)
from runner.agents.steps import Step

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def model(t0: float | None = None, t1: float | None = None, tokens: tuple | None = (100, 10, 0, 0)) -> Step:
    i, o, r, w = tokens if tokens else (None, None, None, None)
    return Step(0, "model", "test", started_at=None if t0 is None else at(t0), ended_at=None if t1 is None else at(t1),
                input_tokens=i, output_tokens=o, cache_read_tokens=r, cache_write_tokens=w)


def tool(action: str, *, command: str | None = None, paths=(), ok: bool | None = True, exit_code=None,
         t0: float | None = None, t1: float | None = None, name: str = "bash") -> Step:
    return Step(0, "tool", "test", tool=name, action=action, command=command, paths=tuple(paths), ok=ok,
                exit_code=exit_code, started_at=None if t0 is None else at(t0),
                ended_at=None if t1 is None else at(t1))


def test_repeats_count_identical_calls_and_reset_after_an_edit():
    steps = [
        tool("read", command="cat a.py", paths=["a.py"]),
        tool("read", command="cat a.py", paths=["a.py"]),  # repeat 1
        tool("run", command="pytest"),
        tool("run", command="pytest"),  # repeat 2: nothing changed since the last run
        tool("edit", command="sed -i s/a/b/ a.py", paths=["a.py"]),
        tool("run", command="pytest"),  # not a repeat: the workspace changed
        tool("read", command="cat a.py", paths=["a.py"]),  # not a repeat either
        tool("run", command="pytest -x"),  # different command
        tool("edit", command="sed -i s/a/b/ a.py", paths=["a.py"], ok=False),  # failed edit: no reset
        tool("run", command="pytest"),  # repeat 3
    ]
    result = repeated_calls([model(), *steps])
    assert (result.repeats, result.tool_calls) == (3, 10)
    assert result.share == pytest.approx(0.3)
    assert repeated_calls([model()]).share is None


def test_failed_check_to_next_edit_measures_from_the_most_recent_failure():
    steps = [
        tool("run", command="pytest", ok=False, exit_code=1, t0=1, t1=3),
        tool("read", paths=["a.py"], t0=4, t1=4.5),
        tool("run", command="pytest -k x", ok=False, exit_code=1, t0=5, t1=6),  # most recent failure: ends at 6
        tool("edit", paths=["a.py"], t0=9.5, t1=10),  # 9.5 - 6 = 3.5
        tool("run", command="pytest", ok=True, exit_code=0, t0=11, t1=12),  # passed: nothing to answer
        tool("edit", paths=["b.py"], t0=13, t1=14),  # no failed check since the last edit: not measured
        tool("run", command="pytest", ok=False, exit_code=2, t0=15, t1=16),
        tool("edit", paths=["b.py"]),  # no timestamps: untimed
        tool("run", command="pytest", exit_code=1, t0=20, t1=21),  # failed (exit code), never answered
    ]
    result = failed_check_to_edit(steps)
    assert result.seconds == (3.5,)
    assert (result.unanswered, result.untimed) == (1, 1)
    only_pytest_k = failed_check_to_edit(steps, pattern=re.compile(r"-k"))
    assert only_pytest_k.seconds == (3.5,) and only_pytest_k.unanswered == 0


def test_outside_reads_by_top_directory_of_the_final_patch():
    steps = [
        tool("read", paths=["shop/orders.py"]),
        tool("read", paths=["shop/orders.py"]),  # same file once
        tool("search", paths=["shop/billing.py", "docs/api.md"]),
        tool("read", paths=["README.md"]),  # root subsystem ""
        tool("edit", paths=["shop/orders.py"]),  # edits are not reads
        tool("run", command="pytest tests/"),
    ]
    result = outside_reads(steps, ["shop/orders.py"])
    # read: shop/orders.py, shop/billing.py, docs/api.md, README.md → outside "shop": docs/api.md, README.md
    assert (result.outside, result.read, result.subsystems) == (2, 4, ("shop",))
    assert result.share == pytest.approx(0.5)
    assert outside_reads(steps, ["README.md", "shop/x.py"]).outside == 1  # only docs/api.md
    assert outside_reads(steps, []) is None
    assert outside_reads([tool("run")], ["a/b.py"]).share is None  # nothing read
    by_file = outside_reads(steps, ["shop/orders.py"], subsystem=lambda p: p)
    assert by_file.outside == 3


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ([tool("edit"), tool("run", ok=True, exit_code=0)], "passed_after_last_edit"),
        ([tool("edit"), tool("run", ok=True), tool("run", ok=False, exit_code=1)], "failed_after_last_edit"),
        ([tool("run", ok=True), tool("edit")], "edited_after_last_check"),
        ([tool("edit"), tool("read")], "no_check"),
        ([tool("run", ok=False)], "no_edit"),
        ([tool("edit"), tool("run", ok=True), tool("edit", ok=False)], "passed_after_last_edit"),  # failed edit changed nothing
    ],
)
def test_final_check(steps, expected):
    assert final_check(steps) == expected


def test_final_check_with_a_test_runner_pattern():
    steps = [tool("edit"), tool("run", command="pytest", ok=True), tool("edit"), tool("run", command="ls", ok=True)]
    assert final_check(steps) == "passed_after_last_edit"
    assert final_check(steps, re.compile(r"\bpytest\b")) == "edited_after_last_check"


def test_time_to_first_edit_from_the_stage_start():
    steps = [model(0, 2), tool("edit", ok=False, t0=2, t1=3), tool("edit", t0=5, t1=6.25)]
    assert time_to_first_edit(steps, at(-1.0)) == pytest.approx(7.25)  # first effective edit ends at 6.25
    assert time_to_first_edit(steps, None) is None
    assert time_to_first_edit([model(0, 1)], T0) is None
    assert time_to_first_edit([tool("edit")], T0) is None  # no timestamp: unknown, not 0


def test_model_vs_tool_time_and_untimed_steps():
    steps = [model(0, 2.0), tool("read", t0=2.0, t1=2.5), model(2.5, 5.5), tool("run", t0=5.5, t1=7.0),
             tool("edit", t1=8.0), model()]
    split = model_vs_tool_time(steps)
    assert (split.model_s, split.tool_s, split.untimed) == (5.0, 2.0, 2)
    assert split.model_share == pytest.approx(5 / 7)
    assert model_vs_tool_time([tool("edit")]).model_share is None


def test_a_side_with_no_timed_step_is_unknown_not_zero():
    # mini-swe-agent / ATIF: model turns carry only an end time, tool calls both
    steps = [model(None, 2.0), tool("read", t0=2.0, t1=2.5), model(None, 4.0), tool("run", t0=4.0, t1=5.0)]
    split = model_vs_tool_time(steps)
    assert (split.model_s, split.tool_s, split.untimed, split.model_share) == (None, 1.5, 2, None)
    only_tools = model_vs_tool_time([tool("read", t0=0.0, t1=1.0)])  # no model turn at all: 0 s of model time
    assert (only_tools.model_s, only_tools.tool_s, only_tools.model_share) == (0.0, 1.0, 0.0)


def test_tokens_per_step_counts_only_turns_that_reported():
    steps = [model(tokens=(100, 10, 900, 0)), model(tokens=(200, 20, None, None)), model(tokens=None),
             tool("read")]
    result = tokens_per_step(steps)
    # (100+10+900+0 + 200+20) / 2 = 615; the third turn reported nothing
    assert (result.mean, result.counted, result.model_turns) == (615.0, 2, 3)
    assert tokens_per_step([model(tokens=None)]).mean is None


def test_tool_calls_all_at_zero_seconds_are_unknown_with_the_reason_never_a_share_of_one():
    # Codex 0.171 in a sandbox stamps its items start == end: read as is, model share 1.0
    steps = [model(0, 2.0), tool("run", t0=2.0, t1=2.0), model(2.5, 4.0), tool("edit", t0=4.0, t1=4.0)]
    split = model_vs_tool_time(steps)
    assert (split.model_s, split.tool_s, split.model_share) == (3.5, None, None)
    assert split.why_unknown == "every timed tool call lasted 0 s (the harness recorded no start)"
    untimed = model_vs_tool_time([model(None, 2.0), tool("run", t0=2.0, t1=3.0)])
    assert untimed.why_unknown == "no model turn has a start and an end (1 untimed)"
    assert model_vs_tool_time(steps[:1] + [tool("run", t0=2.0, t1=3.0)]).why_unknown is None
