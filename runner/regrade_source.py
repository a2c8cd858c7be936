"""The run a regrade grades again: its trials as its events recorded them, and which of
them a regrade can grade (docs/runner.md, "Regrade").

A trial's final state is the runner-captured tree named by ``trial_finished.final_tree``
in the run's hash-chained events: that name is authoritative. What carries the content is
``changes.patch`` (the prepared tree → the final tree, ``git diff --binary``), applied to
the prepared state rebuilt from the pinned commit and the prepare commands; the result
must have exactly the recorded tree's name, else the trial is listed as "final state not
kept" and never guessed at. The kept workspace is evidence for people (redacted, large
files removed, no ``.git``) and is never read back: a patch that was cut, summarised or
redacted does not rebuild the tree, and neither would the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.run_events import RunStarted
from contract.trial_events import (
    AttemptFinished,
    Budget,
    Grading,
    RegradedFrom,
    TrialFinished,
    TrialStarted,
    WorkspacePrepared,
)
from runner.errors import RunnerError
from runner.eventlog import read_verified
from runner.manifest import Manifest
from runner.outcome import Stop, recorded_stop

GRADE_OUTCOMES = frozenset({"accepted", "target_failed", "regression", "infra_error"})


@dataclass
class SourceTrial:
    """One finished trial of the run being regraded, from its last ``trial_started`` on."""

    started: TrialStarted
    finished: TrialFinished
    prepared: WorkspacePrepared | None = None
    final: list[Grading] = field(default_factory=list)
    last_attempt: AttemptFinished | None = None
    budgets: list[Budget] = field(default_factory=list)

    @property
    def trial_id(self) -> str:
        assert self.finished.trial_id is not None
        return self.finished.trial_id

    def link(self) -> RegradedFrom:
        """What the regraded trial records of this one."""
        f = self.finished
        return RegradedFrom(run_id=f.run_id, trial_id=self.trial_id, outcome=f.outcome, reason=f.reason,
                            case_fingerprint=f.case_fingerprint, started_at=self.started.ts, finished_at=f.ts)

    def graded(self) -> bool:
        """Whether the trial's outcome came from a grade of its final state at all."""
        if self.finished.final_tree is None or not self.final:
            return False
        return not (self.last_attempt is not None and self.last_attempt.stop_kind == "ungraded")

    def stop(self) -> Stop | None:
        """The stop of the final attempt, as recorded (``attempt_finished.stop_*``). A run
        written before that was recorded: a time or cost budget exceeded is a graded stop,
        another ``budget_exhausted`` outcome the agent's own limit, anything else none."""
        a = self.last_attempt
        if a is not None and a.stop_kind is not None:
            return recorded_stop(a.stop_kind, a.stop_outcome, a.stop_reason)
        f = self.finished
        if any(b.status == "exceeded" and b.type in ("time", "cost") for b in self.budgets):
            return Stop("budget_exhausted", f.reason)
        if f.outcome == "budget_exhausted":
            return Stop("budget_exhausted", f.reason, unless_accepted=True)
        return None


@dataclass
class SourceRun:
    """The run a regrade reads: its directory, first ``run_started`` and finished trials."""

    run_dir: Path
    head: RunStarted
    trials: dict[str, SourceTrial]

    @property
    def run_id(self) -> str:
        return self.head.run_id

    def trial_dir(self, trial_id: str) -> Path:
        return self.run_dir / "trials" / trial_id


_KEEP = (WorkspacePrepared, Grading, AttemptFinished, Budget)


def read_source(run_dir: Path) -> SourceRun:
    """The run in ``run_dir`` as its verified events say; ``RunnerError`` when it cannot be
    regraded at all (no events, a chain that does not verify, a validation-only run)."""
    path = Path(run_dir) / "events.jsonl"
    if not path.is_file():
        raise RunnerError(f"{run_dir}: no events.jsonl; pass the output directory of a 'trialhouse run'")
    verified = read_verified(path)
    if not verified.intact:
        raise RunnerError(f"{path}: its hash chain does not verify ({verified.problems()}); "
                          "a regrade reads only what the chain vouches for")
    starts = [e for e in verified.events if isinstance(e, RunStarted)]
    if not starts or starts[0].validation_only:
        raise RunnerError(f"{run_dir}: not a run of trials (a validation-only run has nothing to regrade)")
    current: dict[str, list[Any]] = {}
    for e in verified.events:
        if e.trial_id is None:
            continue
        if isinstance(e, TrialStarted):
            current[e.trial_id] = [e]
        elif e.trial_id in current:
            current[e.trial_id].append(e)
    trials: dict[str, SourceTrial] = {}
    for tid, evs in current.items():
        fin = [e for e in evs if isinstance(e, TrialFinished)]
        if not fin:
            continue  # never finished: nothing was graded
        t = SourceTrial(evs[0], fin[-1])
        for e in evs:
            if isinstance(e, WorkspacePrepared):
                t.prepared = e
            elif isinstance(e, Grading) and e.final:
                t.final.append(e)
            elif isinstance(e, AttemptFinished):
                t.last_attempt = e
            elif isinstance(e, Budget):
                t.budgets.append(e)
        trials[tid] = t
    if not trials:
        raise RunnerError(f"{run_dir}: holds no finished trial to regrade")
    return SourceRun(Path(run_dir).resolve(), starts[0], dict(sorted(trials.items(), key=lambda kv: kv[1].started.order)))


def select(source: SourceRun, configs: tuple[str, ...], cases: tuple[str, ...]) -> list[SourceTrial]:
    """The trials a regrade takes: every finished one, or those of the named configurations
    (variant name, config id or a unique prefix of one) and cases. A name that matches
    nothing is an error listing what the run holds."""
    picked = list(source.trials.values())
    if configs:
        known = {(t.finished.variant, t.finished.config_id) for t in picked}
        wanted: set[str] = set()
        for name in configs:
            hits = {cid for v, cid in known if name in (v, cid) or cid.startswith(name)}
            if len(hits) != 1:
                listed = ", ".join(sorted(f"{v} ({cid[:12]})" for v, cid in known))
                why = "matches no configuration" if not hits else "matches several configurations"
                raise RunnerError(f"--config {name}: {why} of run {source.run_id}: {listed}")
            wanted |= hits
        picked = [t for t in picked if t.finished.config_id in wanted]
    if cases:
        held = sorted({t.finished.case_id for t in source.trials.values()})
        missing = [c for c in cases if c not in held]
        if missing:
            raise RunnerError(f"--case {missing[0]}: no trial of run {source.run_id} has that case "
                              f"(it holds {', '.join(held)})")
        picked = [t for t in picked if t.finished.case_id in cases]
    return picked


def manifest_problem(source: SourceRun, manifest: Manifest, case_id: str, commit: str | None) -> str | None:
    """Why the manifest cannot grade this case's trials again (None when it can): the case
    is gone, or it starts from another commit than the trials did."""
    if commit is None:
        return f"case {case_id} is not in the manifest"
    old = next((c.initial_commit for c in source.head.cases if c.case_id == case_id), None)
    if old is not None and old != commit:
        return (f"case {case_id} starts from {commit[:12]} in the manifest, but its trials started "
                f"from {old[:12]}: not the same task")
    return None
