"""End to end on the real example corpus: validate → controls → trials with built-in agents."""

from __future__ import annotations

import json

import pytest

from contract.trial_events import TrialFinished
from runner.controls import run_controls
from runner.eventlog import read_events
from runner.run import run_trials
from runner.validate import validate_manifest

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')


@pytest.fixture(scope="module")
def small_example(tmp_path_factory):
    from runner.example import write_example

    root = tmp_path_factory.mktemp("example corpus")
    manifest = write_example(root / "corpus")
    data = json.loads(manifest.read_text())
    data["cases"] = [c for c in data["cases"] if "thread" not in c["id"]][:2]
    data["variants"] = [v for v in data["variants"] if v["agent"]["kind"] in ("null", "reference")]
    data["repetitions"] = 1
    small = manifest.parent / "small.json"
    small.write_text(json.dumps(data))
    return small


def test_example_validates_controls_and_runs(small_example, tmp_path):
    report = validate_manifest(small_example)
    assert report.ok, report.problems
    ctl = run_controls(small_example, tmp_path / "ctl", jobs=2, repeats=1, progress=False)
    assert ctl.ok, ctl.cases
    res = run_trials(small_example, tmp_path / "run", jobs=2, progress=False)
    events = read_events(res.events_path)
    fins = [e for e in events if isinstance(e, TrialFinished)]
    assert len(fins) == 2 * 2
    by_variant = {(f.variant, f.outcome) for f in fins}
    assert by_variant == {("reference", "accepted"), ("null", "target_failed")}, [f.reason for f in fins]
    data = json.loads(res.report_path.read_text())
    comp = data["comparison"]["candidates"][0]
    assert comp["variant"] == "reference" and comp["candidate_only"] + comp["holdout"]["candidate_only"] == 2
