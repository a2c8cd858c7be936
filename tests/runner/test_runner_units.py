"""Small pure pieces: canonical paths, argv substitution, process groups, instructions."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from contract.run_events import RunStarted
from runner.eventlog import read_events
from runner.grading import substitute
from runner.manifest import Variant, config_id
from runner.paths import canonical_problem
from runner.procs import ordinary_env, run_bounded
from runner.run import run_trials


@pytest.mark.parametrize("rel, ok", [
    ("graders/a.py", True), ("a.py", True), ("/abs/a.py", False), ("../a.py", False),
    ("graders/../a.py", False), ("./a.py", False), ("graders//a.py", False),
    ("graders\\a.py", False), ("", False), ("C:/x.py", False),
])
def test_canonical_paths(rel, ok):
    assert (canonical_problem(rel) is None) is ok


def test_substitution_stays_inside_one_element():
    argv = substitute(["x", "--ws={workspace}", "{inputs}/g.py", "{workspace} ; rm -rf /"],
                      {"workspace": "/w s", "inputs": "/i"})
    assert argv == ["x", "--ws=/w s", "/i/g.py", "/w s ; rm -rf /"]


def test_timeout_kills_the_group_and_reports_it(tmp_path):
    res = run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], cwd=tmp_path,
                      env=ordinary_env(), timeout=0.5)
    assert res.timed_out and res.signal == 9 and res.exit_code is None


def test_missing_program_could_not_start(tmp_path):
    res = run_bounded([str(tmp_path / "nope")], cwd=tmp_path, env=ordinary_env(), timeout=5)
    assert res.could_not_start and res.error


def test_env_is_allow_listed(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_API_KEY", "x")
    env = ordinary_env({"TRIALHOUSE_STAGE": "build"}, pass_env=["PATH"])
    assert "SOME_API_KEY" not in env and env["TRIALHOUSE_STAGE"] == "build"


def test_stage_instructions_snapshotted_into_prompt_and_config(kit, corpus_root, tmp_path):
    (corpus_root / "instr").mkdir()
    (corpus_root / "instr" / "build.md").write_text("Always write a test first.\n")
    var = {"id": "v", "agent": kit.agent("noop"), "stage_instructions": {"build": ["instr/build.md"]}}
    m = kit.make_corpus(corpus_root, variants=[var])
    res = run_trials(m, tmp_path / "o", progress=False)
    prompt = (res.run_dir / "trials" / "mul__v__r1" / "prompts" / "a1-build.md").read_text()
    assert "Always write a test first." in prompt and "Add calc.mul" in prompt
    head = read_events(res.events_path)[0]
    assert isinstance(head, RunStarted)
    variant = Variant.model_validate(json.loads(m.read_text())["variants"][0])
    assert head.variants[0].config_id == config_id(variant, {"instr/build.md": "Always write a test first.\n"})
    assert head.variants[0].config_id != config_id(variant, {"instr/build.md": "Something else.\n"})
    assert "instr/build.md" in head.variants[0].stage_instruction_hashes


def test_output_files_are_opened_before_the_program_can_swap_their_directory(tmp_path, monkeypatch):
    """A program that is not isolated renames the log directory and plants a symlink to a victim
    in its place as its first act; the runner's output files were opened before it started, so
    nothing lands in the victim (it once raced: the pump threads opened them late, under load)."""
    import threading

    from runner import procs

    logs, victim = tmp_path / "logs", tmp_path / "victim"
    logs.mkdir()
    victim.mkdir()
    real_start = threading.Thread.start

    def late_start(self):  # the pumps start only after the program has done its swap
        time.sleep(0.5)
        real_start(self)

    monkeypatch.setattr(procs.threading.Thread, "start", late_start)
    swap = ("import os, sys; os.rename(sys.argv[1], sys.argv[1] + '.moved'); "
            "os.symlink(sys.argv[2], sys.argv[1]); print('out'); print('err', file=sys.stderr)")
    res = procs.run_bounded([sys.executable, "-c", swap, str(logs), str(victim)], cwd=tmp_path,
                            env=dict(os.environ), timeout=30, stdout_path=logs / "a.stdout",
                            stderr_path=logs / "a.stderr")
    assert res.exit_code == 0
    assert list(victim.iterdir()) == []
    assert (tmp_path / "logs.moved" / "a.stdout").read_text() == "out\n"
