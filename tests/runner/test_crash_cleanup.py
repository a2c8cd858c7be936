"""Cleanup and redaction on every path (issue 29 item 3, docs/security.md "Evidence").

An agent writes a ``pass_env`` secret into its workspace, its HOME and its /tmp (so the
grading copy holds it too). A failure is injected at each step of finishing the trial;
whatever raised, the run directory holds the secret in no file.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from contract.trial_events import TrialFinished
from runner import trial_files
from runner.capture import TrialGit
from runner.eventlog import read_events
from runner.run import run_trials
from runner.run_store import RunStore

PY = sys.executable
LEAVE = """import os, pathlib
s = os.environ["TH_CRASH_SECRET"]
ws = pathlib.Path(os.environ["TRIALHOUSE_WORKSPACE"])
for d in (ws, pathlib.Path(os.environ["HOME"]), pathlib.Path(os.environ.get("TMPDIR", "/tmp"))):
    (d / "kept-secret.txt").write_text("token=" + s + "\\n")
(ws / "calc.py").write_text((ws / "calc.py").read_text() + "\\n# " + s + "\\n")
"""


class Injected(Exception):
    """The failure a step of finishing raises in these tests."""


def _raise(*_a, **_k):
    raise Injected("injected failure")


def _emit_raising(original):
    def emit(self, cls, **fields):
        if cls is TrialFinished:
            raise Injected("injected failure emitting trial_finished")
        return original(self, cls, **fields)
    return emit


def _discard_raising(original):
    def discard(self, path):
        if "/trials/" in str(path):  # a trial's, not the controls' (which run first)
            raise Injected("injected failure discarding " + path.name)
        return original(self, path)
    return discard


STEPS = {
    "patch": (trial_files.TrialFiles, "save_patch"),
    "flags": (trial_files, "flag"),
    "changed_names": (TrialGit, "changed_names"),
    "redaction": (trial_files.TrialFiles, "keep_workspace"),
    "discard": ("runner.trial", "discard"),
    "summary": ("runner.trial", "summary_line"),
    "trial_finished": ("runner.trial", "emit"),
}


def files_holding(root: Path, needle: bytes) -> list[str]:
    found = []
    for base, _dirs, names in os.walk(root):
        for name in names:
            path = Path(base) / name
            if not path.is_symlink() and needle in path.read_bytes():
                found.append(str(path.relative_to(root)))
    return found


@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_failure_at_any_step_of_finishing_leaves_no_secret_in_the_run(kit, corpus_root, tmp_path,
                                                                       monkeypatch, step):
    secret = "th-" + secrets.token_hex(16)
    monkeypatch.setenv("TH_CRASH_SECRET", secret)
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": {
        "kind": "command", "argv": [PY, "-c", LEAVE], "pass_env": ["TH_CRASH_SECRET"]}}])
    owner, name = STEPS[step]
    if owner == "runner.trial":
        import runner.trial as trial_module
        if name == "discard":
            monkeypatch.setattr(RunStore, "discard", _discard_raising(RunStore.discard))
        elif name == "emit":
            monkeypatch.setattr(trial_module._Trial, "emit", _emit_raising(trial_module._Trial.emit))
        else:
            monkeypatch.setattr(trial_module, name, _raise)
    else:
        monkeypatch.setattr(owner, name, _raise)
    out = tmp_path / "o"
    res = run_trials(m, out, progress=False)
    (fin,) = [e for e in read_events(res.events_path) if isinstance(e, TrialFinished)]
    assert fin.outcome == "infra_error" and "injected" in fin.reason  # the runner's failure, said so
    assert files_holding(out, secret.encode()) == []


def test_the_finished_trial_keeps_its_redacted_workspace(kit, corpus_root, tmp_path, monkeypatch):
    """Without a failure the same agent's workspace is kept, redacted (the control)."""
    secret = "th-" + secrets.token_hex(16)
    monkeypatch.setenv("TH_CRASH_SECRET", secret)
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": {
        "kind": "command", "argv": [PY, "-c", LEAVE], "pass_env": ["TH_CRASH_SECRET"]}}])
    out = tmp_path / "o"
    res = run_trials(m, out, progress=False)
    (fin,) = [e for e in read_events(res.events_path) if isinstance(e, TrialFinished)]
    assert fin.outcome == "target_failed"
    assert (out / "trials" / fin.trial_id / "workspace" / "kept-secret.txt").read_text() != ""
    assert files_holding(out, secret.encode()) == []
