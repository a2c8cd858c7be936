"""Bookkeeping (issue 30, item 5): unknown spend is ``unknown``, an interrupted grading leaves
its trial unfinished (and the message counts what was written), ``validate`` resolves a
command agent's paths the way the runner will, and a resumed run's controls are counted once."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from contract.run_events import ControlResult
from contract.trial_events import Grading, TrialFinished
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable


def cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, **kw)


def finished(path: Path) -> dict[str, TrialFinished]:
    return {e.trial_id: e for e in read_events(path) if isinstance(e, TrialFinished)}


def _wait_for(predicate, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


# -- unknown cost is never "within" ----------------------------------------------------
def test_a_timed_out_trial_with_unknown_cost_is_unknown_not_within(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": kit.agent("hang")}],
                        max_cost_usd=1.0, timeout_seconds=3)
    res = run_trials(m, tmp_path / "o", progress=False)
    (fin,) = finished(res.events_path).values()
    assert fin.outcome == "budget_exhausted" and fin.usage.cost_usd is None
    assert fin.cost_budget_status == "unknown"


def test_a_trial_that_never_started_an_agent_has_unknown_cost(kit, corpus_root, tmp_path):
    count = tmp_path / "prepare-count"
    code = ("import pathlib, sys; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0;"
            " p.write_text(str(n + 1)); sys.exit(4 if n >= 2 else 0)")  # passes both controls, fails the trial
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": kit.agent("noop")}], max_cost_usd=1.0,
                        prepare_commands=[[PY, "-c", code, str(count)]], isolation={"backend": "none"})
    res = run_trials(m, tmp_path / "o", progress=False)
    (fin,) = finished(res.events_path).values()
    assert fin.outcome == "infra_error" and fin.attempts == 0
    assert fin.cost_budget_status == "unknown"


# -- Ctrl-C during grading ------------------------------------------------------------
SLOW_GRADER = """import os, pathlib, sys, time
ws = os.environ["TRIALHOUSE_WORKSPACE"]
started, release = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if "__slow__" in ws and not release.exists():  # a trial of the slow variant: grade slowly
    (started / str(os.getpid())).write_text(ws)
    time.sleep(120)
sys.exit(0)
"""


def test_ctrl_c_during_grading_leaves_the_trials_unfinished_and_counts_what_was_written(
        kit, corpus_root, tmp_path):
    started, release = tmp_path / "grading", tmp_path / "release"
    started.mkdir()
    variants = [{"id": "quick", "agent": kit.agent("noop")}, {"id": "slow", "agent": kit.agent("noop")}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=2, timeout_seconds=300,
                        isolation={"backend": "none"})
    (corpus_root / "graders" / "slow.py").write_text(SLOW_GRADER)
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"].append({"id": "slow_check", "layer": "regression",
                                         "command": [PY, "{inputs}/graders/slow.py", str(started), str(release)]})
    m.write_text(json.dumps(data))
    out = tmp_path / "o"
    events = out / "events.jsonl"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress", "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "NO_COLOR": "1"})
    # quick r1 finishes; slow r1 and slow r2 are both in grading (two workers)
    _wait_for(lambda: len(list(started.iterdir())) >= 2 and events.exists()
              and events.read_text().count('"trial_finished"') >= 1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=90)
    assert proc.returncode == 130, err
    fins = finished(events)
    assert {t: f.outcome for t, f in fins.items()} == {"mul__quick__r1": "target_failed"}, err
    assert "interrupted after 1/4 trials" in err and "Traceback" not in err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "interrupted" and report["trials_finished"] == 1
    # A plain --resume runs the interrupted trials again (none was recorded as infra_error).
    release.write_text("go")
    res = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--no-progress", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["skipped"] == 1
    fins = finished(events)
    assert sorted(fins) == sorted(f"mul__{v}__r{r}" for v in ("quick", "slow") for r in (1, 2))
    assert {f.outcome for f in fins.values()} == {"target_failed"}
    assert Counter(e.event for e in read_events(events))["trial_finished"] == 4


# -- validate resolves a command agent's paths -------------------------------------------
def test_validate_refuses_a_command_agent_path_that_does_not_resolve(kit, corpus_root, tmp_path):
    (corpus_root / "agents").mkdir()
    (corpus_root / "agents" / "fix.py").write_text("print('fixing')\n")
    m = kit.make_corpus(corpus_root, variants=[
        {"id": "rel", "agent": {"kind": "command", "argv": ["python3", "agents/fix.py", "{workspace}"]}},
        {"id": "gone", "agent": {"kind": "command", "argv": [str(corpus_root / "nope.sh")]}},
        {"id": "noprog", "agent": {"kind": "command", "argv": ["no-such-agent-cli", "--model", "{model}"]}},
        {"id": "fine", "agent": {"kind": "command", "argv": ["python3", str(corpus_root / "agents" / "fix.py"),
                                                            "--model", "openai/gpt-4o", "{workspace}/x.py"]}},
    ])
    res = cli("validate", "--manifest", str(m))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    (rel,) = [x for x in lines if x.startswith("variants[0].agent.argv[1]:")]
    assert "agents/fix.py" in rel and "workspace" in rel and str(corpus_root / "agents" / "fix.py") in rel
    (gone,) = [x for x in lines if x.startswith("variants[1].agent.argv[0]:")]
    assert "nope.sh" in gone and "does not exist" in gone
    (noprog,) = [x for x in lines if x.startswith("variants[2].agent.argv[0]:")]
    assert "no-such-agent-cli" in noprog
    assert not any(x.startswith("variants[3]") for x in lines)
    # run refuses it the same way, before anything runs
    run = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o"))
    assert run.returncode == 2 and "variants[0].agent.argv[1]" in run.stderr
    assert not (tmp_path / "o" / "events.jsonl").exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="validates as another user (root)")
def test_an_agent_path_the_runners_user_cannot_reach_is_one_line(kit):
    """Found in the cgroup v2 guest: an ordinary user's ``validate`` of an agent below root's
    0700 home was a PermissionError traceback from the path check."""
    root = Path(tempfile.mkdtemp(prefix="trialhouse-reach-"))
    try:
        locked = root / "locked"
        locked.mkdir(mode=0o700)
        m = kit.make_corpus(root / "c", variants=[{"id": "v", "agent": {"kind": "command",
                                                                        "argv": [str(locked / "agent.sh")]}}])
        os.chmod(root, 0o755)
        uid = 1_999_200_000 + os.getpid() % 100_000
        res = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                              sys.executable, "-m", "trialhouse", "validate", "--manifest", str(m)],
                             capture_output=True, text=True, cwd="/", timeout=180,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/", "NO_COLOR": "1"})
        assert res.returncode == 2 and "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
        (line,) = [x for x in res.stdout.splitlines() if x.startswith("variants[0].agent.argv[0]:")]
        assert f"{locked / 'agent.sh'}: this user cannot reach it (permission denied on the way)" in line
    finally:
        shutil.rmtree(root)


def test_an_agent_path_longer_than_the_system_allows_is_a_problem_not_a_crash(kit, corpus_root):
    """Found by the manifest fuzzer: a path past NAME_MAX/PATH_MAX made ``Path.exists`` raise
    inside validate (a relative one through the 'it exists at' hint, an absolute one directly)."""
    long = "/".join(["x"] * 3000) + "/agent.py"
    m = kit.make_corpus(corpus_root, variants=[
        {"id": "rel", "agent": {"kind": "command", "argv": ["python3", long]}},
        {"id": "abs", "agent": {"kind": "command", "argv": ["/" + long]}},
        {"id": "name", "agent": {"kind": "command", "argv": ["/tmp/" + "n" * 300 + ".py"]}},
    ])
    res = cli("validate", "--manifest", str(m))
    assert res.returncode == 2 and "Traceback" not in res.stdout + res.stderr, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    (rel,) = [x for x in lines if x.startswith("variants[0].agent.argv[1]:")]
    assert "does not exist in the workspace" in rel and "it exists at" not in rel
    (absolute,) = [x for x in lines if x.startswith("variants[1].agent.argv[0]:")]
    assert absolute.endswith("cannot be looked up here (file name too long)"), absolute[-200:]
    (name,) = [x for x in lines if x.startswith("variants[2].agent.argv[0]:")]
    assert name.endswith("cannot be looked up here (file name too long)"), name[-200:]


def test_a_relative_path_the_repository_holds_is_accepted(kit, corpus_root):
    m = kit.make_corpus(corpus_root, variants=[
        {"id": "in-repo", "agent": {"kind": "command", "argv": ["python3", "calc.py"]}},
        {"id": "dot", "agent": {"kind": "command", "argv": ["python3", "./calc.py"]}},
    ])
    res = cli("validate", "--manifest", str(m))
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(m.read_text())
    data["variants"] = [{"id": "prog", "agent": {"kind": "command", "argv": ["./calc.py"]}}]
    m.write_text(json.dumps(data))
    res = cli("validate", "--manifest", str(m))
    assert res.returncode == 2 and "variants[0].agent.argv[0]: ./calc.py: not executable" in res.stdout


def test_a_program_the_repository_holds_runs_from_the_workspace(kit, corpus_root, tmp_path):
    repo = corpus_root / "repo"
    m = kit.make_corpus(corpus_root)
    script = repo / "agent.sh"
    script.write_text("#!/bin/sh\necho ran > ran.txt\n")
    script.chmod(0o755)
    kit.git(repo, "add", "agent.sh")
    kit.git(repo, "commit", "-qm", "an agent script in the repository")
    data = json.loads(m.read_text())
    data["initial_commit"] = kit.git(repo, "rev-parse", "HEAD")
    data["variants"] = [{"id": "prog", "agent": {"kind": "command", "argv": ["./agent.sh"]}}]
    m.write_text(json.dumps(data))
    assert cli("validate", "--manifest", str(m)).returncode == 0
    res = run_trials(m, tmp_path / "o", progress=False)
    (fin,) = finished(res.events_path).values()
    assert fin.outcome == "target_failed" and fin.patch_paths == ["ran.txt"], fin.reason


# -- controls counted once after a kill and --resume ---------------------------------------
SLOW_CONTROL = """import os, pathlib, sys, time
flag = pathlib.Path(sys.argv[1])
calls = flag.with_suffix(".calls")
n = int(calls.read_text()) if calls.exists() else 0
calls.write_text(str(n + 1))
if n == 1 and not flag.exists():  # the second repeat of the negative control stalls, once
    flag.write_text("seen")
    time.sleep(120)
sys.exit(0)
"""


def test_after_a_kill_during_controls_resume_keeps_one_set_of_control_gradings(
        kit, corpus_root, tmp_path):
    flag = tmp_path / "stalled"
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": kit.agent("noop")}],
                        control_repeats=2, isolation={"backend": "none"})
    (corpus_root / "graders" / "stall.py").write_text(SLOW_CONTROL)
    data = json.loads(m.read_text())
    # repeat 1 of the negative control is written; repeat 2 stalls
    data["cases"][0]["criteria"].append({"id": "stall", "layer": "regression",
                                         "command": [PY, "{inputs}/graders/stall.py", str(flag)]})
    m.write_text(json.dumps(data))
    out = tmp_path / "o"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: flag.exists())
    proc.kill()
    proc.wait()
    partial = [e for e in read_events(out / "events.jsonl") if isinstance(e, ControlResult)]
    assert len(partial) == 3  # negative control, repeat 1
    res = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--no-progress")
    assert res.returncode == 0, res.stdout + res.stderr
    fresh = tmp_path / "fresh"
    assert cli("run", "--manifest", str(m), "--output", str(fresh), "--no-progress").returncode == 0
    wh_resumed, wh_fresh = tmp_path / "resumed.duckdb", tmp_path / "fresh.duckdb"
    assert cli("ingest", str(out), "--warehouse", str(wh_resumed)).returncode == 0
    assert cli("ingest", str(fresh), "--warehouse", str(wh_fresh)).returncode == 0
    count = "SELECT count(*) AS n FROM gradings WHERE trial_id IS NULL"

    def n(wh: Path) -> int:
        r = cli("sql", "-w", str(wh), count, "--json")
        return json.loads(r.stdout)[0]["n"]
    assert n(wh_fresh) == 3 * 2 * 2 and n(wh_resumed) == n(wh_fresh)
    report = json.loads((out / "report.json").read_text())
    (case,) = report["controls"]["cases"]
    assert len(case["results"]) == 12
    trials = [e for e in read_events(out / "events.jsonl") if isinstance(e, Grading)]
    assert len(trials) == 3
