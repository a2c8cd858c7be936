"""docs/agents.md's recipes, verbatim, through ``trialhouse run``; the gateway's modes in a run.

Each ``<!-- run-recipe: … -->`` block of docs/agents.md goes into a manifest as written;
only the forward gateway's upstream URLs are pointed at a scripted provider (started
here), so no network is needed and the same manifest with the documented URLs calls the
real provider. The provider's script first has the agent dump its environment into the
workspace: the real key (set in the runner's environment) must not be in it.

Then record → replay inside ``trialhouse run``: a recorded session replays without the
provider to the same tokens; a replay whose conversation departs from the recording (a
different model), that has no recording, or whose task differs from the recorded one (a
changed prompt, a changed repository) is ``infra_error`` with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall
from contract.run_events import RunStarted
from contract.stage_events import StageFinished
from contract.trial_events import TrialFinished
from runner.agents.rehearse import codex_exec, scenario_script
from runner.eventlog import read_events
from runner.gateway import Gateway, Script, Step, ToolCall

from .conftest import TOOLS_BIN, harness_corpus, harness_variant

pytestmark = pytest.mark.slow
PY = sys.executable
DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"
KEYS = {"ANTHROPIC_API_KEY": "sk-ant-api03-" + "R3alKey" * 8, "OPENAI_API_KEY": "sk-proj-" + "R3alKey" * 8}
DUMP = {"claude-code": ToolCall(name="Bash", input={"command": "env > agent-env.txt"}),
        "codex": codex_exec("env > agent-env.txt"),  # the recipe's model is Codex's default: exec tool
        "mini-swe-agent": ToolCall(name="bash", input={"command": "env > agent-env.txt"})}


def recipe(name: str):
    match = re.search(rf"<!-- run-recipe: {re.escape(name)} -->\n```json\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/agents.md has no run-recipe block {name}"
    return json.loads(match.group(1))


def trialhouse(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def dumping(kind: str) -> Script:
    """The success script with a first step that writes the agent's environment to a file."""
    script = scenario_script(kind, "success", exec_tool=kind == "codex")
    return Script(steps=[Step(text="Looking around.", tool_calls=[DUMP[kind]]), *script.steps])


@pytest.mark.parametrize("kind", ["claude-code", "codex", "mini-swe-agent"])
def test_documented_recipe_runs_through_trialhouse_run_against_a_forwarding_gateway(kind, tmp_path):
    variant = recipe(kind)
    gateway = recipe("gateway-forward")
    corpus, out = tmp_path / "corpus", tmp_path / "run"
    trial_id = f"fix-add__{variant['id']}__r1"
    with Gateway("scripted", script=dumping(kind)) as provider:
        route = provider.open_trial("provider", variables={"workspace": str(out / "trials" / trial_id / "workspace")})
        for up in gateway["upstreams"].values():
            up["base_url"] = route  # the only change: the provider is a scripted one, here
        manifest = harness_corpus(corpus, [variant], gateway)
        (corpus / "tools").symlink_to(TOOLS_BIN.parent)  # "binary": "tools/bin/…" is relative to the manifest
        checked = trialhouse("validate", "--manifest", str(manifest), env=KEYS)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert re.search(rf"variants\[0\] {variant['id']}: {kind} \d+\.\d+\.\d+ at {TOOLS_BIN}/", checked.stdout)
        done = trialhouse("run", "--manifest", str(manifest), "--output", str(out), "--json", env=KEYS)
        assert done.returncode == 0, done.stderr[-3000:]
        seen = provider.calls("provider")
    events = read_events(out / "events.jsonl")
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "accepted", fin.reason
    calls = [e for e in events if isinstance(e, ModelCall)]
    assert {c.mode for c in calls} == {"forward"} and [c.status for c in calls] == [200] * len(seen)
    assert [c.output_tokens for c in calls] == [c.output_tokens for c in seen]
    assert (fin.usage.input_tokens, fin.usage.output_tokens) == (fin.gateway_usage.input_tokens,
                                                                 fin.gateway_usage.output_tokens)
    (start,) = [e for e in events if isinstance(e, RunStarted)]
    assert start.gateway.mode == "forward" and start.gateway.key_env == {
        "anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
    # the agent held only the dummy key: the real one never entered the sandbox ...
    dumped = (out / "trials" / trial_id / "workspace" / "agent-env.txt").read_text()
    assert "trialhouse-gateway-key" in dumped and "[REDACTED]" not in dumped
    assert not any(v in dumped for v in KEYS.values())
    # ... and no trace of it is stored anywhere in the run
    stored = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file() and not p.is_symlink())
    assert not any(v.encode() in stored for v in KEYS.values())


def test_record_then_replay_inside_trialhouse_run(tmp_path):
    provider_script = scenario_script("claude-code", "success")
    corpus = tmp_path / "record"
    out = tmp_path / "recorded"
    with Gateway("scripted", script=provider_script) as provider:
        route = provider.open_trial("p", variables={"workspace": str(out / "trials" / "fix-add__claude__r1" / "workspace")})
        manifest = harness_corpus(corpus, [harness_variant("claude", "claude-code", allowed_tools=["Bash"])],
                                  {"mode": "record", "upstreams": {"anthropic": {"base_url": route}}})
        done = trialhouse("run", "--manifest", str(manifest), "--output", str(out), "--json")
        assert done.returncode == 0, done.stderr[-3000:]
    recorded = read_events(out / "events.jsonl")
    assert [e.outcome for e in recorded if isinstance(e, TrialFinished)] == ["accepted"]
    recordings = sorted((out / "gateway" / "recordings").glob("*.jsonl"))
    assert len(recordings) == 1 and recordings[0].name.startswith("fix-add__claude__r1_build_1-")

    # replay: the provider is gone; the recording is an input of the new manifest
    corpus2, out2 = tmp_path / "replay", tmp_path / "replayed"
    variants = [harness_variant("claude", "claude-code", allowed_tools=["Bash"]),
                harness_variant("claude-other", "claude-code", allowed_tools=["Bash"], model="th-other-model")]
    manifest2 = harness_corpus(corpus2, variants, {"mode": "replay", "recording_dir": "recordings",
                                                   "replay_from": {"claude-other": "claude"}}, repetitions=2)
    shutil.copytree(out / "gateway" / "recordings", corpus2 / "recordings")
    done = trialhouse("run", "--manifest", str(manifest2), "--output", str(out2), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    events = read_events(out2 / "events.jsonl")
    fins = {e.trial_id: e for e in events if isinstance(e, TrialFinished)}
    assert fins["fix-add__claude__r1"].outcome == "accepted"
    replayed = [e for e in events if isinstance(e, ModelCall) and e.trial_id == "fix-add__claude__r1"]
    original = [e for e in recorded if isinstance(e, ModelCall)]
    assert {c.mode for c in replayed} == {"replay"}
    assert [(c.position, c.output_tokens) for c in replayed] == [(c.position, c.output_tokens) for c in original]
    # a conversation the recording does not hold: never a silent answer, the trial is infra
    other = fins["fix-add__claude-other__r1"]
    assert other.outcome == "infra_error" and "replay_mismatch" in other.reason and "th-other-model" in other.reason
    # a trial with no recording at all (repetition 2 was never recorded)
    missing = fins["fix-add__claude__r2"]
    assert missing.outcome == "infra_error" and "no recording" in missing.reason
    (start,) = [e for e in events if isinstance(e, RunStarted)]
    assert start.gateway.recording_dir == "recordings"
    assert {v.settings["gateway"]["mode"] for v in start.variants} == {"replay"}
    first = json.loads(recordings[0].read_text().splitlines()[0])
    assert set(first["task"]) == {"prompt_sha256", "case_sha256", "tree", "harness_sha256", "harness"}

    # the same recording replayed for another task: refused before the agent starts, naming what differs
    for change in ("prompt", "repository"):
        corpus3, out3 = tmp_path / f"replay-{change}", tmp_path / f"replayed-{change}"
        manifest3 = harness_corpus(corpus3, variants[:1], {"mode": "replay", "recording_dir": "recordings"})
        shutil.copytree(out / "gateway" / "recordings", corpus3 / "recordings")
        doc = json.loads(manifest3.read_text())
        if change == "prompt":
            doc["cases"][0]["prompt"] += "\nAlso keep the module docstring."
        else:
            (corpus3 / "repo" / "NOTES.md").write_text("calc keeps its tests elsewhere\n")
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
            subprocess.run([*git, "add", "NOTES.md"], cwd=corpus3 / "repo", check=True)
            subprocess.run([*git, "commit", "-qm", "notes"], cwd=corpus3 / "repo", check=True)
            doc["initial_commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=corpus3 / "repo", check=True,
                                                   capture_output=True, text=True).stdout.strip()
        manifest3.write_text(json.dumps(doc))
        done = trialhouse("run", "--manifest", str(manifest3), "--output", str(out3), "--json")
        assert done.returncode == 0, done.stderr[-3000:]
        events = read_events(out3 / "events.jsonl")
        (fin,) = [e for e in events if isinstance(e, TrialFinished)]
        assert fin.outcome == "infra_error" and "replay_mismatch" in fin.reason, fin.reason
        assert ("the prompt differs" in fin.reason) == (change == "prompt"), fin.reason
        assert ("the repository tree differs" in fin.reason) == (change == "repository"), fin.reason
        assert not [e for e in events if isinstance(e, ModelCall)]  # the agent never started
        (stage,) = [e for e in events if isinstance(e, StageFinished)]
        assert stage.could_not_start
