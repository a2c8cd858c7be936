"""The denominator rule (docs/design.md, "The denominator rule"): an agent cannot turn its
failures into ``infra_error`` abstentions by what it leaves behind.

Each trigger issue 29 found is a real ``command`` agent (``agents/abstainer.py``) that
solves one case and fails the other while leaving the trigger; its honest twin fails
the same way without it. Once the rule applies the two have the same rate.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from contract.trial_events import Flag, TrialFinished
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable
ABSTAINER = str(Path(__file__).parent / "agents" / "abstainer.py")
RUBRIC = "# rubric\npass when the change is right\n"


def abstainer(trigger: str) -> dict:
    return {"kind": "command", "argv": [PY, ABSTAINER, trigger, "mul"]}


def twin_corpus(kit, root: Path, trigger: str, judge: bool = False) -> Path:
    """Two cases (``mul`` solved, ``mul_again`` failed) and two variants: the abstainer and
    its honest twin. ``judge``: a scripted built-in judge reads each trial's evidence."""
    evaluations = {"evaluations": {"judge": {"host": "builtin", "script": "pass.json"}}} if judge else {}
    m = kit.make_corpus(root, variants=[{"id": "abstainer", "agent": abstainer(trigger), **evaluations},
                                        {"id": "honest", "agent": abstainer("none"), **evaluations}])
    data = json.loads(m.read_text())
    again = json.loads(json.dumps(data["cases"][0]))
    again["id"] = "mul_again"
    data["cases"].append(again)
    if judge:
        (root / "rubric.md").write_text(RUBRIC)
        answer = json.dumps({"verdict": "pass", "reasons": ["r"]})
        (root / "pass.json").write_text(json.dumps({"steps": [{"text": answer, "usage": {"input_tokens": 7,
                                                                                      "output_tokens": 2}}]}))
        for case in data["cases"]:
            case["criteria"].append({"id": "fits", "description": "fits", "judge": {"rubric": "rubric.md"}})
    m.write_text(json.dumps(data))
    return m


def rates(events: list) -> dict[str, tuple[int, int]]:
    """variant → (accepted, trials in the denominator: complete, not infra_error/invalid)."""
    out: dict[str, Counter] = {}
    for e in events:
        if isinstance(e, TrialFinished):
            c = out.setdefault(e.variant, Counter())
            c["n"] += e.outcome not in ("infra_error", "invalid")
            c["ok"] += e.outcome == "accepted"
    return {v: (c["ok"], c["n"]) for v, c in out.items()}


@pytest.mark.parametrize("trigger", ["space", "big", "badutf8", "longpath"])
def test_an_abstention_trigger_is_charged_to_the_agent(kit, corpus_root, tmp_path, trigger):
    m = twin_corpus(kit, corpus_root, trigger, judge=trigger == "longpath")
    res = run_trials(m, tmp_path / "o", progress=False)
    events = read_events(res.events_path)
    fins = {(e.variant, e.case_id): e for e in events if isinstance(e, TrialFinished)}
    failed = fins[("abstainer", "mul_again")]
    assert failed.outcome != "infra_error", failed.reason
    assert failed.outcome in ("target_failed", "agent_output_error"), failed.reason
    assert rates(events)["abstainer"] == rates(events)["honest"] == (1, 2)
    tdir = tmp_path / "o" / "trials" / failed.trial_id
    if trigger in ("space", "badutf8"):  # an ordinary patch: the name exactly as git writes it
        patch = (tdir / "changes.patch").read_bytes()
        name = {"space": "x b/y", "badutf8": '"bad\\377name.txt"'}[trigger]
        assert f"+++ b/{name}".encode() in patch or f'+++ "b/{name[1:]}'.encode() in patch
        assert name in failed.patch_paths
        flagged = [e.path for e in events if isinstance(e, Flag) and e.trial_id == failed.trial_id]
        assert all(isinstance(p, str) for p in flagged)
    if trigger == "big":  # cut at its limit, still inspected, the trial an ordinary failure
        assert failed.outcome == "target_failed" and failed.patch_truncated
    if trigger == "longpath":  # the judges' evidence folder cannot hold it: the agent's failure
        assert failed.outcome == "agent_output_error" and "ENAMETOOLONG" in failed.reason
        assert (tdir / "changes.patch").exists() and (tdir / "workspace" / "calc.py").exists()


def th(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "250"}, timeout=600)


def test_an_abstention_the_runner_cannot_recognise_is_flagged_with_its_figures(kit, corpus_root, tmp_path):
    """The residual channel: an agent that claims a provider failure (Claude's JSON error
    result, exit 1) on the case it would fail is ``infra_error`` (the runner cannot tell a
    real outage from a claim); ``analysis.abstention`` flags it from the data in summarize,
    compare, eligibility and the report, with the rate counting infra errors as failures."""
    m = twin_corpus(kit, corpus_root, "claim")
    data = json.loads(m.read_text())
    data["variants"][0]["agent"]["usage_format"] = "claude-json"
    m.write_text(json.dumps(data))
    res = run_trials(m, tmp_path / "o", progress=False)
    fins = {(e.variant, e.case_id): e for e in read_events(res.events_path) if isinstance(e, TrialFinished)}
    assert fins[("abstainer", "mul_again")].outcome == "infra_error"
    wh = str(tmp_path / "wh" / "w.duckdb")
    assert th("ingest", str(tmp_path / "o"), "--warehouse", wh).returncode == 0
    summary = json.loads(th("summarize", "--warehouse", wh, "--json").stdout)
    flagged = [e for e in summary["eligibility"] if any("selective abstention" in r for r in e["reasons"])]
    assert [e["config_id"] for e in flagged] == [fins[("abstainer", "mul")].config_id]
    (reason,) = [r for r in flagged[0]["reasons"] if "selective abstention" in r]
    assert "1 of 2 trials are infra errors (50%) against 0% (0/2)" in reason
    assert "1 of them on tasks the others fail" in reason
    assert "rate 100% (1/1), 50% (1/2) with infra errors counted as failures" in reason
    assert any("selective abstention" in w for w in summary["warnings"])
    eligibility = th("eligibility", "--warehouse", wh)
    assert "selective abstention" in eligibility.stdout, eligibility.stderr
    compared = th("compare", "--warehouse", wh)
    assert "selective abstention" in compared.stdout + compared.stderr
    made = th("report", "--warehouse", wh, "--output", str(tmp_path / "report"))
    assert made.returncode == 0, made.stderr
    assert "selective abstention" in (tmp_path / "report" / "report.html").read_text()


def test_an_honest_outage_shared_by_everyone_is_not_flagged(kit, corpus_root, tmp_path):
    """The control: the same infra errors on both configurations are no abstention."""
    m = twin_corpus(kit, corpus_root, "claim")
    data = json.loads(m.read_text())
    for v in data["variants"]:
        v["agent"] = {**abstainer("claim"), "usage_format": "claude-json"}
    m.write_text(json.dumps(data))
    run_trials(m, tmp_path / "o", progress=False)
    wh = str(tmp_path / "wh" / "w.duckdb")
    assert th("ingest", str(tmp_path / "o"), "--warehouse", wh).returncode == 0
    summary = json.loads(th("summarize", "--warehouse", wh, "--json").stdout)
    assert not any("selective abstention" in r for e in summary["eligibility"] for r in e["reasons"])
