"""Pre-existing failures are noise, not a reason to drop the case (issue 30, item 1).

A real git repository whose lint check is already red at the initial commit, a case whose
target is fine: the case is scored, the lint criterion is recorded as pre-existing (with
its output), a trial that leaves lint red is accepted, and a trial that breaks a check
that passed on the initial commit is a regression. The set travels with the events:
``--resume`` and ``--controls`` reuse grade the same way, and the warehouse, ``summarize``
and the report count pre-existing criteria per case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from contract.run_events import CaseValidated, ControlResult
from contract.trial_events import Grading, TrialFinished
from runner.controls import run_controls
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable

LINT = """import os, pathlib, sys
ws = pathlib.Path(os.environ["TRIALHOUSE_WORKSPACE"])
bad = [f"{p.relative_to(ws)}:{n}: TODO left in the code"
       for p in sorted(ws.rglob("*.py")) for n, line in enumerate(p.read_text().splitlines(), 1)
       if "TODO" in line]
print("\\n".join(bad) or "lint clean")
sys.exit(1 if bad else 0)
"""
NO_TABS = """import os, pathlib, sys
text = (pathlib.Path(os.environ["TRIALHOUSE_WORKSPACE"]) / "calc.py").read_text()
print("tab in calc.py" if "\\t" in text else "no tabs")
sys.exit(1 if "\\t" in text else 0)
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def red_repository(kit, root: Path, **overrides) -> Path:
    """The tiny corpus, its repository given a file whose TODO the lint check refuses (red
    on the initial commit), a lint and a style check, and a variant that breaks the style."""
    repo = root / "repo"
    m = kit.make_corpus(root, **overrides)
    (repo / "legacy.py").write_text("def old():\n    return 1  # TODO: remove\n")
    kit.git(repo, "add", "legacy.py")
    kit.git(repo, "commit", "-qm", "legacy code, with a TODO the linter refuses")
    (root / "graders" / "lint.py").write_text(LINT)
    (root / "graders" / "no_tabs.py").write_text(NO_TABS)
    ref = (root / "patches" / "mul.patch").read_text()
    (root / "patches" / "tabbed.patch").write_text(ref.replace("+    return a * b", "+\treturn a * b"))
    data = json.loads(m.read_text())
    data["initial_commit"] = kit.git(repo, "rev-parse", "HEAD")
    data["cases"][0]["criteria"] += [
        {"id": "lint", "layer": "repository", "description": "no TODO in the code",
         "command": [PY, "{inputs}/graders/lint.py"]},
        {"id": "no_tabs", "layer": "repository", "description": "calc.py has no tabs",
         "command": [PY, "{inputs}/graders/no_tabs.py"]},
    ]
    data["variants"] = [
        {"id": "fixer", "agent": kit.agent("patch", str((root / "patches" / "mul.patch").resolve()))},
        {"id": "tabber", "agent": kit.agent("patch", str((root / "patches" / "tabbed.patch").resolve()))},
    ]
    data.update(overrides)
    m.write_text(json.dumps(data))
    return m


def finished(path: Path) -> dict[str, TrialFinished]:
    return {e.variant: e for e in read_events(path) if isinstance(e, TrialFinished)}


def test_a_red_lint_check_leaves_the_case_scored_and_its_failure_is_noise(kit, corpus_root, tmp_path):
    m = red_repository(kit, corpus_root)
    res = run_trials(m, tmp_path / "o", progress=False)
    assert res.unscored == {} and res.trials_skipped == 0
    events = read_events(res.events_path)
    (cv,) = [e for e in events if isinstance(e, CaseValidated)]
    assert cv.ok and cv.problems == [] and cv.baseline["lint"] == "failed"
    (pre,) = cv.pre_existing
    assert (pre.criterion_id, pre.layer) == ("lint", "repository")
    assert "legacy.py:2: TODO left in the code" in pre.output
    assert (tmp_path / "o" / pre.output_path).read_text() == pre.output
    lint = [e for e in events if isinstance(e, ControlResult) and e.criterion_id == "lint"]
    assert [(e.control, e.verdict, e.ok, e.pre_existing) for e in lint] == [
        ("negative", "failed", True, True), ("positive", "failed", True, True)]
    fins = finished(res.events_path)
    assert fins["fixer"].outcome == "accepted"
    assert fins["fixer"].reason == "all criteria passed (pre-existing failures ignored: lint)"
    assert fins["fixer"].layers == {"target": "pass", "regression": "pass", "repository": "pass"}
    assert fins["tabber"].outcome == "regression"
    assert fins["tabber"].reason == "broke existing behaviour: no_tabs (pre-existing failures ignored: lint)"
    gradings = {(e.trial_id, e.criterion_id): e for e in events if isinstance(e, Grading)}
    assert gradings[("mul__tabber__r1", "lint")].baseline == "failed"
    assert gradings[("mul__tabber__r1", "no_tabs")].baseline == "passed"
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    (case,) = report["controls"]["cases"]
    assert case["ok"] and [p["criterion_id"] for p in case["pre_existing"]] == ["lint"]


def test_the_pre_existing_set_travels_with_controls_reuse(kit, corpus_root, tmp_path):
    m = red_repository(kit, corpus_root)
    ctl = run_controls(m, tmp_path / "ctl", repeats=2, progress=False)
    assert ctl.ok and ctl.cases[0]["pre_existing"] == ["lint"]
    res = run_trials(m, tmp_path / "o", progress=False, controls_dir=tmp_path / "ctl")
    (cv,) = [e for e in read_events(res.events_path) if isinstance(e, CaseValidated)]
    assert cv.from_run == ctl.run_id and [p.criterion_id for p in cv.pre_existing] == ["lint"]
    assert {v: f.outcome for v, f in finished(res.events_path).items()} == {
        "fixer": "accepted", "tabber": "regression"}


STALL = """import pathlib, subprocess, sys, time
flag, patch = pathlib.Path(sys.argv[1]), sys.argv[2]
if not flag.exists():
    flag.write_text("stalled once")
    time.sleep(120)
subprocess.run(["git", "apply", patch], check=True)
"""


def test_the_pre_existing_set_travels_with_resume(kit, corpus_root, tmp_path):
    flag = tmp_path / "stalled"
    m = red_repository(kit, corpus_root, isolation={"backend": "none"})
    data = json.loads(m.read_text())
    data["variants"][1]["agent"] = {"kind": "command", "argv": [
        PY, "-c", STALL, str(flag), str((corpus_root / "patches" / "tabbed.patch").resolve())]}
    m.write_text(json.dumps(data))
    out = tmp_path / "o"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert flag.exists()
    res = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--no-progress")
    assert res.returncode == 0, res.stdout + res.stderr
    events = read_events(out / "events.jsonl")
    assert len([e for e in events if isinstance(e, CaseValidated)]) == 1  # the controls were not run again
    assert {v: f.outcome for v, f in finished(out / "events.jsonl").items()} == {
        "fixer": "accepted", "tabber": "regression"}
    assert "pre-existing failures ignored: lint" in finished(out / "events.jsonl")["tabber"].reason


def test_a_reference_that_breaks_a_passing_check_still_leaves_the_case_unscored(kit, corpus_root, tmp_path):
    m = red_repository(kit, corpus_root)
    data = json.loads(m.read_text())
    data["cases"][0]["reference_patch"] = "patches/tabbed.patch"
    m.write_text(json.dumps(data))
    res = run_trials(m, tmp_path / "o", progress=False)
    assert "no_tabs (repository) passes on the initial commit but fails with the reference patch" \
        in res.unscored["mul"]
    assert "lint" not in res.unscored["mul"]


def test_warehouse_summarize_and_report_count_pre_existing_criteria(kit, corpus_root, tmp_path):
    m = red_repository(kit, corpus_root)
    res = run_trials(m, tmp_path / "o", progress=False)
    wh = tmp_path / "w.duckdb"
    assert cli("ingest", str(tmp_path / "o"), "--warehouse", str(wh)).returncode == 0
    rows = json.loads(cli("sql", "-w", str(wh), "SELECT case_id, scored, pre_existing, pre_existing_json "
                                                "FROM cases", "--json").stdout)
    assert [(r["case_id"], r["scored"], r["pre_existing"]) for r in rows] == [("mul", True, 1)]
    (entry,) = json.loads(rows[0]["pre_existing_json"])
    assert entry["criterion_id"] == "lint" and "TODO left in the code" in entry["output"]
    summary = json.loads(cli("summarize", "-w", str(wh), "--json").stdout)
    assert summary["pre_existing"]["cases"] == [
        {"run_id": res.run_id, "case_id": "mul", "criteria": ["lint"], "count": 1}]
    text = cli("summarize", "-w", str(wh)).stdout
    assert "1 case(s) scored with pre-existing failures" in text and "mul (lint)" in text
    out = tmp_path / "rep"
    assert cli("report", "-w", str(wh), "--output", str(out)).returncode == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["controls"]["pre_existing"]["cases"][0]["criteria"] == ["lint"]
    assert "pre-existing failures" in (out / "report.md").read_text()
