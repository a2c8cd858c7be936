"""Realistic event sequences built with the ``contract`` event models (test data only).

Loaded by path from conftest files (test helper, not a test module).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from contract.events import dump_event
from contract.run_events import (
    CaseInfo,
    CaseValidated,
    ControlResult,
    CriterionInfo,
    RunFinished,
    RunStarted,
    VariantInfo,
)
from contract.stage_events import Judgment, StageFinished, StageStarted, Usage
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    Checkpoint,
    Flag,
    Grading,
    TrialFinished,
    TrialStarted,
)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Seq:
    def __init__(self, run_id: str) -> None:
        self.run_id, self.n = run_id, 0

    def env(self, trial_id: str | None = None) -> dict:
        d = {"run_id": self.run_id, "trial_id": trial_id, "seq": self.n, "ts": T0 + timedelta(seconds=self.n)}
        self.n += 1
        return d


def run_started(s: Seq, variants=("base", "cand"), cases=("c1", "c2"), repetitions=2) -> RunStarted:
    return RunStarted(
        **s.env(), manifest_id="m1", manifest_path="manifest.json", manifest_sha256="a" * 64,
        engine_version="0.1.0", os="linux", python="3.11", git_version="2.43", repository="/repo",
        initial_commit="b" * 40, initial_tree="c" * 40, input_hashes={"graders/t.py": "d" * 64},
        repetitions=repetitions, max_attempts=1, timeout_seconds=300, stages=["build"],
        variants=[
            VariantInfo(variant=v, config_id=f"cfg-{v}", model=f"model-{v}", harness="h",
                           harness_version="1.0", agent_kind="simulated", simulated=True)
            for v in variants
        ],
        cases=[
            CaseInfo(case_id=c, holdout=(i == len(cases) - 1 and len(cases) > 1),
                        labels={"difficulty": "easy", "task_class": "validation", "repository": "svc",
                                "familiarity": "known" if i % 2 == 0 else "unknown"},
                        initial_commit="b" * 40,
                        criteria=[CriterionInfo(criterion_id="t1", layer="target", kind="command")])
            for i, c in enumerate(cases)
        ],
    )


def trial_events(s: Seq, trial_id: str, case_id: str, variant: str, rep: int, *, outcome: str | None = "accepted",
                 usage: Usage | None = None) -> list:
    """One trial: start, attempt, stage, checkpoint, grading, judgment, flag, finish (unless outcome None)."""
    usage = usage or Usage(input_tokens=1000, output_tokens=200, steps=5, source="simulated")
    out = [
        TrialStarted(**s.env(trial_id), case_id=case_id, variant=variant, config_id=f"cfg-{variant}",
                        repetition=rep, seed=7, workspace=f"/w/{trial_id}", order=0),
        AttemptStarted(**s.env(trial_id), attempt=1),
        StageStarted(**s.env(trial_id), attempt=1, stage="build", time_left_s=300, prompt_sha256="e" * 64),
        StageFinished(**s.env(trial_id), attempt=1, stage="build", exit_code=0, duration_s=12.5, usage=usage),
        Checkpoint(**s.env(trial_id), attempt=1, stage="build", sha="f" * 40, files_changed=2),
        Grading(**s.env(trial_id), attempt=1, criterion_id="t1", layer="target", exit_code=0,
                   verdict="passed" if outcome == "accepted" else "failed", duration_s=0.5, baseline="failed"),
        Judgment(**s.env(trial_id), attempt=1, criterion_id="j1", verdict="passed", judge_model="judge-x",
                    rationale="looks right"),
        Flag(**s.env(trial_id), kind="test_skipped", path="tests/test_x.py"),
    ]
    if outcome is not None:
        out += [
            AttemptFinished(**s.env(trial_id), attempt=1, outcome=outcome),
            TrialFinished(**s.env(trial_id), case_id=case_id, variant=variant, config_id=f"cfg-{variant}",
                             repetition=rep, outcome=outcome, attempts=1, duration_s=20.0, setup_s=1.0,
                             agent_s=12.5, verification_s=0.5, usage=usage, flags=1, simulated=True),
        ]
    return out


def run_events(run_id: str = "run-1", *, finished: bool = True, variants=("base", "cand"),
               cases=("c1", "c2"), repetitions=2) -> list:
    s = Seq(run_id)
    out: list = [run_started(s, variants, cases, repetitions)]
    out += [CaseValidated(**s.env(), case_id=c, ok=True, baseline={"t1": "failed"}) for c in cases]
    out.append(ControlResult(**s.env(), case_id=cases[0], control="negative", criterion_id="t1", layer="target",
                                exit_code=1, verdict="failed", expected="failed", ok=True, duration_s=0.2))
    n = 0
    for rep in range(1, repetitions + 1):
        for c in cases:
            for v in variants:
                n += 1
                out += trial_events(s, f"{run_id}-t{n:03d}", c, v, rep,
                                    outcome="accepted" if v == "cand" else "target_failed")
    if finished:
        out.append(RunFinished(**s.env(), status="completed", trials_total=n, trials_finished=n,
                                  outcomes={}, duration_s=100.0))
    return out


def json_paths(node, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path inside a decoded JSON value (for mutating one value of a line)."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            out.append((*prefix, k))
            out += json_paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.append((*prefix, i))
            out += json_paths(v, (*prefix, i))
    return out


def write_jsonl(path: Path, events: list, *, extra_lines: list[bytes] = (), torn: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        for e in events:
            f.write(dump_event(e).encode() + b"\n")
        for line in extra_lines:
            f.write(line + b"\n")
        f.write(torn)
    return path
