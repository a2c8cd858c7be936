"""Tamper-proof trials: every attack issue 12 reproduced, as a real agent in a real trial.

Each test runs ``tests/runner/agents/attacker.py`` as a ``command`` agent and asserts
that the trial is ``invalid`` (tampering caught), or that the attack gains nothing, or
that the evidence is intact, and that other trials are unaffected. Where the ``none``
backend lets an attack through, a test says so: that is what "not isolated" means.
docs/security.md maps each guarantee to its test here.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from contract.run_events import RunStarted
from contract.trial_events import Grading, TrialFinished
from runner.eventlog import read_events, read_verified
from runner.paths import verify_tree
from runner.run import run_trials
from tests.runner.attack_support import attacker, kill_all_with, trial

PY = sys.executable


def cli(*args: str, **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, **kw)


# -- reading the answer ------------------------------------------------------------


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_agent_cannot_read_the_reference_or_the_graders(kit, corpus_root, tmp_path, backend):
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("read-answer"),
                           isolation={"backend": backend})
    if backend == "bubblewrap":
        assert "FOUND" not in out, out
        assert fin.outcome == "target_failed"
    else:  # not isolated: the answer is on the same disk, which is why bubblewrap is the default
        assert "FOUND inputs dir" in out and fin.outcome == "accepted"


# -- files the hashes did not cover ------------------------------------------------


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_planted_grader_files_never_reach_a_grader(kit, corpus_root, tmp_path, backend):
    fin, events, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("plant-inputs"),
                                isolation={"backend": backend})
    start = next(e for e in events if isinstance(e, RunStarted))
    if backend == "bubblewrap":  # it can only write into its own private /tmp and HOME...
        assert fin.outcome == "target_failed"
        # ...which are gone with the trial: no planted file is left anywhere in the run.
        assert list((tmp_path / "o").rglob("hmac.py")) == []
        assert list((tmp_path / "o").rglob("*.pyc")) == []
    else:  # planted in the run's copy: an unknown file anywhere is a violation
        assert "WROTE" in out and fin.outcome == "invalid"
        assert "graders/hmac.py: unexpected file" in fin.reason
    assert verify_tree(tmp_path / "o" / "inputs", dict(start.input_hashes)) == []


def test_a_planted_pyc_or_pth_in_a_snapshot_copy_is_reported():
    import tempfile

    from runner.paths import Snapshot

    with tempfile.TemporaryDirectory() as tmp:
        snap = Snapshot(Path(tmp) / "in", {"g.py": ""}, {"g.py": b"print(1)\n"})
        snap.hashes["g.py"] = __import__("hashlib").sha256(b"print(1)\n").hexdigest()
        root = snap.materialise(Path(tmp) / "copy")
        assert verify_tree(root, snap.hashes) == []
        (root / "__pycache__").mkdir()
        (root / "__pycache__" / "g.cpython-311.pyc").write_bytes(b"\0")
        (root / "x.pth").write_text("import os")
        os.symlink("/etc/passwd", root / "link")
        assert verify_tree(root, snap.hashes) == [
            "__pycache__/g.cpython-311.pyc: unexpected file", "link: unexpected symlink",
            "x.pth: unexpected file"]


# -- persisting into the runner ----------------------------------------------------


def test_agent_cannot_write_into_the_runners_interpreter(kit, corpus_root, tmp_path):
    before = sorted(Path(sys.prefix).glob("lib/python3*/site-packages/*.pth"))
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("pth", sys.prefix))
    after = sorted(Path(sys.prefix).glob("lib/python3*/site-packages/*.pth"))
    assert "WROTE" not in out and before == after
    assert fin.outcome == "target_failed"


# -- escaping the stage and striking during grading ---------------------------------


def test_a_setsid_daemon_dies_with_the_stage_and_cannot_touch_grading(kit, corpus_root, tmp_path):
    marker = f"daemon-{tmp_path.name}-{secrets.token_hex(4)}"  # unique across concurrent test sessions
    fin, events, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker("daemon", marker))
    assert "daemon started" in out
    assert kill_all_with(marker) == []
    # The daemon kept rewriting calc.py; whatever it managed before the stage ended is
    # exactly what was captured, recorded in changes.patch and graded — nothing after.
    patch = (tdir / "changes.patch").read_text()
    gradings = {g.criterion_id: g.verdict for g in events if isinstance(g, Grading)}
    assert ("def mul" in patch) == (gradings["mul_works"] == "passed")
    assert verify_tree(tmp_path / "o" / "inputs", dict(events[0].input_hashes)) == []


def test_early_exit_from_workspace_code_never_passes_a_token_criterion(kit, corpus_root, tmp_path):
    fin, events, _, _ = trial(kit, corpus_root, tmp_path / "o", attacker("early-exit"), token=True)
    gradings = {g.criterion_id: g for g in events if isinstance(g, Grading)}
    assert gradings["mul_works"].verdict == "failed" and gradings["mul_works"].exit_code == 0
    assert gradings["mul_works"].token_ok is False and "success token" in gradings["mul_works"].note
    assert fin.outcome == "target_failed"


def test_the_token_protocol_passes_an_honest_solution(kit, corpus_root, tmp_path):
    patch = str(corpus_root / "patches" / "mul.patch")
    fin, events, _, _ = trial(kit, corpus_root, tmp_path / "o", kit.agent("patch", patch), token=True)
    assert fin.outcome == "accepted"
    assert all(g.token_ok for g in events if isinstance(g, Grading))


def test_without_the_token_an_early_exit_reads_as_a_pass(kit, corpus_root, tmp_path):
    # Documents why criteria that import workspace code should opt into success_token.
    fin, events, _, _ = trial(kit, corpus_root, tmp_path / "o", attacker("early-exit"))
    assert {g.verdict for g in events if isinstance(g, Grading)} == {"passed"}


def test_workspace_code_cannot_find_the_token_in_env_or_stdin(kit, corpus_root, tmp_path):
    fin, events, _, _ = trial(kit, corpus_root, tmp_path / "o", attacker("steal-token"), token=True)
    assert fin.outcome == "target_failed"
    assert not any(g.token_ok for g in events if isinstance(g, Grading))


# -- forging or hiding evidence -----------------------------------------------------


def test_agent_cannot_find_the_event_log(kit, corpus_root, tmp_path):
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("forge-events"))
    assert "FOUND" not in out
    assert read_verified(tmp_path / "o" / "events.jsonl").intact


def test_planted_evidence_symlinks_are_never_written_through(kit, corpus_root, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("untouched")
    fin, _, tdir, _ = trial(kit, corpus_root, tmp_path / "o", attacker("symlink-evidence", str(victim)),
                            isolation={"backend": "none"})
    # The runner stopped writing; the agent's output is where its open file went (the moved dir).
    out = (tdir / "logs.moved" / "a1-build.stdout.raw").read_text()
    assert "WROTE symlink" in out  # not isolated: it could plant them...
    assert fin.outcome == "invalid" and "evidence directory" in fin.reason  # ...and was caught
    assert sorted(p.name for p in victim.iterdir()) == ["keep.txt"]
    assert (victim / "keep.txt").read_text() == "untouched"


def test_the_trial_directory_is_out_of_reach_inside_the_sandbox(kit, corpus_root, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    fin, _, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker("symlink-evidence", str(victim)))
    assert list(victim.iterdir()) == [] and fin.outcome == "target_failed"
    for name in ("changes.patch", "logs", "grading", "prompts", "agent-events", "verdicts"):
        assert not (tdir / name).is_symlink()
    assert (tdir / "logs" / "a1-build.stdout").is_file()


@pytest.mark.parametrize("mode", ["recreate-git", "replace-initial"])
def test_a_rewritten_git_cannot_hide_the_change(kit, corpus_root, tmp_path, mode):
    patch = str(corpus_root / "patches" / "mul.patch")
    fin, events, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker(mode, patch))
    assert "''" in out  # the agent's own git shows nothing
    assert "+def mul(a, b):" in (tdir / "changes.patch").read_text()
    assert fin.outcome == "accepted"  # the change is real, and it is what was graded


def test_a_solution_kept_outside_the_workspace_is_not_graded(kit, corpus_root, tmp_path):
    fin, _, tdir, _ = trial(kit, corpus_root, tmp_path / "o", attacker("outside-symlink"))
    patch = (tdir / "changes.patch").read_text()
    assert "new file mode 120000" in patch or "old mode 100644\nnew mode 120000" in patch
    assert fin.outcome == "target_failed"


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_workspace_git_config_never_runs_inside_the_runner(kit, corpus_root, tmp_path, backend):
    marker = tmp_path / "ran-agent-code"
    patch = str(corpus_root / "patches" / "mul.patch")
    fin, _, tdir, out = trial(kit, corpus_root, tmp_path / "o", attacker("git-config", str(marker), patch),
                              isolation={"backend": backend}, stages=["build", "qa"])
    assert "configured" in out
    assert not marker.exists(), "the runner ran a hook, filter or fsmonitor of the workspace"
    assert "+def mul(a, b):" in (tdir / "changes.patch").read_text()


# -- cross-trial contamination ------------------------------------------------------


def test_nothing_crosses_from_one_trial_to_the_next(kit, corpus_root, tmp_path):
    src = corpus_root / "repo"
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": attacker("contaminate", str(src))}],
                        repetitions=3)
    status = kit.git(src, "status", "--porcelain", "--ignored")
    refs = kit.git(src, "for-each-ref")
    res = run_trials(m, tmp_path / "o", progress=False)
    outs = "".join(p.read_text() for p in (tmp_path / "o" / "trials").glob("*/logs/*.stdout"))
    assert outs.count("WROTE") >= 3  # each trial could write its own HOME and /tmp...
    assert "SEEN" not in outs  # ...and none saw an earlier trial's
    assert "FOUND other trial" not in outs
    assert kit.git(src, "status", "--porcelain", "--ignored") == status
    assert kit.git(src, "for-each-ref") == refs
    assert res.outcomes == {"target_failed": 3}


def test_a_tampering_trial_is_invalid_and_leaves_the_others_untouched(kit, corpus_root, tmp_path):
    patch = str(corpus_root / "patches" / "mul.patch")
    variants = [{"id": "tamper", "agent": kit.agent("edit-inputs")},
                {"id": "honest", "agent": kit.agent("patch", patch)}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=2, isolation={"backend": "none"})
    res = run_trials(m, tmp_path / "o", progress=False)
    fins = {e.trial_id: e for e in read_events(res.events_path) if isinstance(e, TrialFinished)}
    assert {t: f.outcome for t, f in fins.items()} == {
        "mul__tamper__r1": "invalid", "mul__tamper__r2": "invalid",
        "mul__honest__r1": "accepted", "mul__honest__r2": "accepted"}
    assert "tamper" not in fins["mul__honest__r2"].reason
    again = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o"), "--resume", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["skipped"] == 4


# -- the runner's own secrets --------------------------------------------------------


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_the_runners_environment_is_not_readable(kit, corpus_root, tmp_path, backend):
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": attacker("env-secret", "RUNNER_ONLY_SECRET")}],
                        isolation={"backend": backend})
    res = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(tmp_path / "o"),
                          "--no-progress"], capture_output=True, text=True,
                         env={**os.environ, "RUNNER_ONLY_SECRET": "s3cr3t-value-of-the-runner"})
    assert res.returncode == 0, res.stderr
    out = "".join(p.read_text() for p in (tmp_path / "o" / "trials").glob("*/logs/*.stdout"))
    if backend == "bubblewrap":
        assert "FOUND" not in out, out
    else:  # documented: an unisolated agent can read its parent's /proc/<pid>/environ
        assert "FOUND RUNNER_ONLY_SECRET in /proc/" in out


# -- exhausting the runner ------------------------------------------------------------


def test_200_setsid_children_are_gone_when_the_trial_ends(kit, corpus_root, tmp_path):
    marker = f"sleeper-{tmp_path.name}-{secrets.token_hex(4)}"  # unique across concurrent test sessions
    fin, _, _, out = trial(kit, corpus_root, tmp_path / "o", attacker("sleepers", "200", marker))
    assert "started 200" in out
    assert kill_all_with(marker) == []


def test_a_1_gib_workspace_file_is_budget_exhausted_with_bounded_memory(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": attacker("big-file", str(2**30))}],
                        max_workspace_mb=64, timeout_seconds=60)
    out = tmp_path / "o"
    # Measured from a small parent: a child forked from this (large) test process would
    # count the test's own pages in its high-water mark before it execs.
    measure = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode;"
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)")
    proc = subprocess.run([PY, "-c", measure, PY, "-m", "trialhouse", "run", "--manifest", str(m),
                           "--output", str(out), "--no-progress"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    peak_kb = int(proc.stdout.split()[-1])
    (fin,) = [e for e in read_events(out / "events.jsonl") if isinstance(e, TrialFinished)]
    assert fin.outcome == "budget_exhausted" and "max_workspace_mb=64" in fin.reason
    assert peak_kb < 500 * 1024, f"peak RSS {peak_kb / 1024:.0f} MB"
    assert not (out / "trials" / fin.trial_id / "changes.patch").exists() or \
        (out / "trials" / fin.trial_id / "changes.patch").stat().st_size < 1024 * 1024


def test_a_large_changed_file_is_summarised_in_the_patch(kit, corpus_root, tmp_path):
    fin, _, tdir, _ = trial(kit, corpus_root, tmp_path / "o", attacker("big-file", str(20 * 2**20)))
    patch = (tdir / "changes.patch").read_text()
    assert "huge.bin: 20971520 bytes" in patch and len(patch) < 4096
    assert "summarises 1 large file" in fin.reason


# -- crash edges -------------------------------------------------------------------


def _wait_for(path: Path, predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and predicate(path.read_text(errors="replace")):
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting on {path}")


def test_a_directory_left_by_a_killed_setup_is_accepted_by_run_and_resume(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    for how in (["--resume"], []):
        out = tmp_path / f"o{len(how)}"
        (out / "inputs" / "graders").mkdir(parents=True)
        (out / ".trialhouse-setup").write_text("")
        (out / "inputs" / "graders" / "target_mul.py").write_text("half a cop")
        res = cli("run", "--manifest", str(m), "--output", str(out), "--no-progress", *how)
        assert res.returncode == 0, res.stderr
        report = json.loads((out / "report.json").read_text())
        assert report["trials_finished"] == 2 and report["status"] == "completed"


def test_resume_reports_a_corrupt_middle_line_and_carries_on(kit, corpus_root, tmp_path):
    variants = [{"id": "a", "agent": kit.agent("slow", "0.3")}, {"id": "b", "agent": kit.agent("noop")}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=2)
    out = tmp_path / "o"
    proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                             "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(out / "events.jsonl", lambda t: t.count('"trial_finished"') >= 2)
    proc.kill()
    proc.wait()
    lines = (out / "events.jsonl").read_bytes().split(b"\n")
    lines[3] = b'{"schema_version": 1, "event": "stage_finished", garbage'
    (out / "events.jsonl").write_bytes(b"\n".join(lines))
    res = cli("run", "--manifest", str(m), "--output", str(out), "--resume", "--no-progress")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    assert "events.jsonl:4: refused on resume" in res.stderr
    verified = read_verified(out / "events.jsonl")
    fins = Counter(e.trial_id for e in verified.events if isinstance(e, TrialFinished))
    assert sorted(fins) == sorted(f"mul__{v}__r{r}" for v in "ab" for r in (1, 2))


def _outcomes(path: Path) -> dict[str, str]:
    latest: dict[str, str] = {}
    for e in read_events(path):
        if isinstance(e, TrialFinished):
            latest[e.trial_id] = e.outcome
    return latest


def test_sigkill_at_20_seeded_points_then_resume_gives_the_uninterrupted_outcomes(kit, corpus_root, tmp_path):
    patch = str(corpus_root / "patches" / "mul.patch")
    variants = [{"id": "noop", "agent": kit.agent("slow", "0.1")},
                {"id": "fixer", "agent": kit.agent("patch", patch)},
                {"id": "liar", "agent": kit.agent("fake-verdict")}]
    m = kit.make_corpus(corpus_root, variants=variants, repetitions=3)
    clean = tmp_path / "clean"
    assert cli("run", "--manifest", str(m), "--output", str(clean), "--no-progress").returncode == 0
    expected = _outcomes(clean / "events.jsonl")
    total_lines = len((clean / "events.jsonl").read_bytes().splitlines())
    assert len(expected) == 9
    # Kill points are seeded positions in the event stream (a number of lines written
    # since this attempt started; 0 = during set-up, while the inputs are copied).
    rng = random.Random(20261201)
    out = tmp_path / "killed"
    kills, attempts = 0, 0
    while kills < 20 and attempts < 60:
        attempts += 1
        before = len((out / "events.jsonl").read_bytes().splitlines()) if (out / "events.jsonl").exists() else 0
        point = 0 if kills % 5 == 0 else rng.randint(1, max(2, (total_lines - before) // 2))
        args = ["--resume"] if out.exists() else []
        proc = subprocess.Popen([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out),
                                 "--no-progress", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        if point == 0:
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            while proc.poll() is None and time.monotonic() < deadline:
                lines = len((out / "events.jsonl").read_bytes().splitlines()) if (out / "events.jsonl").exists() else 0
                if lines - before >= point:
                    break
                time.sleep(0.005)
        if proc.poll() is None:
            proc.kill()
            kills += 1
        proc.wait()
        if (out / "report.json").exists() and json.loads((out / "report.json").read_text()).get("status") == "completed":
            break
    res = cli("run", "--manifest", str(m), "--output", str(out), "--no-progress",
              *(["--resume"] if out.exists() else []))
    assert res.returncode == 0, res.stderr
    assert kills >= 20, f"only {kills} kills landed in {attempts} attempts"
    verified = read_verified(out / "events.jsonl")
    assert all("not a valid event" in why for _n, why in verified.refused), verified.refused
    assert _outcomes(out / "events.jsonl") == expected
    report = json.loads((out / "report.json").read_text())
    assert report["trials_finished"] == 9 and report["status"] == "completed"
    assert {t["trial_id"]: t["outcome"] for t in report["trials"]} == expected
