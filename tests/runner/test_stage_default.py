"""The stages a manifest runs when it names none (docs/runner.md, "Stages"): a `command`
agent runs once an attempt (build), an agent CLI gets the build → qa → review pipeline.
Before, every manifest without `stages` ran a `command` agent three times an attempt."""

from __future__ import annotations

import json
from pathlib import Path

from contract.run_events import RunStarted
from contract.stage_events import StageStarted
from runner.eventlog import read_events
from runner.manifest import Manifest
from runner.run import run_trials


def test_a_command_agent_runs_once_an_attempt_when_no_stages_are_named(corpus_root: Path, kit) -> None:
    manifest = kit.make_corpus(corpus_root)
    doc = json.loads(manifest.read_text())
    del doc["stages"]
    manifest.write_text(json.dumps(doc))
    res = run_trials(manifest, corpus_root / "run", progress=False)
    events = read_events(res.events_path)
    (started,) = [e for e in events if isinstance(e, RunStarted)]
    assert started.stages == ["build"]
    stages = [(e.trial_id, e.stage) for e in events if isinstance(e, StageStarted)]
    assert sorted(stages) == sorted((t, "build") for t in {t for t, _ in stages}) and len(stages) == 2


def test_an_agent_cli_keeps_the_pipeline_and_named_stages_are_kept(corpus_root: Path, kit) -> None:
    doc = json.loads(kit.make_corpus(corpus_root).read_text())
    del doc["stages"]
    assert Manifest.model_validate(doc).stages == ["build"]
    harness = {"id": "claude", "model": "claude-sonnet-4-5", "agent": {"kind": "claude-code"}}
    assert Manifest.model_validate({**doc, "variants": [*doc["variants"], harness]}).stages == [
        "build", "qa", "review"]
    assert Manifest.model_validate({**doc, "stages": ["build", "review"]}).stages == ["build", "review"]
