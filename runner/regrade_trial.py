"""One trial graded again: its final state rebuilt and proven, graded with the manifest's
current criteria exactly as a trial is graded, its outcome decided again (docs/runner.md,
"Regrade").

The state is the pinned commit after ``prepare_commands`` (which must give the trial's
recorded prepared tree) plus the trial's ``changes.patch``, applied in the regrade's own
git directory (index only, nothing written through); the tree it makes must be the
``final_tree`` the trial's events name (``runner.regrade_source``). Grading is
``runner.grading`` unchanged: a pristine copy per criterion in the sandbox, the input
snapshot checked after each, the trial's evidence directories checked after. The outcome
comes from the same tables as a trial's (``runner.outcome``), with the trial's recorded
stop. Usage, cost, steps and times stay the trial's: no agent runs.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from contract.envelope import BaseEvent
from contract.run_events import CaseValidated
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    TrialFinished,
    TrialSkipped,
    TrialStarted,
    WorkspacePrepared,
)
from runner.capture import TrialGit
from runner.controls import control_state
from runner.git import GitError
from runner.grading import GradingContext, case_inputs, emit_gradings, grade_tree
from runner.manifest import Case
from runner.outcome import (
    attempt_outcome,
    grading_outcome,
    layer_results,
    stop_fields,
    summary_line,
)
from runner.pristine import remove_tree
from runner.regrade_source import SourceRun, SourceTrial
from runner.setup import RunSetup
from runner.tiers import for_regrade
from runner.trial import TrialInterrupted
from runner.trial_files import TrialFiles, flag


@dataclass(frozen=True)
class Regraded:
    """What one trial came to: its old and new outcome, or why it was not graded again."""

    trial_id: str
    case_id: str
    variant: str
    old: str
    new: str | None
    """None: not graded again (``why``)."""
    why: str = ""
    line: str = ""


def skip(s: RunSetup, t: SourceTrial, why: str) -> Regraded:
    """List a trial the regrade cannot grade (``trial_skipped`` with the link), never guess."""
    f = t.finished
    s.log.emit(TrialSkipped, trial_id=t.trial_id, case_id=f.case_id, variant=f.variant, config_id=f.config_id,
               repetition=f.repetition, reason=why, case_fingerprint=s.fingerprints.get(f.case_id),
               regraded_from=t.link())
    return Regraded(t.trial_id, f.case_id, f.variant, f.outcome, None, why)


def rebuild(s: RunSetup, case: Case, source: SourceRun, t: SourceTrial, files: TrialFiles,
            tgit: TrialGit, commit: str) -> tuple[str | None, str | None, str]:
    """(final tree, prepare's ignored tree, why not): the trial's final state rebuilt in the
    regrade's git directory and proven to be the recorded one."""
    f = t.finished
    if t.prepared is None or f.final_tree is None:
        return None, None, "final state not kept: the trial recorded no prepared or final tree"
    if f.patch_truncated:
        return None, None, "final state not kept: its changes.patch was cut at the size limit"
    patch = source.trial_dir(t.trial_id) / "changes.patch"
    if f.final_tree != t.prepared.prepared_tree and not patch.is_file():
        return None, None, f"final state not kept: {patch} is missing"
    prepared, ignored, why = control_state(s, case, "negative", files.ws, tgit, commit)
    if prepared is None:
        return None, None, f"the prepared state could not be rebuilt: {why}"
    if prepared != t.prepared.prepared_tree:
        return None, None, (f"the prepared state differs from the trial's ({prepared[:12]}, not "
                            f"{t.prepared.prepared_tree[:12]}): prepare_commands do not reproduce it")
    if f.final_tree == prepared:
        return prepared, ignored, ""
    index = files.dir / ".runner" / "regrade-index"
    try:
        tgit.run_git("read-tree", prepared, index=index)
        tgit.run_git("apply", "--cached", "--binary", "--whitespace=nowarn", str(patch), index=index)
        tree = tgit.run_git("write-tree", index=index).stdout.decode().strip()
    except GitError as exc:
        return None, None, f"final state not kept: changes.patch does not apply to the prepared tree ({exc})"
    if tree != f.final_tree:
        return None, None, (f"final state not kept: changes.patch rebuilds {tree[:12]}, not the graded "
                            f"{f.final_tree[:12]} (content summarised or redacted out of the patch)")
    return tree, ignored, ""


def regrade_trial(s: RunSetup, source: SourceRun, t: SourceTrial, validated: CaseValidated,
                  commit: str, stop: threading.Event, tier: Literal["scheduled"] | None = None) -> Regraded:
    """Grade ``t``'s final state again (or carry an ungraded outcome); emits the trial's events.
    ``tier``: ``scheduled`` grades the scheduled checks too (``runner.tiers.for_regrade``)."""
    start = time.monotonic()
    f = t.finished
    case = next(c for c in s.manifest.cases if c.id == f.case_id)
    trial_dir = s.run_dir / "trials" / t.trial_id
    remove_tree(trial_dir)
    trial_dir.mkdir(parents=True)
    files = TrialFiles(trial_dir)

    def emit(cls: type[BaseEvent], **fields: Any) -> None:
        s.log.emit(cls, trial_id=t.trial_id, **fields)

    if not t.graded():  # stopped before a grade: no grader could change the outcome
        return _finish(s, t, emit, f.outcome, f.reason, dict(f.layers), f.flags, start, validated)
    tgit = TrialGit(trial_dir / ".runner" / "git", s.containment.store)
    tree, ignored, why = rebuild(s, case, source, t, files, tgit, commit)
    if tree is None:
        remove_tree(trial_dir)
        return skip(s, t, why)
    if stop.is_set():
        raise TrialInterrupted(t.trial_id)
    _started(s, t, emit, files, tree, ignored, validated)
    outcome, reason, layers = _grade(s, case, t, files, tgit, (tree, ignored), validated, emit, stop, tier)
    flags = _evidence(source, t, files, case, emit)
    s.containment.store.discard(files.ws)
    s.containment.store.discard(trial_dir / ".runner")
    return _finish(s, t, emit, outcome, reason, layers, flags, start, validated)


def _started(s: RunSetup, t: SourceTrial, emit: Callable[..., None], files: TrialFiles, tree: str,
             ignored: str | None, validated: CaseValidated) -> None:
    f, st = t.finished, t.started
    assert t.prepared is not None
    emit(TrialStarted, case_id=f.case_id, variant=f.variant, config_id=f.config_id, repetition=f.repetition,
         seed=st.seed, workspace=str(files.ws), order=st.order, case_fingerprint=s.fingerprints[f.case_id])
    emit(WorkspacePrepared, initial_tree=t.prepared.initial_tree, prepared_tree=t.prepared.prepared_tree,
         ignored_tree=ignored, files=t.prepared.files, bytes=t.prepared.bytes)


def _grade(s: RunSetup, case: Case, t: SourceTrial, files: TrialFiles, tgit: TrialGit,
           trees: tuple[str, str | None], validated: CaseValidated, emit: Callable[..., None],
           stop: threading.Event, tier: Literal["scheduled"] | None = None) -> tuple[str, str, dict[str, str]]:
    """The final state graded as a trial's is, and the outcome decided again."""
    box, (tree, ignored) = s.containment, trees
    attempt = max(t.finished.attempts, 1)
    # Contained as a trial's grading is: the case's own inputs only (docs/security.md).
    ctx = GradingContext(box.backend, case_inputs(s.snapshot, case), tgit, files.dir / ".runner" / "grade",
                         read_only=box.read_only, redactor=s.redactor)
    try:
        run = grade_tree(ctx, for_regrade(case.criteria, tier), tree, overlay=ignored,
                         log_dir=files.dir / "grading" / f"a{attempt}")
    finally:
        ctx.close()
    if stop.is_set():  # graders killed by Ctrl-C decide nothing
        raise TrialInterrupted(t.trial_id)
    baseline: dict[str, str] = dict(validated.baseline)
    emit(AttemptStarted, attempt=attempt, findings=[])
    bad = files.integrity(s.snapshot, "after_grading", emit) + run.violations
    held = t.stop()
    outcome, reason = attempt_outcome(held, bad, grading_outcome(run.results, baseline))
    emit_gradings(emit, attempt, run.results, True, baseline)
    emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=[], **stop_fields(held))
    return outcome, reason, dict(layer_results(run.results, baseline)[0])


def _evidence(source: SourceRun, t: SourceTrial, files: TrialFiles, case: Case,
              emit: Callable[..., None]) -> int:
    """The trial's ``changes.patch`` kept with the regrade and inspected again (flags)."""
    patch = source.trial_dir(t.trial_id) / "changes.patch"
    if not patch.is_file():
        return 0
    shutil.copyfile(patch, files.dir / "changes.patch")
    return flag(patch.read_bytes(), case.allowed_paths, emit)


def _finish(s: RunSetup, t: SourceTrial, emit: Callable[..., None], outcome: Any, reason: str,
            layers: dict[str, str], flags: int, start: float, validated: CaseValidated) -> Regraded:
    f = t.finished
    if not t.graded():  # carried: its events start here
        emit(TrialStarted, case_id=f.case_id, variant=f.variant, config_id=f.config_id,
             repetition=f.repetition, seed=t.started.seed, workspace="", order=t.started.order,
             case_fingerprint=s.fingerprints[f.case_id])
        reason = f"{reason} (not graded: carried from {f.run_id})"
    line = summary_line(f.case_id, f.variant, f.repetition, outcome, layers, f.usage.cost_usd, f.duration_s, flags)
    emit(TrialFinished, case_id=f.case_id, variant=f.variant, config_id=f.config_id, repetition=f.repetition,
         outcome=outcome, reason=reason, attempts=f.attempts, duration_s=f.duration_s, setup_s=f.setup_s,
         agent_s=f.agent_s, verification_s=f.verification_s, usage=f.usage,
         cost_budget_status=f.cost_budget_status, layers=layers, flags=flags, simulated=f.simulated,
         line=line, final_tree=f.final_tree, case_fingerprint=s.fingerprints[f.case_id], scored=validated.ok,
         redactions=f.redactions, secrets_leaked=f.secrets_leaked, gateway_usage=f.gateway_usage,
         patch_paths=f.patch_paths, regraded_from=t.link(), regrade_s=round(time.monotonic() - start, 3))
    return Regraded(t.trial_id, f.case_id, f.variant, f.outcome, outcome, line=line)
