"""Trajectory parsers on real recordings (and the ATIF RFC's format), and metrics over them.

The scripted task is the same for every harness: read calc.py, run the check (fails),
edit, run the check (passes), finish. So every harness's trajectory must come out as
the same sequence of actions, with the gateway's tokens on its model turns.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from analysis.trajectory_metrics import (
    failed_check_to_edit,
    final_check,
    model_vs_tool_time,
    repeated_calls,
    time_to_first_edit,
    tokens_per_step,
)
from runner.agents.trajectory import (
    agent_events_steps,
    atif_steps,
    attach_gateway,
    classify_command,
    claude_steps,
    codex_steps,
    gateway_steps,
    mini_steps,
    unwrap_shell,
)
from runner.agents.usage_claude import read_claude

from .conftest import Recording, recordings

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPTED = ["model", "read", "model", "run", "model", "edit", "model", "run", "model"]
"""The scenario: model turn, then each tool call; mini adds its submit command at the end."""


def steps_of(rec: Recording):
    ws = rec.meta["workspace"]
    if rec.harness == "claude-code":
        steps = claude_steps(rec.stdout, workspace=ws, stage="build")
    elif rec.harness == "codex":
        steps = codex_steps(rec.stdout, rollout=next(rec.dir.glob("rollout-*.jsonl"), None), workspace=ws,
                            stage="build")
    else:
        steps = mini_steps(rec.dir / "trajectory.json", workspace=ws, stage="build")
    return steps


def shape(steps) -> list[str]:
    return [s.action if s.kind == "tool" else "model" for s in steps]


SUCCESS = [r for h in ("claude-code", "codex", "mini-swe-agent") for r in recordings(h, "success")]


@pytest.mark.parametrize("rec", SUCCESS, ids=repr)
def test_every_harness_gives_the_scripted_trajectory(rec):
    steps = attach_gateway(steps_of(rec), rec.calls())
    expected = SCRIPTED + (["other"] if rec.harness == "mini-swe-agent" else [])
    assert shape(steps) == expected
    assert [s.index for s in steps] == list(range(len(steps)))
    reads = [s for s in steps if s.action == "read"]
    assert reads[0].paths == ("calc.py",)  # relative to the workspace
    edits = [s for s in steps if s.action == "edit"]
    assert edits[0].paths == ("calc.py",) and edits[0].ok is True
    checks = [s for s in steps if s.action == "run"]
    assert [(c.exit_code, c.ok) for c in checks] == [(1, False), (0, True)]
    assert all("python3 -B -c" in c.command for c in checks)
    # the gateway's tokens land on the model turns, in order: 300+10i uncached, 40+i out, 1000i cached
    turns = [s for s in steps if s.kind == "model"]
    assert [(t.input_tokens, t.output_tokens, t.cache_read_tokens) for t in turns] == [
        (300 + 10 * i, 40 + i, 1000 * i) for i in range(5)]
    assert all(t.started_at is not None and t.ended_at >= t.started_at for t in turns)


@pytest.mark.parametrize("rec", SUCCESS, ids=repr)
def test_metrics_over_real_trajectories(rec):
    steps = attach_gateway(steps_of(rec), rec.calls())
    assert final_check(steps) == "passed_after_last_edit"
    assert repeated_calls(steps).repeats == 0  # the same check twice, but an edit came between
    recovery = failed_check_to_edit(steps)
    if rec.harness == "claude-code" and rec.version == "2.1.197":
        # 2.1.197 stamps only tool results: the edit's start is its end, still after the failure
        assert len(recovery.seconds) == 1
    else:
        assert len(recovery.seconds) == 1 and recovery.seconds[0] >= 0
    assert recovery.unanswered == 0
    assert tokens_per_step(steps).counted == 5
    split = model_vs_tool_time(steps)
    assert split.model_s > 0 and split.tool_s > 0
    ttfe = time_to_first_edit(steps, rec.started)
    assert ttfe is not None and 0 < ttfe < rec.meta["duration_s"]


def test_claude_turns_without_gateway_have_no_output_tokens():
    (rec,) = [r for r in recordings("claude-code", "success") if r.version == "2.1.332"]
    turns = [s for s in steps_of(rec) if s.kind == "model"]
    assert {t.output_tokens for t in turns} == {None}  # the stream-json line says 1: not the real count
    assert [t.input_tokens for t in turns] == [300, 310, 320, 330, 340]


def test_claude_time_to_first_edit_agrees_between_parser_and_trajectory():
    for rec in recordings("claude-code", "success"):
        steps = steps_of(rec)
        parsed = read_claude(rec.stdout, stream=True, stage_started_at=rec.started).report.usage.time_to_first_edit_s
        assert time_to_first_edit(steps, rec.started) == pytest.approx(parsed)


@pytest.mark.parametrize("rec", recordings("claude-code", "denied"), ids=repr)
def test_claude_denied_tool_calls_are_failed_steps_without_exit_code(rec):
    steps = claude_steps(rec.stdout, workspace=rec.meta["workspace"])
    bash = [s for s in steps if s.tool == "Bash"]
    assert [(s.ok, s.exit_code) for s in bash] == [(False, None), (False, None)]
    assert final_check(steps) == "failed_after_last_edit"


def test_codex_without_rollout_falls_back_to_json_items():
    (rec,) = recordings("codex", "success")
    steps = codex_steps(rec.stdout, workspace=rec.meta["workspace"])
    assert shape(steps) == ["read", "run", "edit", "run"]  # --json has no per-call model turns
    assert all(s.started_at is None for s in steps)
    assert steps[0].command == "cat calc.py"  # unwrapped from /bin/bash -lc '…'
    assert steps[2].source == "codex-json" and steps[2].paths == ("calc.py",)


def test_codex_failed_run_trajectory_stops_at_the_failure():
    (rec,) = recordings("codex", "fail-after-work")
    steps = attach_gateway(steps_of(rec), rec.calls())
    assert shape(steps) == ["model", "read", "model", "run", "model", "edit"]
    assert final_check(steps) == "edited_after_last_check"


def test_mini_turn_limit_trajectory():
    (rec,) = recordings("mini-swe-agent", "turn-limit")
    assert shape(steps_of(rec)) == ["model", "read", "model", "run"]


def test_gateway_steps_leave_side_requests_out():
    (rec,) = [r for r in recordings("claude-code", "success") if r.version == "2.1.332"]
    calls = rec.calls()
    side = {**calls[0], "side_request": True}
    steps = gateway_steps([*calls, side])
    assert len(steps) == len(calls) == 5 and {s.kind for s in steps} == {"model"}
    assert steps[0].call_id == calls[0]["response_id"]


def test_atif_trajectory_from_the_rfc_format():
    steps = atif_steps(FIXTURES / "atif" / "trajectory.json", workspace="/app")
    assert shape(steps) == ["model", "read", "model", "edit", "run", "model"]
    first = steps[0]
    # prompt_tokens include cached ones: 1500 - 1200 = 300 uncached; cache creation from metrics.extra
    assert (first.input_tokens, first.output_tokens, first.cache_read_tokens, first.cache_write_tokens) == (300, 60, 1200, 40)
    assert steps[-1].cache_read_tokens is None and steps[-1].input_tokens == 1800
    assert steps[1].command == "cat /app/calc.py" and steps[1].paths == ("calc.py",)
    assert steps[3].tool == "Edit" and steps[3].paths == ("calc.py",)
    assert steps[4].started_at.isoformat() == "2026-02-10T09:00:09+00:00"


def test_atif_refuses_what_is_not_atif(tmp_path):
    bad = tmp_path / "trajectory.json"
    bad.write_text(json.dumps({"steps": [{"source": "agent"}]}))
    assert atif_steps(bad) == []
    bad.write_text("not json")
    assert atif_steps(bad) == []


def test_agent_events_steps_from_the_documented_example(tmp_path):
    # the example of docs/agent-events.md, plus a check with an exit code
    lines = [
        {"type": "step", "elapsed_s": 1.2},
        {"type": "tool_call", "name": "read_file", "args": {"path": "shop/orders.py"}, "elapsed_s": 1.3},
        {"type": "file_edit", "path": "shop/orders.py", "elapsed_s": 4.0},
        {"type": "usage", "input_tokens": 12000, "output_tokens": 800, "cost_usd": 0.05},
        {"type": "tool_call", "name": "shell", "args": {"command": "pytest -q"}, "exit_code": 1, "elapsed_s": 5},
        "not an object",
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (rec,) = recordings("codex", "success")
    steps = agent_events_steps(path, stage_started_at=rec.started)
    assert shape(steps) == ["model", "read", "edit", "run"]
    assert steps[1].paths == ("shop/orders.py",) and steps[2].paths == ("shop/orders.py",)
    assert (steps[3].exit_code, steps[3].ok, steps[3].command) == (1, False, "pytest -q")
    assert (steps[2].ended_at - rec.started).total_seconds() == 4.0
    assert final_check(steps) == "failed_after_last_edit"


@pytest.mark.parametrize(
    ("command", "action", "paths"),
    [
        ("cat calc.py", "read", ("calc.py",)),
        ("nl -ba src/app.py | sed -n '10,20p'", "read", ("src/app.py",)),
        ("sed -n '1,5p' a.py", "read", ("a.py",)),
        ("sed -i 's/a/b/' calc.py", "edit", ("calc.py",)),
        ("cat <<'EOF' > new.py\nx = 1\nEOF", "edit", ("new.py",)),
        ("echo hi >> notes.txt", "edit", ("notes.txt",)),
        ("python3 -m pytest -q tests/test_a.py", "run", ()),
        ("python3 x.py > /dev/null 2>&1", "run", ()),
        ("grep -rn add src/", "search", ("src/",)),
        ("git grep foo", "search", ()),
        ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: calc.py\n@@\n-a\n+b\n*** End Patch\nEOF", "edit",
         ("calc.py",)),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "other", ()),
    ],
)
def test_classify_command(command, action, paths):
    assert classify_command(command) == (action, paths)


def test_unwrap_shell():
    assert unwrap_shell("/bin/bash -lc 'cat calc.py'") == "cat calc.py"
    assert unwrap_shell("ls -la") == "ls -la"
    assert unwrap_shell("/bin/bash -lc 'unterminated") == "/bin/bash -lc 'unterminated"


def test_codex_items_without_a_recorded_start_are_timed_from_the_call_that_ran_them():
    """A real rollout of Codex 0.171 (gpt-6.2-sol, inside trialhouse's sandbox): its command
    items record start == end (~5 µs) although each ran ~0.15 s; the rollout's own call and
    call-output stamps time them instead, so the tool time is a measurement, not 0."""
    rollout = Path(__file__).parent / "fixtures" / "codex-sandboxed" / "rollout-gpt-6.2-sol.jsonl"
    raw = [json.loads(line) for line in rollout.read_text().splitlines()]
    items = [r["payload"] for r in raw if r.get("payload", {}).get("type") == "item_completed"
             and r["payload"]["item"]["type"] == "CommandExecution"]
    assert items and all(i["completed_at_ms"] - i["started_at_ms"] <= 1 for i in items)  # what Codex wrote
    steps = codex_steps(rollout, rollout=rollout)
    tools = [s for s in steps if s.kind == "tool"]
    assert [s.action for s in tools] == ["read", "run", "edit", "run"]
    issued = [datetime.fromisoformat(r["timestamp"].replace("Z", "+00:00")) for r in raw
              if r.get("payload", {}).get("type") == "custom_tool_call"]
    assert [s.started_at for s in tools] == issued[:4]  # each started when the model's exec call was written
    assert all(s.duration_s is not None and s.duration_s > 0.01 for s in tools if s.action != "edit")
    split = model_vs_tool_time(steps)
    assert split.tool_s is not None and split.tool_s > 0.3 and split.why_unknown is None
