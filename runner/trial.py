"""One trial as a state machine: prepare → attempts (stages, then a grade) → finish.

A trial owns its directory ``<run_dir>/trials/<trial_id>/`` (``runner.trial_files``) and nothing
else; it never writes ``events.jsonl`` itself (its events go to ``emit``). That keeps it runnable
unchanged on another engine (a thread pool today, a distributed worker later). Each seam is a
module that gets what it needs as arguments and never imports this one: ``runner.budget`` (clock,
spend), ``runner.stage``, ``runner.trial_files`` (what stays), ``runner.outcome`` (the table).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.chain import evidence_hashes
from contract.envelope import BaseEvent, Outcome
from contract.stage_events import Usage
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    PrepareFinished,
    TrialFinished,
    TrialStarted,
    WorkspacePrepared,
)
from runner import sandbox
from runner.agents.harness_stage import ResolvedHarness, model_substituted
from runner.blame import AGENT_OUTPUT_ERRORS, charged
from runner.budget import Clock, TrialBudget
from runner.capture import Capture, TrialGit
from runner.containment import Containment
from runner.eventlog import Emit
from runner.git import GitError
from runner.grading import (
    GradeResult,
    GradingContext,
    argv_paths,
    case_inputs,
    emit_gradings,
    retry_findings,
)
from runner.manifest import Case, Manifest, Variant
from runner.outcome import (
    ENDS_THE_TRIAL,
    NOT_JUDGED,
    Stop,
    attempt_outcome,
    grading_outcome,
    layer_results,
    stop_fields,
    summary_line,
)
from runner.paths import Snapshot
from runner.pristine import remove_tree
from runner.procs import ordinary_env
from runner.stage import StageResult, StageSetup, run_stage
from runner.tiers import grade_tiers
from runner.trial_files import Kept, TrialFiles, create_workspace
from runner.walk import tree_size


class TrialInterrupted(Exception):
    """The run is stopping (Ctrl-C); the trial stays incomplete and resume re-runs it."""


@dataclass
class TrialSpec:
    """Everything one trial needs; serialisable in spirit (paths, models, plain data)."""

    run_id: str
    trial_id: str
    order: int
    manifest: Manifest
    manifest_dir: Path
    case: Case
    variant: Variant
    config_id: str
    repetition: int
    seed: int
    initial_commit: str
    snapshot: Snapshot
    trial_dir: Path
    containment: Containment
    instruction_texts: dict[str, str] = field(default_factory=dict)
    baseline: dict[str, str] = field(default_factory=dict)
    """Criterion id → verdict on the initial commit (negative control)."""
    stop: threading.Event | None = None
    case_fingerprint: str | None = None
    scored: bool = True
    harness: ResolvedHarness | None = None
    """For the harness kinds: the resolved CLI (settings, version, mounts)."""
    uses_gateway: bool = False
    """The agent's model calls go through the run's gateway (``Containment.gateway``)."""


@dataclass
class TrialOutcome:
    trial_id: str
    outcome: str
    reason: str
    line: str
    duration_s: float
    usage: Usage
    flags: int = 0
    attempts: int = 0


def _check_stop(spec: TrialSpec) -> None:
    if spec.stop is not None and spec.stop.is_set():
        raise TrialInterrupted(spec.trial_id)


class _Trial:
    """The state of one running trial (kept private; ``run_trial`` is the API)."""

    def __init__(self, spec: TrialSpec, emit: Emit, clock: Clock) -> None:
        self.spec = spec
        self.manifest = spec.manifest
        self.box = spec.containment
        self.tid = spec.trial_id
        self._emit = emit
        timeout_s, max_cost = self.manifest.budget(spec.case, spec.variant)
        self.budget = TrialBudget(timeout_s, max_cost, self.box.max_workspace_bytes, self.emit, clock)
        self.git = TrialGit(spec.trial_dir / ".runner" / "git", self.box.store)
        self.files = TrialFiles(spec.trial_dir)
        self.stage_setup = StageSetup(
            trial_id=spec.trial_id, manifest=spec.manifest, case=spec.case, variant=spec.variant,
            repetition=spec.repetition, seed=spec.seed, initial_commit=spec.initial_commit,
            instruction_texts=spec.instruction_texts, snapshot=spec.snapshot, harness=spec.harness,
            backend=self.box.backend, network=self.box.network, read_only=self.box.read_only,
            redactor=self.box.redactor, store=self.box.store,
            gateway=self.box.gateway if spec.uses_gateway else None)
        self.redactions = 0
        self.leaked = 0
        """Occurrences of the run's own secret values the agent put in its output."""
        self.setup_s = 0.0
        self.verification_s = 0.0
        self.grading: GradingContext | None = None
        self.last_results: list[GradeResult] = []
        self.prepared_tree: str | None = None
        self.ignored_tree: str | None = None
        self.current: Capture | None = None
        self.checkpoint: tuple[str | None, str | None] = (None, None)
        """The last checkpoint's (commit, tree)."""

    def emit(self, cls: type[BaseEvent], **fields: Any) -> None:
        self._emit(cls, trial_id=self.tid, **fields)

    def integrity(self, phase: str) -> list[str]:
        return self.files.integrity(self.spec.snapshot, phase, self.emit)

    # -- the whole trial --------------------------------------------------------
    def run(self) -> TrialOutcome:
        spec = self.spec
        self.emit(TrialStarted, case_id=spec.case.id, variant=spec.variant.id,
                  config_id=spec.config_id, repetition=spec.repetition, seed=spec.seed,
                  workspace=str(self.files.ws), order=spec.order, case_fingerprint=spec.case_fingerprint,
                  timeout_seconds=self.budget.timeout_s, max_cost_usd=self.budget.max_cost_usd)
        early = self.prepare()
        self.setup_s = self.budget.elapsed()
        if early is not None:
            return self.finish(early.outcome, early.reason, 0)
        findings: list[str] = []
        attempt = 0
        while True:  # the last attempt allowed is always final
            attempt += 1
            self.emit(AttemptStarted, attempt=attempt, findings=findings)
            outcome, reason, findings, final = self.attempt(attempt, findings)
            if final:
                return self.finish(outcome, reason, attempt)

    def prepare(self) -> Stop | None:
        """The workspace, the prepare commands, and the prepared tree captured."""
        for sub in (self.files.home, self.files.tmp):
            sub.mkdir(parents=True, exist_ok=True)
        ws = self.files.ws
        try:
            create_workspace(self.box.store, self.spec.initial_commit, ws)
            initial_tree = self.box.store.tree_of(self.spec.initial_commit)
            self.git.remember_checkout(ws, initial_tree)
        except (GitError, OSError) as exc:
            return Stop("infra_error", f"could not create the workspace: {exc}")
        for argv in self.manifest.prepare_commands:
            failed = self.prepare_command(list(argv))
            if failed:
                return failed
        try:
            cap = self.git.capture(ws, initial_tree, excludes=self.box.excludes, timeout=self.budget.for_git())
            self.prepared_tree = cap.tree
            if self.manifest.prepare_commands:
                ignored = self.git.capture(ws, initial_tree, excludes=self.box.excludes,
                                           ignored_only=True, timeout=self.budget.for_git())
                self.ignored_tree = ignored.tree if ignored.files else None
        except GitError as exc:
            return self.budget.work_failed("capturing the prepared workspace", exc)
        self.current = cap
        self.emit(WorkspacePrepared, initial_tree=initial_tree, prepared_tree=cap.tree,
                  ignored_tree=self.ignored_tree, files=cap.files, bytes=cap.bytes)
        return None

    def prepare_command(self, argv: list[str]) -> Stop | None:
        logs, ws, home = self.files.dir / "logs", self.files.ws, self.files.home
        logs.mkdir(exist_ok=True)
        env = ordinary_env({"HOME": str(home), **self.manifest.condition_env(self.spec.variant)})
        req = sandbox.Request(argv=argv, cwd=ws, env=env, read_only=[*self.box.read_only, *argv_paths(argv)],
                              read_write=[ws, home], tmp=self.files.tmp, network=self.box.network)
        res = sandbox.run(self.box.backend, req, timeout=self.budget.for_command(),
                          stdout_path=logs / "prepare.stdout", stderr_path=logs / "prepare.stderr")
        self.emit(PrepareFinished, command=argv, exit_code=res.exit_code,
                  timed_out=res.timed_out, duration_s=round(res.duration_s, 3))
        if res.ok:
            return None
        why = "timed out" if res.timed_out else (
            f"could not start ({res.error})" if res.could_not_start else
            f"exited {res.exit_code if res.exit_code is not None else 'by signal ' + str(res.signal)}")
        return Stop("infra_error", f"prepare command {argv[0]} {why}")

    # -- one attempt --------------------------------------------------------------
    def attempt(self, attempt: int, findings: list[str]) -> tuple[Outcome, str, list[str], bool]:
        """Stages, then a grade: (outcome, reason, findings for the next attempt, final)."""
        spec = self.spec
        stop, stage_findings = self.stages(attempt, findings)
        if stop is not None and not stop.grade:
            outcome, reason = attempt_outcome(stop, None, None)
            self.emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=[], **stop_fields(stop))
            return outcome, reason, [], True
        _check_stop(spec)
        try:
            results, violations = self.grade(attempt)
        except (GitError, *AGENT_OUTPUT_ERRORS) as exc:
            _check_stop(spec)  # the copy failed because the run is stopping: not a result
            failed = charged(exc, "preparing the grading copy") or self.budget.work_failed(
                "preparing the grading copy", exc)
            self.emit(AttemptFinished, attempt=attempt, outcome=failed.outcome, findings=[],
                      **stop_fields(failed))
            return failed.outcome, failed.reason, [], True
        _check_stop(spec)  # graders killed by Ctrl-C decide nothing: the trial stays unfinished
        bad = self.integrity("after_grading") + violations
        outcome, reason = attempt_outcome(stop, bad, grading_outcome(results, spec.baseline))
        final = (outcome in ENDS_THE_TRIAL or attempt >= self.manifest.max_attempts
                 or self.budget.exhausted())
        self.last_results = results
        emit_gradings(self.emit, attempt, results, final, spec.baseline)
        if final and outcome not in NOT_JUDGED:
            try:
                bad = self.judge(attempt, results)  # advisory: the outcome is already decided
            except AGENT_OUTPUT_ERRORS as exc:
                stop = charged(exc, "writing the judges' evidence")
                if stop is None:
                    raise
                bad, outcome, reason = [], stop.outcome, stop.reason
            _check_stop(spec)
            if bad:
                outcome, reason = "invalid", f"integrity violated while judging: {', '.join(bad)}"
        next_findings = [] if final else retry_findings(stage_findings, results, list(spec.case.criteria),
                                                        self.manifest.reveal_grader_output)
        self.emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=next_findings,
                  **stop_fields(stop))
        return outcome, reason, next_findings, final

    def stages(self, attempt: int, findings: list[str]) -> tuple[Stop | None, list[str]]:
        """The manifest's stages in order until one stops the attempt or fails."""
        stop: Stop | None = None
        stage_findings: list[str] = []
        for stage in self.manifest.stages:
            _check_stop(self.spec)
            if self.budget.exhausted():
                stop = self.budget.time_stop("time budget exhausted before " + stage)
                break
            st = run_stage(self.stage_setup, self.files, self.budget, self.emit, attempt, stage, findings)
            self.redactions += st.redactions
            self.leaked += st.leaked
            _check_stop(self.spec)
            stage_findings += st.findings
            stop = self.after_stage(st)
            if stop or not st.proc.ok:
                break  # a failed stage: grade what is there
        return stop, stage_findings

    def after_stage(self, st: StageResult) -> Stop | None:
        """Checks, capture and checkpoint after a stage; a ``Stop`` ends the attempt."""
        bad = self.integrity(f"after:{st.stage}#{st.attempt}")
        if bad:
            return Stop("invalid", f"integrity violated after {st.stage}: {', '.join(bad)}", grade=False)
        res, report = st.proc, st.report
        if st.stop is not None or res.could_not_start:
            return st.stop or Stop("infra_error", f"agent could not start: {res.error}", grade=False)
        size_stop = self.budget.workspace_stop(tree_size(self.files.ws, self.files.home, self.files.tmp))
        if size_stop:
            return size_stop
        try:
            self.current = self.git.capture(self.files.ws, self.prepared_tree or "", excludes=self.box.excludes,
                                            timeout=self.budget.for_git())
        except GitError as exc:
            return self.budget.work_failed("capturing the workspace", exc)
        if res.timed_out:
            return self.budget.time_stop(f"time budget of {self.budget.timeout_s:g}s exhausted in {st.stage}")
        # A harness's own account of an API failure counts even when it exits 0 (Claude
        # prints ``is_error`` results with exit 0 on some versions).
        if report.infra_error and (not res.ok or st.harness is not None):
            return Stop("infra_error",
                        f"agent reported an infrastructure failure: {report.message or report.status}",
                        grade=False)
        cost_stop = self.budget.cost_stop()
        if cost_stop:
            return cost_stop
        if report.budget_hit:
            return Stop("budget_exhausted", f"agent stopped at its own limit in {st.stage} "
                                            f"({report.status}{': ' + report.message if report.message else ''})",
                        unless_accepted=True)
        if res.ok and st.stage in ("build", "qa"):
            parent, tree = self.checkpoint
            sha, hidden = self.files.checkpoint(self.git, parent, tree or self.prepared_tree or "", self.current.tree,
                                                (st.stage, st.attempt), self.box.redactor, self.emit,
                                                self.budget.for_evidence)
            self.redactions += hidden
            self.checkpoint = (sha, self.current.tree)
        return None

    # -- grading ----------------------------------------------------------------
    def grade(self, attempt: int) -> tuple[list[GradeResult], list[str]]:
        assert self.current is not None
        if self.grading is None:  # one per trial: its copies serve every attempt while intact
            self.grading = GradingContext(self.box.backend, case_inputs(self.spec.snapshot, self.spec.case),
                                          self.git, self.files.dir / ".runner" / "grade",
                                          read_only=self.box.read_only, redactor=self.box.redactor)
        run = grade_tiers(self.grading, self.spec.case.criteria, self.current.tree, baseline=self.spec.baseline,
                          last=attempt >= self.manifest.max_attempts, overlay=self.ignored_tree,
                          log_dir=self.files.dir / "grading" / f"a{attempt}", deadline_s=self.budget.for_git())
        self.verification_s += sum(r.duration_s for r in run.results)
        return run.results, run.violations

    def judge(self, attempt: int, results: list[GradeResult]) -> list[str]:
        """Run the case's judge criteria on the final state (``runner.judges``); returns
        integrity violations only (a rubric changed mid-run), never a verdict."""
        criteria = [c for c in self.spec.case.criteria if c.judge is not None]
        if not criteria or self.box.judges is None or self.current is None:
            return []
        from runner.judges.invoke import judge_trial
        from runner.judges.trial import trial_evidence

        te = trial_evidence(self.git, self.box.store.tree_of(self.spec.initial_commit), self.current.tree,
                            results, trial_id=self.tid, variant=self.spec.variant, attempt=attempt,
                            scratch=self.files.dir / ".runner" / "judge")
        return judge_trial(self.box.judges, criteria, te, self.emit)

    # -- the end ----------------------------------------------------------------
    def finish(self, outcome: Outcome, reason: str, attempts: int) -> TrialOutcome:
        spec, budget = self.spec, self.budget
        graders = case_inputs(spec.snapshot, spec.case).contents  # their names are flagged in the patch
        try:
            kept = self.files.keep(self.git, self.box.store, self.box.redactor, (self.prepared_tree, self.ignored_tree),
                                   self.current.tree if self.current else None, spec.case.allowed_paths,
                                   self.emit, budget.for_evidence, graders)
        except AGENT_OUTPUT_ERRORS as exc:
            stop = charged(exc, f"keeping the evidence (graded {outcome})")
            if stop is None:
                raise
            outcome, reason, kept = stop.outcome, stop.reason, Kept()
        self.redactions += kept.redactions
        if kept.patch is not None and kept.patch.summarised:
            reason += f" (changes.patch summarises {len(kept.patch.summarised)} large file(s))"
        layers: dict[str, str] = dict(layer_results(self.last_results, spec.baseline)[0])
        usage = budget.usage()
        wall = budget.elapsed()
        line = summary_line(spec.case.id, spec.variant.id, spec.repetition, outcome, layers,
                            usage.cost_usd, wall, kept.flags)
        self.files.scrub(self.box.store)  # before the hashes: nothing in the trial changes after
        evidence = evidence_hashes(self.files.dir)
        gateway = budget.gateway_usage()
        self.emit(
            TrialFinished, case_id=spec.case.id, variant=spec.variant.id, config_id=spec.config_id,
            repetition=spec.repetition, outcome=outcome, reason=reason, attempts=attempts,
            duration_s=round(wall, 3), setup_s=round(self.setup_s, 3),
            agent_s=round(budget.agent_seconds(), 3),
            verification_s=round(self.verification_s, 3), usage=usage,
            cost_budget_status=budget.final_cost_status(), layers=layers, flags=kept.flags,
            simulated=spec.variant.agent.kind == "simulated", line=line,
            final_tree=self.current.tree if self.current else None,
            patch_truncated=bool(kept.patch and kept.patch.truncated),
            case_fingerprint=spec.case_fingerprint, scored=spec.scored, redactions=self.redactions,
            secrets_leaked=self.leaked, gateway_usage=gateway, patch_paths=kept.patch_paths,
            model_substituted=model_substituted(spec.variant.model, gateway), evidence=evidence,
        )
        return TrialOutcome(spec.trial_id, outcome, reason, line, round(wall, 3), usage, kept.flags, attempts)


def run_trial(spec: TrialSpec, emit: Emit, clock: Clock = time.monotonic) -> TrialOutcome:
    """Run one trial in a fresh directory; raises ``TrialInterrupted`` when stopping.
    ``clock`` is the trial budget's (``runner.budget``)."""
    remove_tree(spec.trial_dir)
    spec.trial_dir.mkdir(parents=True)
    trial = _Trial(spec, emit, clock)
    try:
        return trial.run()
    finally:  # whatever raised (or was charged to the agent): nothing unredacted stays
        trial.files.scrub(spec.containment.store)
