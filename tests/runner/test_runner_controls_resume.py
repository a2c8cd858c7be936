"""Validation-only controls, the committed schemas, resume after SIGKILL, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from contract.envelope import utc_now
from contract.events import dump_event, events_json_schema
from contract.run_events import CaseValidated, ControlResult, RunFinished, RunStarted
from contract.stage_events import StageStarted
from contract.trial_events import TrialFinished, TrialStarted
from runner.eventlog import read_events, repair_tail
from runner.manifest import manifest_json_schema

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]
EVENTS_SCHEMA = ROOT / "contract" / "schemas" / "events.v1.json"
MANIFEST_SCHEMA = ROOT / "runner" / "schemas" / "manifest.v1.json"


def cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, **kw)


def test_committed_schemas_match_the_models():
    assert json.loads(EVENTS_SCHEMA.read_text()) == events_json_schema()
    assert json.loads(MANIFEST_SCHEMA.read_text()) == manifest_json_schema()
    proc = cli("schema", "events")
    assert proc.returncode == 0 and json.loads(proc.stdout) == events_json_schema()
    # `make schema` writes the command's output: the committed bytes are exactly that
    assert proc.stdout == EVENTS_SCHEMA.read_text(encoding="utf-8")


def test_validation_only_passes_and_writes_report(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    out = tmp_path / "ctl"
    proc = cli("run", "--manifest", str(m), "--output", str(out), "--validation-only", "--repeats", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "mul" in proc.stdout and "1/1 cases ok" in proc.stdout
    events = read_events(out / "events.jsonl")
    assert events[0].validation_only
    results = [e for e in events if isinstance(e, ControlResult)]
    # 2 criteria × 2 controls × 2 repeats, and no agent ever ran.
    assert len(results) == 8 and all(r.ok for r in results)
    assert not any(isinstance(e, (StageStarted, TrialStarted)) for e in events)
    report = json.loads((out / "report.json").read_text())
    assert report["controls"]["ok"] is True and report["trials"] == []
    assert report["controls"]["cases"][0]["baseline"] == {"mul_works": "failed", "add_works": "passed"}


def test_failing_and_flaky_controls_exit_nonzero(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    data = json.loads(m.read_text())
    counter = tmp_path / "count"
    flip = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0; "
            "p.write_text(str(n + 1)); sys.exit(n % 2)")
    data["cases"][0]["criteria"] += [
        {"id": "always_fails", "layer": "regression", "command": [PY, "-c", "import sys; sys.exit(1)"]},
        {"id": "flips", "layer": "regression", "command": [PY, "-c", flip, str(counter)]},
    ]
    # The flipping grader keeps a counter outside its own copy, which only an unisolated
    # grader can do; flaky detection itself is the same for every backend.
    data["isolation"] = {"backend": "none"}
    m.write_text(json.dumps(data))
    out = tmp_path / "ctl"
    proc = cli("run", "--manifest", str(m), "--output", str(out), "--validation-only", "--no-progress",
               "--repeats", "5")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (cv,) = [e for e in read_events(out / "events.jsonl") if isinstance(e, CaseValidated)]
    assert not cv.ok and cv.flaky_criteria == ["flips"]
    assert not any("always_fails" in p for p in cv.problems)  # pre-existing: not a problem
    assert [p.criterion_id for p in cv.pre_existing] == ["always_fails"]
    assert json.loads((out / "report.json").read_text())["status"] == "failed_controls"


def _wait_for(path: Path, predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and predicate(path.read_text(errors="replace")):
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting on {path}")


def test_sigkill_then_resume_loses_and_duplicates_nothing(kit, corpus_root, tmp_path):
    variants = [{"id": "a", "agent": kit.agent("slow", "0.2")},
                {"id": "b", "agent": kit.agent("slow", "0.2")}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=2)
    out = tmp_path / "run dir"
    events_path = out / "events.jsonl"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(events_path, lambda t: t.count('"trial_finished"') >= 1 and t.count('"trial_started"') >= 2)
    proc.kill()
    proc.wait()
    with events_path.open("ab") as f:  # simulate a torn last line
        f.write(b'{"event": "trial_fin')
    res = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--no-progress")
    assert res.returncode == 0, res.stdout + res.stderr
    events = read_events(events_path)
    fins = Counter(e.trial_id for e in events if isinstance(e, TrialFinished))
    assert sorted(fins) == sorted(f"mul__{v}__r{r}" for v in "ab" for r in (1, 2))
    assert set(fins.values()) == {1}
    assert [e.seq for e in events] == list(range(len(events)))
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].resumed and starts[0].run_id == starts[1].run_id
    report = json.loads((out / "report.json").read_text())
    assert report["trials_finished"] == 4 and report["status"] == "completed"
    # Resuming a finished run redoes nothing.
    again = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--json")
    assert json.loads(again.stdout)["skipped"] == 4
    assert Counter(e.event for e in read_events(events_path))["trial_finished"] == 4


def test_ctrl_c_stops_cleanly_with_partial_report(kit, corpus_root, tmp_path):
    pidfile = tmp_path / "child.pid"
    variants = [{"id": "a", "agent": kit.agent("fork", str(pidfile))},
                {"id": "b", "agent": kit.agent("hang")}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=1, timeout_seconds=120)
    out = tmp_path / "o"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(out / "events.jsonl", lambda t: '"stage_started"' in t and t.count('"trial_started"') >= 2)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "--resume" in err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "interrupted" and report["trials_finished"] == 1
    assert [t["variant"] for t in report["trials"]] == ["a"]


def test_repair_tail_truncates_only_the_torn_line(tmp_path):
    p = tmp_path / "e.jsonl"
    good = dump_event(RunFinished(run_id="r", seq=0, ts=utc_now(), status="completed",
                                        trials_total=0, trials_finished=0, duration_s=0))
    p.write_text(good + "\n" + '{"event": "run_fin')
    assert repair_tail(p) == len('{"event": "run_fin')
    assert p.read_text() == good + "\n" and repair_tail(p) == 0
    p.write_text(good + "\n" + "{not json}\n")
    assert repair_tail(p) == len("{not json}\n") and p.read_text() == good + "\n"
