"""Trials end to end with real git repos, real subprocess agents and real graders."""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections import Counter
from pathlib import Path

import pytest

from contract.run_events import RunFinished, RunStarted
from contract.stage_events import StageFinished, StageStarted
from contract.trial_events import (
    AttemptFinished,
    Budget,
    Checkpoint,
    Grading,
    IntegrityCheck,
    PrepareFinished,
    TrialFinished,
    TrialSkipped,
    TrialStarted,
)
from runner.eventlog import read_events
from runner.ids import trial_order
from runner.run import run_trials
from tests.runner.attack_support import alive_with

PY = sys.executable


def run(manifest: Path, out: Path, **kw):
    res = run_trials(manifest, out, progress=False, **kw)
    return res, read_events(res.events_path), json.loads(res.report_path.read_text())


def finished(events) -> dict[str, TrialFinished]:
    return {e.trial_id: e for e in events if isinstance(e, TrialFinished)}


def one(kit, root, out, mode_agent, **overrides):
    m = kit.make_corpus(root, variants=[{"id": "v", "agent": mode_agent}], **overrides)
    res, events, report = run(m, out)
    (fin,) = finished(events).values()
    return fin, events, report


def test_null_and_fixer_two_reps(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, repetitions=2)
    src_head = kit.git(corpus_root / "repo", "rev-parse", "HEAD")
    src_status = kit.git(corpus_root / "repo", "status", "--porcelain")
    res, events, report = run(m, tmp_path / "out")
    fins = finished(events)
    assert {t: f.outcome for t, f in fins.items()} == {
        "mul__noop__r1": "target_failed", "mul__fixer__r1": "accepted",
        "mul__noop__r2": "target_failed", "mul__fixer__r2": "accepted"}
    # Variant order alternates between repetitions.
    started = [e.trial_id for e in events if isinstance(e, TrialStarted)]
    assert started == ["mul__noop__r1", "mul__fixer__r1", "mul__fixer__r2", "mul__noop__r2"]
    # seq strictly increasing; run header first, run_finished last.
    assert [e.seq for e in events] == list(range(len(events)))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    head = events[0]
    assert head.initial_tree and head.git_version and set(head.input_hashes) == {
        "patches/mul.patch", "graders/target_mul.py", "graders/regress_add.py"}
    # Baseline comes from the negative control and sits next to every final grading.
    gradings = [e for e in events if isinstance(e, Grading) and e.trial_id == "mul__fixer__r1"]
    assert {(g.criterion_id, g.verdict, g.baseline) for g in gradings} == {
        ("mul_works", "passed", "failed"), ("add_works", "passed", "passed")}
    # Checkpoints are the runner's own commits, recorded with their trees; each one's diff
    # is kept as a patch. What stays of the workspace is its files: not the agent's .git,
    # nor the runner's private git dir (compressed content no redaction can see).
    ws = res.run_dir / "trials" / "mul__fixer__r1" / "workspace"
    (cp,) = [e for e in events if isinstance(e, Checkpoint) and e.trial_id == "mul__fixer__r1"]
    assert cp.tree == fins["mul__fixer__r1"].final_tree and cp.files_changed == 1
    checkpoint_patch = res.run_dir / "trials" / "mul__fixer__r1" / "checkpoints" / "a1-build.patch"
    assert "+def mul(a, b):" in checkpoint_patch.read_text()
    assert "def mul" in (ws / "calc.py").read_text() and not (ws / ".git").exists()
    assert not (res.run_dir / "trials" / "mul__fixer__r1" / ".runner").exists()
    patch = (res.run_dir / "trials" / "mul__fixer__r1" / "changes.patch").read_text()
    assert "+def mul(a, b):" in patch
    assert (res.run_dir / "trials" / "mul__noop__r1" / "changes.patch").read_text() == ""
    assert kit.git(corpus_root / "repo", "rev-parse", "HEAD") == src_head
    assert kit.git(corpus_root / "repo", "status", "--porcelain") == src_status
    # report.json
    assert report["outcomes"]["accepted"] == 2 and report["trials_finished"] == 4
    assert [t["trial_id"] for t in report["trials"]] == started
    t0 = report["trials"][1]
    assert t0["attempts"][0]["stages"][0]["stage"] == "build" and t0["usage"]["cost_usd"] is None
    comp = report["comparison"]
    assert comp["baseline"] == "noop"
    assert comp["candidates"][0] | {"holdout": None} == {
        "variant": "fixer", "pairs": 2, "candidate_only": 2, "baseline_only": 0, "both": 0,
        "neither": 0, "infra_excluded": 0, "holdout": None}
    line = fins["mul__fixer__r1"].line
    assert line.startswith("task=mul variant=fixer rep=1 outcome=accepted target=pass regression=pass")
    assert "cost_usd=unknown" in line


def test_trial_order_alternates(kit, corpus_root):
    from runner.manifest import Manifest

    m = Manifest.model_validate(json.loads(kit.make_corpus(corpus_root, repetitions=3).read_text()))
    order = [(c.id, v.id, r) for c, v, r in trial_order(m)]
    assert order == [("mul", "noop", 1), ("mul", "fixer", 1), ("mul", "fixer", 2),
                     ("mul", "noop", 2), ("mul", "noop", 3), ("mul", "fixer", 3)]


def test_agent_exits_nonzero(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("exit3"))
    assert fin.outcome == "target_failed"
    (st,) = [e for e in events if isinstance(e, StageFinished)]
    assert st.exit_code == 3
    assert "boom" in (tmp_path / "o" / "trials" / fin.trial_id / st.stderr_path).read_text()


def test_agent_hangs_past_budget(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("hang"), timeout_seconds=1.5)
    assert fin.outcome == "budget_exhausted"
    assert any(isinstance(e, Budget) and e.type == "time" for e in events)
    assert fin.duration_s < 30


def test_a_budget_spent_before_the_agent_starts_is_still_recorded(kit, corpus_root, tmp_path):
    # 1 ms is gone during setup, so the clock runs out before the first stage (the path a
    # loaded machine takes with a short budget): the Budget event must be there too.
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("hang"), timeout_seconds=0.001)
    assert fin.outcome == "budget_exhausted"
    (budget,) = [e for e in events if isinstance(e, Budget)]
    assert budget.type == "time" and budget.status == "exceeded" and budget.used >= budget.limit


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_forked_children_are_killed(kit, corpus_root, tmp_path, backend):
    marker = f"fork-marker-{backend}-{tmp_path.name}-{secrets.token_hex(4)}"  # unique across concurrent sessions
    fin, _, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("fork", marker),
                    isolation={"backend": backend})
    survivors = alive_with(marker)
    for pid in survivors:
        os.kill(pid, 9)
    if backend == "bubblewrap":
        assert survivors == [], "a setsid child outlived its sandbox"
    else:  # documented: without isolation a new session escapes the group kill
        assert survivors, "the none backend is expected to let a setsid child escape"
    assert fin.outcome == "target_failed"


def test_huge_output_is_bounded(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("huge"))
    (st,) = [e for e in events if isinstance(e, StageFinished)]
    size = (tmp_path / "o" / "trials" / fin.trial_id / st.stdout_path).stat().st_size
    assert st.stdout_truncated and size <= 1024 * 1024


def test_agent_deleting_its_workspace_is_graded_on_what_is_left(kit, corpus_root, tmp_path):
    # Inside the sandbox the workspace is a mount point: the files go, the directory stays.
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("rmws"))
    assert fin.outcome == "target_failed"
    patch = (tmp_path / "o" / "trials" / fin.trial_id / "changes.patch").read_text()
    assert "deleted file mode" in patch and "calc.py" in patch


def test_agent_deleting_its_workspace_without_isolation_is_invalid(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("rmws"),
                         isolation={"backend": "none"})
    assert fin.outcome == "invalid" and "workspace" in fin.reason
    assert not any(isinstance(e, Grading) for e in events)


def test_agent_cannot_reach_the_grader_snapshot(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("edit-inputs"))
    assert fin.outcome == "target_failed"
    assert all(e.ok for e in events if isinstance(e, IntegrityCheck))
    graders = tmp_path / "o" / "inputs" / "graders"
    assert "sys.exit(0)\n" != (graders / "target_mul.py").read_text()


def test_editing_the_snapshot_without_isolation_is_invalid_and_repaired(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("edit-inputs"),
                         isolation={"backend": "none"})
    assert fin.outcome == "invalid"
    check = [e for e in events if isinstance(e, IntegrityCheck)][0]
    assert not check.ok and "inputs/graders/target_mul.py: changed" in check.mismatches
    # The run's copy is put back, so no later trial is graded by (or blamed for) it.
    text = (tmp_path / "o" / "inputs" / "graders" / "target_mul.py").read_text()
    assert "import calc" in text


def test_fake_passed_verdict_is_not_a_grade(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("fake-verdict"))
    (st,) = [e for e in events if isinstance(e, StageFinished)]
    assert st.verdict_status == "passed" and st.verdict_findings == ["all good, trust me"]
    assert fin.outcome == "target_failed"


def test_agent_that_cannot_start(kit, corpus_root, tmp_path):
    # It exists (validate resolves it) but is not executable: only starting it can tell.
    program = tmp_path / "no exec agent"
    program.write_text("#!/bin/sh\necho never\n")
    bad = {"kind": "command", "argv": [str(program)]}
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", bad)
    assert fin.outcome == "infra_error" and "could not start" in fin.reason


@pytest.mark.parametrize("behaviour, why", [
    ("sys.exit(2)", "exit 2"),
    ("os.kill(os.getpid(), signal.SIGSEGV)", "crash"),
    ("time.sleep(60)", "hang"),
])
def test_inconclusive_grader_is_infra_error(kit, corpus_root, tmp_path, behaviour, why):
    # The grader misbehaves only on the state the agent leaves (a file named boom), so the
    # controls pass and the case is scored; on that state it is inconclusive.
    agent = {"kind": "command", "argv": [PY, "-c", "open('boom', 'w').write('x')"]}
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": agent}])
    data = json.loads(m.read_text())
    code = ("import os, signal, sys, time\n"
            "if not os.path.exists(os.path.join(os.environ['TRIALHOUSE_WORKSPACE'], 'boom')):\n"
            "    sys.exit(0)\n" + behaviour + "\n")
    data["cases"][0]["criteria"].append({"id": "flaky", "layer": "repository", "command": [PY, "-c", code],
                                         "timeout_seconds": 1})
    m.write_text(json.dumps(data))
    _, events, _ = run(m, tmp_path / "o")
    (fin,) = finished(events).values()
    assert fin.outcome == "infra_error", why
    g = [e for e in events if isinstance(e, Grading) and e.criterion_id == "flaky"][0]
    assert g.verdict == "inconclusive"


def test_a_prepare_command_that_always_fails_leaves_the_case_unscored(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": kit.agent("noop")}],
                        prepare_commands=[[PY, "-c", "import sys; sys.exit(4)"]])
    res, events, report = run(m, tmp_path / "o")
    assert finished(events) == {} and res.unscored == {"mul": res.unscored["mul"]}
    assert "prepare command" in res.unscored["mul"] and "exit 4" in res.unscored["mul"]
    (skip,) = [e for e in events if isinstance(e, TrialSkipped)]
    assert skip.trial_id == "mul__v__r1" and "not scored" in skip.reason
    assert not any(isinstance(e, StageStarted) for e in events)


def test_prepare_command_fails_in_a_trial(kit, corpus_root, tmp_path):
    # Passes for both controls, fails in the trial: infrastructure, not the agent.
    count = tmp_path / "prepare-count"
    code = ("import pathlib, sys; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0;"
            " p.write_text(str(n + 1)); sys.exit(4 if n >= 2 else 0)")
    fin, events, _ = one(kit, corpus_root, tmp_path / "o", kit.agent("noop"),
                         prepare_commands=[[PY, "-c", code, str(count)]], isolation={"backend": "none"})
    assert fin.outcome == "infra_error" and "prepare" in fin.reason
    assert [e.exit_code for e in events if isinstance(e, PrepareFinished)] == [4]
    assert not any(isinstance(e, StageStarted) for e in events)


def test_cost_budget_and_unknown_cost(kit, corpus_root, tmp_path):
    fin, events, _ = one(kit, corpus_root, tmp_path / "a", kit.agent("usage", "2.5"), max_cost_usd=1.0)
    assert fin.outcome == "budget_exhausted" and fin.cost_budget_status == "exceeded"
    assert fin.usage.cost_usd == 2.5 and fin.usage.input_tokens == 1000
    assert "cost_usd=2.50" in fin.line
    fin, events, _ = one(kit, tmp_path / "b", tmp_path / "b-out", kit.agent("noop"), max_cost_usd=1.0)
    assert fin.cost_budget_status == "unknown" and fin.usage.cost_usd is None
    assert any(isinstance(e, Budget) and e.status == "unknown" for e in events)


def test_retry_gets_findings_and_keeps_work(kit, corpus_root, tmp_path):
    patch = str(corpus_root / "patches" / "mul.patch")
    fin, events, report = one(kit, corpus_root, tmp_path / "o", kit.agent("fix-on-retry", patch),
                              max_attempts=2, stages=["build", "qa", "review"])
    assert fin.outcome == "accepted" and fin.attempts == 2
    att = [e for e in events if isinstance(e, AttemptFinished)]
    assert [a.outcome for a in att] == ["target_failed", "accepted"]
    prompt2 = (tmp_path / "o" / "trials" / fin.trial_id / "prompts" / "a2-build.md").read_text()
    assert "mul is missing" in prompt2 and "calc.mul multiplies" in prompt2
    assert "sys.exit" not in prompt2  # grader code is never revealed
    cps = [e for e in events if isinstance(e, Checkpoint)]
    assert [(c.attempt, c.stage) for c in cps] == [(1, "build"), (1, "qa"), (2, "build"), (2, "qa")]
    assert cps[2].files_changed == 1
    finals = [e for e in events if isinstance(e, Grading)]
    assert [g.final for g in finals] == [False, False, True, True]
    assert [a["outcome"] for a in report["trials"][0]["attempts"]] == ["target_failed", "accepted"]


def test_secrets_redacted_and_env_allow_listed(kit, corpus_root, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TOKEN", "tok-1234567890-secret")
    monkeypatch.setenv("HOME_SECRET", "nope")
    fin, events, _ = one(kit, corpus_root, tmp_path / "o",
                         kit.agent("secret", pass_env=["FAKE_TOKEN"], secret_env=["FAKE_TOKEN"]))
    (st,) = [e for e in events if isinstance(e, StageFinished)]
    out = (tmp_path / "o" / "trials" / fin.trial_id / st.stdout_path).read_text()
    assert "tok-1234567890-secret" not in out and "[REDACTED]" in out
    assert "HOME_SECRET: False" in out and st.redactions >= 1


def test_pre_existing_failure_is_not_a_regression(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": kit.agent("patch", str(corpus_root / "patches" / "mul.patch"))}])
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"].append({"id": "lint", "layer": "repository",
                                         "command": [PY, "-c", "import sys; sys.exit(1)"]})
    m.write_text(json.dumps(data))
    # A criterion failing before and after the reference patch is pre-existing: the case
    # is scored, and its trial ignores the old failure (tests/runner/test_pre_existing.py).
    res, events, _ = run(m, tmp_path / "o")
    (fin,) = finished(events).values()
    assert res.unscored == {}
    assert fin.outcome == "accepted" and "pre-existing" in fin.reason and fin.scored is True


def test_regression_outcome(kit, corpus_root, tmp_path):
    # An agent that implements mul but breaks add.
    bad = corpus_root / "bad.patch"
    m = kit.make_corpus(corpus_root)
    ref = (corpus_root / "patches" / "mul.patch").read_text()
    bad.write_text(ref.replace(" def add(a, b):\n     return a + b\n", "-def add(a, b):\n-    return a + b\n+def add(a, b):\n+    return a - b\n"))
    data = json.loads(m.read_text())
    data["variants"] = [{"id": "v", "agent": kit.agent("patch", str(bad))}]
    m.write_text(json.dumps(data))
    _, events, _ = run(m, tmp_path / "o")
    (fin,) = finished(events).values()
    assert fin.outcome == "regression", fin.reason
    assert fin.layers == {"target": "pass", "regression": "fail", "repository": "none"}


def test_parallel_jobs_keep_one_writer(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, repetitions=3)
    res, events, report = run(m, tmp_path / "o", jobs=4)
    assert [e.seq for e in events] == list(range(len(events)))
    assert len(finished(events)) == 6 and res.outcomes == {"accepted": 3, "target_failed": 3}
    # Each trial's events are complete and its own.
    per = Counter(e.trial_id for e in events if isinstance(e, TrialStarted))
    assert set(per.values()) == {1}
