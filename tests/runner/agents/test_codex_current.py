"""The real Codex CLI with its default model (``gpt-6.2-sol``) in whole trials (issue 33 item 1).

Codex 0.171 sends that family's tools in an ``additional_tools`` input item and the model
runs commands through its ``exec`` custom tool (JavaScript calling ``exec_command``): the
gateway must see those calls as the main loop (not side requests), in scripted mode, when
forwarding and recording, and when replaying the recording. Each run is graded
``accepted``, every model call is a main-loop call, and the trial's steps carry durations:
the tools' from Codex's rollout, the model turns' from the gateway.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall, TrajectoryStep
from contract.stage_events import StageFinished
from contract.trial_events import TrialFinished
from runner.agents.rehearse import CODEX_DEFAULT_MODEL, scenario_script
from runner.eventlog import read_events
from runner.gateway import Gateway

from .conftest import harness_corpus, harness_variant

pytestmark = pytest.mark.slow
PY = sys.executable
TRIAL = "fix-add__codex__r1"


def run(manifest: Path, out: Path) -> list:
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(manifest), "--output", str(out), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_events(out / "events.jsonl")


def variant() -> dict:
    return harness_variant("codex", "codex", model=CODEX_DEFAULT_MODEL, max_retries=0)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, list]:
    root = tmp_path_factory.mktemp("codex-current")
    script = scenario_script("codex", "success", exec_tool=True)
    out: dict[str, list] = {}
    manifest = harness_corpus(root / "scripted", [variant()], {"mode": "scripted", "script": "scripts/s.json"},
                              {"s": script})
    out["scripted"] = run(manifest, root / "scripted-run")
    recorded = root / "record-run"
    with Gateway("scripted", script=script) as provider:
        route = provider.open_trial("p", variables={"workspace": str(recorded / "trials" / TRIAL / "workspace")})
        manifest = harness_corpus(root / "record", [variant()],
                                  {"mode": "record", "upstreams": {"openai": {"base_url": route}}})
        out["record"] = run(manifest, recorded)
    manifest = harness_corpus(root / "replay", [variant()], {"mode": "replay", "recording_dir": "recordings"})
    shutil.copytree(recorded / "gateway" / "recordings", root / "replay" / "recordings")
    out["replay"] = run(manifest, root / "replay-run")
    return out


def of(events: list, cls) -> list:
    return [e for e in events if isinstance(e, cls)]


@pytest.mark.parametrize("mode", ["scripted", "record", "replay"])
def test_the_default_model_is_the_main_loop_and_the_trial_is_accepted(runs, mode):
    events = runs[mode]
    (fin,) = of(events, TrialFinished)
    assert fin.outcome == "accepted", fin.reason
    calls = of(events, ModelCall)
    assert len(calls) == 5 and {c.mode for c in calls} == {mode}
    assert not any(c.side_request for c in calls)  # tools came in additional_tools
    assert [c.model for c in calls] == [CODEX_DEFAULT_MODEL] * 5 and fin.model_substituted is False
    assert [c.tool_calls for c in calls] == [["exec"]] * 4 + [[]]
    (stage,) = of(events, StageFinished)
    assert stage.gateway_usage.calls == 5 and stage.gateway_usage.retries == 0
    assert (stage.usage.input_tokens, stage.usage.output_tokens) == (stage.gateway_usage.input_tokens,
                                                                     stage.gateway_usage.output_tokens)


@pytest.mark.parametrize("mode", ["scripted", "record", "replay"])
def test_steps_carry_durations_from_the_rollout_and_the_gateway(runs, mode):
    steps = of(runs[mode], TrajectoryStep)
    tools = [s for s in steps if s.kind == "tool"]
    turns = [s for s in steps if s.kind == "model"]
    assert [s.action for s in tools] == ["read", "run", "edit", "run"]
    assert len(turns) == 5 and {s.tokens_from for s in turns} == {"gateway"}
    for step in steps:
        assert step.started_at_unix is not None and step.ended_at_unix is not None, step
        assert step.ended_at_unix >= step.started_at_unix
    # the commands really ran: a measured, non-zero time each (Codex's item start and end)
    assert all(s.ended_at_unix - s.started_at_unix > 0 for s in tools if s.action == "run")
    assert [s.tool for s in tools] == ["exec_command"] * 2 + ["apply_patch", "exec_command"]
    tool_s = sum(s.ended_at_unix - s.started_at_unix for s in tools)
    model_s = sum(s.ended_at_unix - s.started_at_unix for s in turns)
    assert tool_s > 0.05 and model_s > 0  # the model's share is a measurement, not 1.0
    assert 0 < model_s / (model_s + tool_s) < 1
