"""The real, pinned CLIs as manifest agent kinds, in whole trials through ``trialhouse run``.

One run (six variants, one case, the build stage) inside the bubblewrap sandbox, every
model call answered by the run's gateway in scripted mode: Claude Code, Codex and
mini-swe-agent each read calc.py, run a failing check, edit, check again and finish, and
are graded ``accepted``; one Claude run gets HTTP 500 twice (``infra_error``), one hits its
turn limit (``budget_exhausted``), one has Bash denied under ``acceptEdits`` (the edit
still lands, the denials are recorded). Then the run is ingested: tokens and steps from
the harness and from the gateway reach the warehouse and agree.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall, TrajectoryStep
from contract.run_events import RunStarted
from contract.stage_events import StageFinished
from contract.trial_events import TrialFinished
from runner.agents.rehearse import scenario_script
from runner.eventlog import read_events

from .conftest import harness_corpus, harness_variant

pytestmark = pytest.mark.slow
PY = sys.executable
SUCCESS = (1600, 210, 10000)
"""(input, output, cache read) tokens the scripted model reports over the five calls of a
successful session (runner.agents.rehearse._usage)."""


def run(manifest: Path, out: Path, *extra: str) -> dict:
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(manifest), "--output", str(out),
                           "--json", *extra], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("harness") / "corpus"
    scripts = {f"{kind}-{sc}": scenario_script(kind, sc) for kind, sc in [
        ("claude-code", "success"), ("codex", "success"), ("mini-swe-agent", "success"), ("claude-code", "http-500")]}
    variants = [
        harness_variant("claude", "claude-code", allowed_tools=["Bash"], max_retries=1),
        harness_variant("codex", "codex", max_retries=0),
        harness_variant("mini", "mini-swe-agent", max_retries=0),
        harness_variant("claude-500", "claude-code", allowed_tools=["Bash"], max_retries=3),
        harness_variant("claude-turns", "claude-code", allowed_tools=["Bash"], max_turns=2, output_format="json"),
        harness_variant("claude-denied", "claude-code"),  # Bash not allowed: acceptEdits denies it
        # Claude Code 2.1.332 asks for another model than this label (issue 33): flagged, not hidden
        harness_variant("claude-opus", "claude-code", model="claude-opus-4-1", allowed_tools=["Bash"]),
    ]
    variants[1]["service_tier"] = "fast"
    gateway = {"mode": "scripted", "script": "scripts/claude-code-success.json",
               "scripts": {"codex": "scripts/codex-success.json", "mini": "scripts/mini-swe-agent-success.json",
                           "claude-500": "scripts/claude-code-http-500.json"}}
    manifest = harness_corpus(root, variants, gateway, scripts)
    out = root.parent / "run"
    result = run(manifest, out, "--jobs", "3")
    events = read_events(out / "events.jsonl")
    warehouse = root.parent / "wh" / "t.duckdb"
    proc = subprocess.run([PY, "-m", "trialhouse", "ingest", str(out), "--warehouse", str(warehouse)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"result": result, "events": events, "out": out, "warehouse": warehouse, "manifest": manifest}


def of(events, cls, variant: str | None = None):
    tid = None if variant is None else f"fix-add__{variant}__r1"
    return [e for e in events if isinstance(e, cls) and (tid is None or e.trial_id == tid)]


def tokens(u) -> tuple:
    return (u.input_tokens, u.output_tokens, u.cache_read_tokens)


def test_outcomes_of_the_six_trials(harness_run):
    fins = {e.variant: e for e in of(harness_run["events"], TrialFinished)}
    assert {v: f.outcome for v, f in fins.items()} == {
        "claude": "accepted", "codex": "accepted", "mini": "accepted", "claude-denied": "accepted",
        "claude-500": "infra_error", "claude-turns": "budget_exhausted", "claude-opus": "accepted"}
    assert "500" in fins["claude-500"].reason
    assert "error_max_turns" in fins["claude-turns"].reason
    assert harness_run["result"]["isolated"] is True  # all of it inside bubblewrap


@pytest.mark.parametrize("variant", ["claude", "codex", "mini"])
def test_each_cli_reads_edits_checks_and_its_tokens_agree_with_the_gateway(harness_run, variant):
    events = harness_run["events"]
    (stage,) = of(events, StageFinished, variant)
    assert stage.exit_code == 0
    assert tokens(stage.usage) == tokens(stage.gateway_usage) == SUCCESS
    assert stage.gateway_usage.calls == 5 and stage.gateway_usage.failed_calls == 0
    (fin,) = of(events, TrialFinished, variant)
    assert tokens(fin.usage) == tokens(fin.gateway_usage) == SUCCESS
    assert fin.patch_paths == ["calc.py"]
    calls = of(events, ModelCall, variant)
    assert [c.call_index for c in calls] == [0, 1, 2, 3, 4] and {c.mode for c in calls} == {"scripted"}
    steps = of(events, TrajectoryStep, variant)
    assert stage.trajectory_steps == len(steps) > 0
    assert [s.action for s in steps if s.kind == "tool"][:4] == ["read", "run", "edit", "run"]
    model_turns = [s for s in steps if s.kind == "model"]
    assert sum(s.output_tokens for s in model_turns) == SUCCESS[1]
    assert {s.tokens_from for s in model_turns} == {"gateway"}  # joined to the gateway's records by response id
    assert stage.usage.time_to_first_edit_s is not None and stage.usage.time_to_first_edit_s > 0


def test_versions_sessions_and_settings_are_recorded(harness_run):
    events = harness_run["events"]
    (start,) = of(events, RunStarted)
    info = {v.variant: v for v in start.variants}
    versions = {"claude": "2.1.332", "codex": "0.171.0", "mini": "2.4.6"}
    for variant, version in versions.items():
        assert info[variant].harness_version == version
        (stage,) = of(events, StageFinished, variant)
        assert stage.harness_version == version
    assert info["claude"].harness == "claude-code" and info["claude"].settings["harness"]["max_retries"] == 1
    codex = info["codex"].settings["harness"]
    # inside bubblewrap Codex's own sandbox cannot start: trialhouse's sandbox confines it instead
    assert codex["sandbox"] == "danger-full-access" and codex["service_tier"] == "fast" and codex["fast_mode"] is True
    assert all(of(events, StageFinished, v)[0].session_id for v in ("claude", "codex", "claude-denied"))
    assert start.gateway.mode == "scripted" and set(start.gateway.variants) == set(info)
    assert set(start.gateway.script_sha256) == {"*", "codex", "mini", "claude-500"}
    # the same CLI against another script is another configuration
    assert info["claude"].config_id != info["claude-500"].config_id
    assert info["claude"].settings["gateway"]["sha256"] == start.gateway.script_sha256["*"]


def test_http_500_retried_is_infra_error_with_every_call_recorded_and_each_retry_counted_once(harness_run):
    events = harness_run["events"]
    calls = of(events, ModelCall, "claude-500")
    assert [(c.status, c.retries) for c in calls] == [(500, 0), (500, 1), (500, 2), (500, 3)]
    (stage,) = of(events, StageFinished, "claude-500")
    assert stage.gateway_usage.failed_calls == 4 and stage.gateway_usage.input_tokens is None  # unknown, not 0
    assert stage.gateway_usage.retries == 3  # max_retries=3, not 0+1+2+3
    report = json.loads((harness_run["out"] / "report.json").read_text())
    (trial,) = [t for t in report["trials"] if t["variant"] == "claude-500"]
    assert trial["gateway_usage"]["retries"] == 3


def test_a_model_other_than_the_label_is_flagged_per_trial_and_in_summarize(harness_run):
    fins = {e.variant: e for e in of(harness_run["events"], TrialFinished)}
    opus = fins["claude-opus"]
    assert opus.model_substituted is True and opus.gateway_usage.models
    assert "claude-opus-4-1" not in opus.gateway_usage.models
    assert fins["claude"].model_substituted is False and fins["claude"].gateway_usage.models == ["th-scripted-1"]
    report = json.loads((harness_run["out"] / "report.json").read_text())
    assert {t["variant"]: t["model_substituted"] for t in report["trials"]}["claude-opus"] is True
    proc = subprocess.run([PY, "-m", "trialhouse", "summarize", "--warehouse", str(harness_run["warehouse"]),
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    warnings = [w for w in json.loads(proc.stdout)["sanity"] if w["check"] == "model_substituted"]
    assert len(warnings) == 1 and warnings[0]["count"] == 1
    assert "claude-opus-4-1" in warnings[0]["message"] and opus.gateway_usage.models[0] in warnings[0]["message"]


def test_turn_limit_is_a_budget_stop_and_its_steps_come_from_the_gateway(harness_run):
    events = harness_run["events"]
    (stage,) = of(events, StageFinished, "claude-turns")
    assert stage.usage.source == "claude-json" and len(of(events, ModelCall, "claude-turns")) == 2
    steps = of(events, TrajectoryStep, "claude-turns")  # json output has no per-step data
    assert [(s.kind, s.source) for s in steps] == [("model", "gateway")] * 2
    assert tokens(stage.usage) == tokens(stage.gateway_usage)


def test_a_denied_tool_is_recorded_and_the_edit_still_counts(harness_run):
    events = harness_run["events"]
    (stage,) = of(events, StageFinished, "claude-denied")
    assert [d.tool_name for d in stage.permission_denials] == ["Bash", "Bash"]
    runs = [s for s in of(events, TrajectoryStep, "claude-denied") if s.action == "run"]
    assert runs and all(s.ok is False for s in runs)  # the check never ran


def test_report_json_carries_the_gateway_and_the_harness_fields(harness_run):
    report = json.loads((harness_run["out"] / "report.json").read_text())
    assert report["gateway"]["mode"] == "scripted"
    trials = {t["variant"]: t for t in report["trials"]}
    assert trials["claude"]["gateway_usage"]["output_tokens"] == SUCCESS[1]
    (stage,) = trials["claude-denied"]["attempts"][0]["stages"]
    assert stage["permission_denials"] == ["Bash", "Bash"] and stage["harness_version"] == "2.1.332"


def test_trajectories_and_redacted_evidence_are_kept(harness_run):
    out = harness_run["out"]
    assert list((out / "trials" / "fix-add__codex__r1" / "trajectories" / "a1-build").glob("rollout-*.jsonl"))
    assert (out / "trials" / "fix-add__mini__r1" / "trajectories" / "a1-build" / "mini.traj.json").is_file()
    assert '"type":"result"' in (out / "trials" / "fix-add__claude__r1" / "logs" / "a1-build.stdout").read_text()
    assert not (out / "trials" / "fix-add__claude__r1" / ".sandbox").exists()  # the private HOME is gone


def test_the_warehouse_holds_steps_and_model_calls_from_both_sides_and_they_agree(harness_run):
    from warehouse import db

    con = db.open(harness_run["warehouse"], read_only=True)
    rows = con.execute("""
        SELECT t.variant, s.input_tokens, s.output_tokens, s.cache_read_tokens,
               s.gateway_input_tokens, s.gateway_output_tokens, s.gateway_cache_read_tokens,
               (SELECT sum(output_tokens) FROM model_calls m WHERE m.trial_id = s.trial_id AND m.status = 200),
               (SELECT sum(output_tokens) FROM steps p WHERE p.trial_id = s.trial_id AND p.kind = 'model'),
               (SELECT count(*) FROM steps p WHERE p.trial_id = s.trial_id), s.trajectory_steps,
               s.harness_version, s.permission_denials, t.gateway_calls
        FROM stages s JOIN trials t USING (run_id, trial_id) ORDER BY t.variant""").fetchall()
    by = {r[0]: r[1:] for r in rows}
    for variant in ("claude", "codex", "mini", "claude-denied"):
        harness, gateway, (calls_out, steps_out, n_steps, recorded) = by[variant][:3], by[variant][3:6], by[variant][6:10]
        assert harness == gateway == SUCCESS and calls_out == steps_out == SUCCESS[1] and n_steps == recorded > 0
    assert by["claude-denied"][11] == 2 and by["claude"][10] == "2.1.332" and by["claude"][12] == 5
    assert by["claude-500"][3:6] == (None, None, None)
    con.close()
