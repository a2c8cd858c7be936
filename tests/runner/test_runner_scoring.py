"""Honest scoring in the runner: controls gate scoring, fingerprints, secrets out of records."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract.run_events import CaseValidated, ControlResult, RunFinished
from contract.trial_events import TrialFinished, TrialSkipped
from runner.controls import run_controls
from runner.errors import RunnerError
from runner.eventlog import read_events
from runner.run import run_trials

PY = sys.executable
ATTACKER = str(Path(__file__).parent / "agents" / "attacker.py")


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})})


def edit(manifest: Path, fn) -> Path:
    data = json.loads(manifest.read_text())
    fn(data)
    manifest.write_text(json.dumps(data))
    return manifest


def test_a_case_whose_target_already_passes_is_never_scored(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root, variants=[{"id": "null", "agent": {"kind": "null"}}])
    edit(m, lambda d: d["cases"][0]["criteria"][0].update(
        command=[PY, "{inputs}/graders/regress_add.py"]))  # "target" that passes at the initial commit
    res = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o"), "--no-progress")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "not scored: 1 case(s)" in res.stderr and "mul_works (target) passed, expected failed" in res.stderr
    events = read_events(tmp_path / "o" / "events.jsonl")
    assert not any(isinstance(e, TrialFinished) for e in events)
    (skip,) = [e for e in events if isinstance(e, TrialSkipped)]
    assert skip.variant == "null" and "expected failed" in skip.reason
    fin = [e for e in events if isinstance(e, RunFinished)][-1]
    assert fin.unscored_cases == ["mul"] and fin.trials_skipped == 1
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["outcomes"]["accepted"] == 0


def test_a_flaky_criterion_leaves_its_case_unscored_with_the_evidence(kit, corpus_root, tmp_path):
    counter = tmp_path / "flips"
    flip = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0;"
            " p.write_text(str(n + 1)); sys.exit(n % 2)")
    m = kit.make_corpus(corpus_root, control_repeats=5, isolation={"backend": "none"})
    edit(m, lambda d: d["cases"][0]["criteria"].append(
        {"id": "flips", "layer": "regression", "command": [PY, "-c", flip, str(counter)]}))
    res = run_trials(m, tmp_path / "o", progress=False)
    assert "flips is flaky" in res.unscored["mul"] and res.trials_skipped == 2
    events = read_events(res.events_path)
    flips = [e for e in events if isinstance(e, ControlResult) and e.criterion_id == "flips"]
    assert len(flips) == 10 and {e.verdict for e in flips} == {"passed", "failed"}
    assert all((tmp_path / "o" / "controls" / "mul" / f"{c}-logs" / f"flips.{r}.out").exists()
               for c in ("negative", "positive") for r in range(1, 6))


def test_a_criterion_marked_fixed_that_still_disagrees_is_named(kit, corpus_root, tmp_path):
    counter = tmp_path / "flips"
    flip = ("import sys, pathlib; p = pathlib.Path(sys.argv[1]); n = int(p.read_text()) if p.exists() else 0;"
            " p.write_text(str(n + 1)); sys.exit(n % 2)")
    m = kit.make_corpus(corpus_root, control_repeats=3, isolation={"backend": "none"})
    edit(m, lambda d: d["cases"][0]["criteria"].append(
        {"id": "flips", "layer": "regression", "command": [PY, "-c", flip, str(counter)],
         "flaky_fixed": "2026-12-01: seeded the clock"}))
    res = run_trials(m, tmp_path / "o", progress=False)
    assert "marked fixed in the manifest (2026-12-01: seeded the clock) but disagreed" in res.unscored["mul"]


def test_five_repeats_catch_a_coin_flip_criterion_with_probability_over_0_99():
    # Every sequence of 5 negative-control and 5 positive-control verdicts of a fair coin:
    # it goes unnoticed only when each control is constant (4 of the 1024 sequences).
    missed = sum(1 for flips in itertools.product((0, 1), repeat=10)
                 if len(set(flips[:5])) == 1 and len(set(flips[5:])) == 1)
    assert missed == 4 and 1 - missed / 2**10 >= 0.99
    # A criterion flaky on only one of the two states needs 8 repeats for the same bound.
    assert 1 - 2 * 0.5**5 < 0.99 <= 1 - 2 * 0.5**8


def test_controls_from_a_validation_only_run_are_reused(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    ctl = run_controls(m, tmp_path / "ctl", repeats=2, progress=False)
    assert ctl.ok
    res = run_trials(m, tmp_path / "o", progress=False, controls_dir=tmp_path / "ctl")
    events = read_events(res.events_path)
    assert not any(isinstance(e, ControlResult) for e in events)  # nothing re-run
    validated = [e for e in events if isinstance(e, CaseValidated)]
    assert [(v.case_id, v.from_run, v.repeats) for v in validated] == [("mul", ctl.run_id, 2)]
    assert events[0].controls_from == ctl.run_id
    assert res.outcomes == {"target_failed": 1, "accepted": 1}


def test_controls_of_another_manifest_or_changed_inputs_are_refused(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    run_controls(m, tmp_path / "ctl", repeats=1, progress=False)
    grader = corpus_root / "graders" / "target_mul.py"
    grader.write_text(grader.read_text().replace("== 6", "!= 7"))  # a loosened grader
    res = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o"), "--controls", str(tmp_path / "ctl"))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "graders/target_mul.py: sha256 differs" in res.stderr and "re-run the controls" in res.stderr
    edit(m, lambda d: d.update(repetitions=2))
    res = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o2"), "--controls", str(tmp_path / "ctl"))
    assert res.returncode == 2 and "its controls were run for a manifest with sha256" in res.stderr
    res = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o3"), "--controls", str(tmp_path / "nope"))
    assert res.returncode == 2 and "no events.jsonl" in res.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()


def test_a_loosened_grader_is_a_new_evaluator_fingerprint(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    first = read_events(run_trials(m, tmp_path / "a", progress=False).events_path)
    again = read_events(run_trials(m, tmp_path / "b", progress=False).events_path)
    grader = corpus_root / "graders" / "target_mul.py"
    grader.write_text(grader.read_text().replace("calc.mul(2, 3) == 6", "calc.mul(2, 3) in (5, 6)"))
    loose = read_events(run_trials(m, tmp_path / "c", progress=False).events_path)

    def prints(events):
        return {e.trial_id: e.case_fingerprint for e in events if isinstance(e, TrialFinished)}

    assert prints(first) == prints(again)
    assert set(prints(first).values()).isdisjoint(prints(loose).values())
    assert first[0].cases[0].fingerprint == next(iter(prints(first).values()))
    assert first[0].manifest_sha256 == loose[0].manifest_sha256  # the manifest itself did not change


def test_severity_is_declared_or_defaulted_and_recorded(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    edit(m, lambda d: d["cases"][0]["criteria"][1].update(severity="blocker"))
    events = read_events(run_trials(m, tmp_path / "o", progress=False).events_path)
    crit = {c.criterion_id: c.severity for c in events[0].cases[0].criteria}
    assert crit == {"mul_works": "major", "add_works": "blocker"}


def planted() -> list[str]:
    """The credential values the attacker plants (its own definition, imported)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("attacker", ATTACKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [v.split(" = ")[-1].split("=")[-1] for v in module.PLANTED.values()]


def test_planted_secrets_appear_nowhere_in_the_run_directory(kit, corpus_root, tmp_path):
    env = {"QA_API_KEY": "qa-key-" + "5b7e9d1f3a2c4e6f8091", "QA_SECRET": "qa-secret-" + "77aa99cc11ee33"}
    agent = {"kind": "command", "argv": [PY, ATTACKER, "leak"], "pass_env": ["QA_API_KEY"],
             "secret_env": ["QA_SECRET"]}
    m = kit.make_corpus(corpus_root, variants=[{"id": "leaker", "agent": agent}], max_attempts=2,
                        stages=["build", "qa", "review"])
    res = cli("run", "--manifest", str(m), "--output", str(tmp_path / "o"), "--no-progress", env=env)
    assert res.returncode == 0, res.stderr
    secrets = [*env.values(), *planted()]
    leaks = []
    for path in (tmp_path / "o").rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            leaks += [(str(path.relative_to(tmp_path / "o")), s[:12]) for s in secrets if s.encode() in data]
    assert leaks == []
    events = read_events(tmp_path / "o" / "events.jsonl")
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.redactions > 0 and fin.attempts == 2
    assert fin.secrets_leaked >= 2 * 3 * 2  # both env values, every stage, stdout and stderr
    prompt2 = (tmp_path / "o" / "trials" / fin.trial_id / "prompts" / "a2-build.md").read_text()
    assert "leaked [REDACTED]" in prompt2  # the findings fed back, redacted


def test_controls_dir_that_is_a_scored_run_is_refused(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    run_trials(m, tmp_path / "scored", progress=False)
    with pytest.raises(RunnerError, match="not a validation-only run"):
        run_trials(m, tmp_path / "o", progress=False, controls_dir=tmp_path / "scored")
