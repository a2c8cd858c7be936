"""Hidden pools and their seeded rotation (runner/rotation.py; docs/runner.md, "Visible and hidden
checks"): the subset is reproducible from its seed, recorded in the run header, graded by the
controls and the trials, and part of the evaluator fingerprint."""

from __future__ import annotations

import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

from contract.run_events import CaseValidated, ControlResult, RunStarted
from contract.trial_events import Grading, TrialFinished
from runner.controls import run_controls
from runner.eventlog import read_events
from runner.manifest import Manifest, Rotation
from runner.rotation import choose, rotate, rotation_key
from runner.run import run_trials

POOL = ["p-zero", "p-one", "p-two", "p-three", "p-four"]


def _by_hand(pool: list[str], pick: int, key: str, case: str) -> list[str]:
    """The documented draw, computed here on its own: rank by sha256, keep the lowest."""
    ranked = sorted(pool, key=lambda c: hashlib.sha256(f"{key}/{case}/{c}".encode()).hexdigest())
    return [c for c in pool if c in ranked[:pick]]


def test_the_draw_is_reproducible_from_its_key_and_another_seed_draws_another_subset():
    assert choose(POOL, 2, "7", "mul") == choose(POOL, 2, "7", "mul") == _by_hand(POOL, 2, "7", "mul")
    subsets = {tuple(choose(POOL, 2, str(seed), "mul")) for seed in range(30)}
    assert len(subsets) >= 6  # C(5, 2) = 10 possible subsets; 30 seeds reach most of them
    assert choose(POOL, 2, "1", "mul") != choose(POOL, 2, "2", "mul")
    assert choose(POOL, 5, "1", "mul") == POOL  # in pool order


def test_the_key_joins_the_seed_and_the_period():
    when = datetime(2026, 2, 11, 23, 30, tzinfo=UTC)
    keys = {p: rotation_key(Rotation(seed=7, period=p), "20260211T233000Z-abc123", when)
            for p in ("none", "run", "day", "week", "month")}
    assert keys == {"none": "7", "run": "7/20260211T233000Z-abc123", "day": "7/2026-02-11",
                    "week": "7/2026-W07", "month": "7/2026-02"}


POOL_GRADER = """import os, sys
sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
import calc
ok = hasattr(calc, "mul") or "{layer}" == "regression"
sys.exit(0 if ok else 1)
"""


def _pooled_corpus(kit, root: Path, seed: int, period: str = "none", **overrides) -> Path:
    m = kit.make_corpus(root, **overrides)
    doc = json.loads(m.read_text())
    for name in POOL:
        (root / "graders" / f"{name}.py").write_text(POOL_GRADER.format(layer="target"))
    doc["cases"][0]["hidden_pool"] = {"pick": 2, "criteria": [
        {"id": name, "description": f"hidden check {name}", "command": [sys.executable, f"{{inputs}}/graders/{name}.py"]}
        for name in POOL]}
    doc["rotation"] = {"seed": seed, "period": period}
    m.write_text(json.dumps(doc, indent=2))
    return m


def _controls(m: Path, out: Path, seed: int) -> tuple[RunStarted, list]:
    doc = json.loads(m.read_text())
    doc["rotation"]["seed"] = seed
    m.write_text(json.dumps(doc, indent=2))
    res = run_controls(m, out, progress=False, repeats=1)
    events = read_events(res.events_path)
    return next(e for e in events if isinstance(e, RunStarted)), events


def test_a_run_records_its_draw_grades_it_and_fingerprints_it(kit, corpus_root, tmp_path):
    m = _pooled_corpus(kit, corpus_root, 1)
    runs = {name: _controls(m, tmp_path / f"out-{name}", seed) for name, seed in (("a", 1), ("b", 1), ("c", 2))}
    head, events = runs["a"]
    rot = head.rotation
    assert rot is not None and (rot.seed, rot.period, rot.key) == (1, "none", "1")
    assert rot.pools == {"mul": POOL} and rot.chosen == {"mul": _by_hand(POOL, 2, "1", "mul")}
    criteria = {c.criterion_id: c.pooled for c in head.cases[0].criteria}
    assert criteria == {"mul_works": False, "add_works": False, **dict.fromkeys(rot.chosen["mul"], True)}
    # the controls grade the drawn criteria, and only them
    graded = {e.criterion_id for e in events if isinstance(e, ControlResult)}
    assert graded == {"mul_works", "add_works", *rot.chosen["mul"]}
    (validated,) = [e for e in events if isinstance(e, CaseValidated)]
    assert validated.ok and set(validated.baseline) == graded
    # same seed, same draw, same task version; another seed, another draw, another version
    same, other = runs["b"][0], runs["c"][0]
    assert same.rotation is not None and other.rotation is not None
    assert same.rotation.chosen == rot.chosen and same.cases[0].fingerprint == head.cases[0].fingerprint
    assert other.rotation.chosen != rot.chosen  # seeds 1 and 2 draw different pairs (checked above)
    assert other.cases[0].fingerprint != head.cases[0].fingerprint


def test_a_resumed_run_draws_with_its_recorded_key_not_todays(kit, corpus_root, tmp_path):
    m = _pooled_corpus(kit, corpus_root, 3, period="day")
    manifest = Manifest.model_validate(json.loads(m.read_text()))
    first, info = rotate(manifest, "r1", [], now=datetime(2026, 1, 5, tzinfo=UTC))
    assert info is not None and info.key == "3/2026-01-05"
    head = RunStarted(run_id="r1", seq=0, ts="2026-01-05T00:00:00Z", manifest_id="tiny", manifest_path="m", manifest_sha256="s",
                      engine_version="e", os="o", python="p", git_version="g", repository="r",
                      initial_commit="c", initial_tree="t", repetitions=1, max_attempts=1, timeout_seconds=1,
                      rotation=info)
    again, info2 = rotate(manifest, "r1", [head], now=datetime(2026, 3, 9, tzinfo=UTC))
    assert info2 == info and again == first
    # the rotated manifest is a manifest (a remote worker validates it again)
    assert Manifest.model_validate(first.model_dump(mode="json", exclude_unset=True)) == first


def test_pooled_criteria_grade_trials_and_resume_keeps_the_draw(kit, corpus_root, tmp_path):
    m = _pooled_corpus(kit, corpus_root, 5, period="run")
    out = tmp_path / "out"
    res = run_trials(m, out, progress=False)
    first = read_events(res.events_path)
    head = next(e for e in first if isinstance(e, RunStarted))
    assert head.rotation is not None and head.rotation.key == f"5/{res.run_id}"
    drawn = head.rotation.chosen["mul"]
    fixer = [e for e in first if isinstance(e, Grading) and "fixer" in (e.trial_id or "")]
    assert {e.criterion_id: e.verdict for e in fixer} == {"mul_works": "passed", "add_works": "passed",
                                                         **dict.fromkeys(drawn, "passed")}
    assert {e.variant: e.outcome for e in first if isinstance(e, TrialFinished)} == {
        "noop": "target_failed", "fixer": "accepted"}
    run_trials(m, out, progress=False, resume=True)
    starts = [e for e in read_events(res.events_path) if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].resumed and starts[1].rotation == head.rotation


def test_controls_of_another_draw_are_not_reused(kit, corpus_root, tmp_path, monkeypatch):
    import runner.rotation

    m = _pooled_corpus(kit, corpus_root, 5, period="run")  # every run draws anew
    keys = iter(["5/first", "5/second"])  # two runs' keys, fixed: their draws differ
    assert choose(POOL, 2, "5/first", "mul") != choose(POOL, 2, "5/second", "mul")
    monkeypatch.setattr(runner.rotation, "rotation_key", lambda *_args: next(keys))
    ctl = run_controls(m, tmp_path / "ctl-run", progress=False, repeats=1)
    res = run_trials(m, tmp_path / "out-run", progress=False, controls_dir=tmp_path / "ctl-run")
    (validated,) = [e for e in read_events(res.events_path) if isinstance(e, CaseValidated)]
    assert validated.from_run is None and validated.ok  # run again, for this run's draw
    monkeypatch.undo()
    doc = json.loads(m.read_text())
    doc["rotation"]["period"] = "none"
    m.write_text(json.dumps(doc, indent=2))
    ctl = run_controls(m, tmp_path / "ctl-none", progress=False, repeats=1)
    res = run_trials(m, tmp_path / "out-none", progress=False, controls_dir=tmp_path / "ctl-none")
    (validated,) = [e for e in read_events(res.events_path) if isinstance(e, CaseValidated)]
    assert validated.from_run == ctl.run_id  # the same draw: reused
