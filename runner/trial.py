"""One trial as a self-contained unit: spec in, events (via ``emit``) and evidence out.

A trial owns its directory ``<run_dir>/trials/<trial_id>/`` and nothing else; it never
writes ``events.jsonl`` itself. That keeps it runnable unchanged on another engine
(a thread pool today, a distributed worker later).

Layout of the trial directory (only ``workspace/`` and ``.sandbox/`` are ever visible to
the agent, and only inside its sandbox):

* ``workspace/``: the agent's repository (its ``.git`` is the agent's; never trusted);
* ``.sandbox/home``, ``.sandbox/tmp``: the trial's private HOME and /tmp;
* ``.sandbox/<stage>/in`` (read-only) and ``out`` (read-write): one stage's files;
* ``.runner/``: the runner's private git directory and grading scratch;
* ``prompts/``, ``logs/``, ``agent-events/``, ``verdicts/``, ``grading/``,
  ``changes.patch``: evidence, written by the runner only.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.call_events import ModelCall, TrajectoryStep
from contract.envelope import BaseEvent
from contract.redact import Redactor
from contract.stage_events import (
    GatewayUsage,
    PermissionDenial,
    StageFinished,
    StageStarted,
    Usage,
    reported_usage,
)
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    Budget,
    Checkpoint,
    Flag,
    Grading,
    IntegrityCheck,
    PrepareFinished,
    TrialFinished,
    TrialStarted,
    WorkspacePrepared,
)
from contract.values import as_text
from runner import sandbox
from runner.agents.harness_result import HarnessResult
from runner.agents.harness_stage import (
    HARNESS_STDOUT_LIMIT,
    MAX_STEPS,
    ResolvedHarness,
    collect,
    command_steps,
    gateway_usage,
    read_stage,
    step_fields,
    sum_gateway,
)
from runner.agents.invoke import StageContext, StageDirs, build_request
from runner.agents.usage import AgentReport, parse_agent_output
from runner.capture import Capture, PatchInfo, RunStore, TrialGit, tree_size
from runner.containment import Containment
from runner.eventlog import Emit
from runner.evidence import read_capped, write_atomic
from runner.gateway.records import gateway_failure, to_event_fields
from runner.gateway.server import GatewayConfigError
from runner.git import GitError, git
from runner.grading import GradeResult, GradingContext, argv_paths, grade_tree
from runner.manifest import Case, Manifest, Variant
from runner.paths import Snapshot, sha256_bytes
from runner.pristine import remove_tree
from runner.procs import ProcResult, ordinary_env
from runner.prompts import build_prompt

EVIDENCE_DIRS = ("prompts", "logs", "agent-events", "verdicts", "grading", "checkpoints", "trajectories",
                 ".runner", ".sandbox")
"""Directories of a trial the runner writes into: created before any agent runs, and
checked (same inode, still a directory) before every write, so a planted symlink is a
violation instead of a path the runner writes through."""

STAGE_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout and of stderr kept per stage."""
AGENT_FILE_LIMIT = 4 * 1024 * 1024
"""Bytes of an agent-written events file kept (the rest is dropped with a count)."""
VERDICT_LIMIT = 256 * 1024
PATCH_PATHS = 1000
"""Paths of the final patch recorded in ``trial_finished``."""
HARNESS_STORED_STDOUT = 8 * 1024 * 1024
"""Bytes of a harness's stdout kept (head and tail): Claude's stream-json is its trajectory."""
KEPT_FILE_LIMIT = 16 * 1024 * 1024
"""A changed workspace file larger than this is not kept (it is named in
``workspace-removed.txt``); ``changes.patch`` summarises it too."""


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


@dataclass(frozen=True)
class Stop:
    """Why a trial (or an attempt) ends before or instead of a grade."""

    outcome: str
    reason: str
    grade: bool = True
    """Whether the state reached is still graded (a timed-out stage is; an oversized
    workspace, an integrity violation or an infrastructure failure is not)."""
    unless_accepted: bool = False
    """The grade wins when it is ``accepted`` (an agent that stopped at its own turn
    limit with the task done solved it; otherwise the stop is the outcome)."""


@dataclass(frozen=True)
class StageResult:
    """One stage invocation as the runner saw it."""

    stage: str
    attempt: int
    proc: ProcResult
    report: AgentReport
    claimed_status: str | None
    findings: list[str]
    harness: HarnessResult | None = None
    stop: Stop | None = None
    """Set when the stage's model traffic cannot be trusted (a gateway failure)."""


@dataclass
class _Stage:
    usage: Usage
    duration_s: float
    gateway: GatewayUsage | None = None


def _check_stop(spec: TrialSpec) -> None:
    if spec.stop is not None and spec.stop.is_set():
        raise TrialInterrupted(spec.trial_id)


def _sum_usage(stages: list[_Stage]) -> Usage:
    """Trial totals; a field stays None when any stage left it unreported."""
    if not stages:
        return Usage()
    totals: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "cost_usd", "steps"):
        vals = [getattr(s.usage, name) for s in stages]
        totals[name] = None if any(v is None for v in vals) else sum(vals)
    bases = {s.usage.cost_basis for s in stages}
    basis = bases.pop() if totals["cost_usd"] is not None and len(bases) == 1 else None
    firsts = [s.usage.time_to_first_edit_s for s in stages if s.usage.time_to_first_edit_s is not None]
    totals["time_to_first_edit_s"] = firsts[0] if firsts else None
    sources = sorted({s.usage.source for s in stages if s.usage.source})
    # A sum of in-range stage numbers can still leave the contract's range: unknown then.
    usage, _notes = reported_usage(source="+".join(sources) or None, **totals)
    return usage.model_copy(update={"cost_basis": basis if usage.cost_usd is not None else None})


def _known_cost(stages: list[_Stage]) -> float:
    return sum(s.usage.cost_usd for s in stages if s.usage.cost_usd is not None)


def _parse_verdict(data: bytes | None) -> tuple[str | None, list[str]]:
    """What a stage claimed in its verdict file (recorded, never a grade)."""
    if data is None:
        return None, []
    try:
        parsed = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return None, []
    if not isinstance(parsed, dict):
        return None, []
    status = parsed.get("status")
    findings = parsed.get("findings")
    findings = [as_text(f, 2000) for f in findings[:50]] if isinstance(findings, list) else []
    return (as_text(status, 100) if status is not None else None), findings


def _store_redacted(raw: Path, dest: Path, redactor: Redactor, limit: int = STAGE_OUTPUT_LIMIT) -> tuple[int, int]:
    """Copy ``raw`` to ``dest`` with secrets and token-like strings redacted; (all, known secrets).

    Up to ``limit`` bytes are kept whole; a larger file (a harness's stream, which the
    runner reads in full to parse) keeps its head and tail around a marker line."""
    try:
        size = os.lstat(raw).st_size
    except OSError:
        size = 0
    if size > limit:
        whole, _cut = read_capped(raw, size)
        known = sum((whole or b"").count(s.encode()) for s in redactor.secrets)
        _truncated, count = redactor.file(raw, limit)  # streamed in place: the runner's own file
        os.replace(raw, dest)
        return count, known
    data, _cut = read_capped(raw, limit + 1)
    clean, count, known = redactor.scan((data or b"").decode("utf-8", errors="replace"))
    write_atomic(dest, clean.encode("utf-8"))
    raw.unlink(missing_ok=True)
    return count, known


def _layers(results: list[GradeResult], baseline: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """Layer → pass|fail|none on the final state, ignoring failures that pre-existed."""
    layers: dict[str, str] = {}
    pre_existing = []
    for layer in ("target", "regression", "repository"):
        mine = [r for r in results if r.layer == layer]
        if not mine:
            layers[layer] = "none"
            continue
        failing = [r for r in mine if r.verdict != "passed"]
        if layer != "target":
            pre = [r for r in failing if r.verdict == "failed" and baseline.get(r.criterion_id) == "failed"]
            pre_existing += [r.criterion_id for r in pre]
            failing = [r for r in failing if r not in pre]
        layers[layer] = "fail" if failing else "pass"
    return layers, pre_existing


def grading_outcome(results: list[GradeResult], baseline: dict[str, str]) -> tuple[str, str]:
    """Outcome and reason from the final-state gradings alone."""
    inconclusive = [r.criterion_id for r in results if r.verdict == "inconclusive"]
    if inconclusive:
        return "infra_error", f"grader inconclusive: {', '.join(inconclusive)}"
    layers, pre = _layers(results, baseline)
    note = f" (pre-existing failures ignored: {', '.join(pre)})" if pre else ""
    if layers["target"] == "fail":
        failed = [r.criterion_id for r in results if r.layer == "target" and r.verdict == "failed"]
        return "target_failed", f"target failed: {', '.join(failed)}{note}"
    if "fail" in (layers["regression"], layers["repository"]):
        failed = [r.criterion_id for r in results if r.layer != "target" and r.verdict == "failed"
                  and baseline.get(r.criterion_id) != "failed"]
        return "regression", f"broke existing behaviour: {', '.join(failed)}{note}"
    return "accepted", f"all criteria passed{note}"


def summary_line(case_id: str, variant: str, rep: int, outcome: str, layers: dict[str, str],
                 cost: float | None, wall: float, flags: int) -> str:
    cost_text = "unknown" if cost is None else f"{cost:.2f}"
    return (
        f"task={case_id} variant={variant} rep={rep} outcome={outcome} "
        f"target={layers.get('target', 'none')} regression={layers.get('regression', 'none')} "
        f"repository={layers.get('repository', 'none')} cost_usd={cost_text} "
        f"wall_seconds={round(wall)} flags={flags}"
    )


def create_workspace(store: RunStore, commit: str, dest: Path) -> None:
    """Make ``dest`` a new repository holding only ``commit`` (detached), no remote.

    Its ``.git`` is a copy of the run store's seed for ``commit`` (what ``git init`` and a
    depth-1 fetch leave, built once per run), checked out by git; never the source
    repository. The agent owns it after.
    """
    dest.mkdir(parents=True, exist_ok=False)
    shutil.copytree(store.seed(commit), dest / ".git")
    git(dest, "checkout", "-q", "--detach", commit)


class _Trial:
    """The mutable state of one running trial (kept private; ``run_trial`` is the API)."""

    def __init__(self, spec: TrialSpec, emit: Emit) -> None:
        self.spec = spec
        self.manifest = spec.manifest
        self.box = spec.containment
        self.redactor = spec.containment.redactor
        self.redactions = 0
        self.leaked = 0
        """Occurrences of the run's own secret values the agent put in its output."""
        self.tid = spec.trial_id
        self._emit = emit
        self.start = time.monotonic()
        self.deadline = self.start + self.manifest.timeout_seconds
        self.dir = spec.trial_dir
        self.ws = spec.trial_dir / "workspace"
        self.home = spec.trial_dir / ".sandbox" / "home"
        self.tmp = spec.trial_dir / ".sandbox" / "tmp"
        self.git = TrialGit(spec.trial_dir / ".runner" / "git", self.box.store)
        self.stages: list[_Stage] = []
        self.verification_s = 0.0
        self.setup_s: float | None = None
        self.cost_status = "unlimited" if self.manifest.max_cost_usd is None else "within"
        self.last_results: list[GradeResult] = []
        self.grading: GradingContext | None = None
        self.prepared_tree: str | None = None
        self.ignored_tree: str | None = None
        self.current: Capture | None = None
        self.checkpoint_sha: str | None = None
        self.checkpoint_tree: str | None = None
        self.patch: PatchInfo | None = None
        self.dir_ids: dict[str, tuple[int, int]] = {}
        for name in ("", *EVIDENCE_DIRS):
            (self.dir / name).mkdir(exist_ok=True)
            st = os.lstat(self.dir / name)
            self.dir_ids[name] = (st.st_dev, st.st_ino)

    def known_in(self, data: bytes | None) -> int:
        return sum(data.count(s.encode()) for s in self.redactor.secrets) if data else 0

    def evidence_problems(self) -> list[str]:
        """Evidence directories that are no longer the ones the runner created."""
        bad = []
        for name, ident in self.dir_ids.items():
            try:
                st = os.lstat(self.dir / name)
                same = stat.S_ISDIR(st.st_mode) and (st.st_dev, st.st_ino) == ident
            except OSError:
                same = False
            if not same:
                bad.append(f"evidence directory {name or '(trial)'}/ replaced")
        return bad

    def emit(self, cls: type[BaseEvent], **fields: Any) -> None:
        self._emit(cls, trial_id=self.tid, **fields)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    # -- integrity --------------------------------------------------------------
    def integrity(self, phase: str) -> list[str]:
        """What an agent or grader reached that it must not have (empty when nothing)."""
        snap = self.spec.snapshot
        bad = [f"inputs/{p}" for p in snap.verify()]
        if bad:  # put the run's reference copy back so no other trial sees the change
            remove_tree(snap.root)
            snap.materialise(snap.root)
        if os.path.islink(self.ws) or not self.ws.is_dir():
            bad.append("workspace (replaced or removed)")
        bad += self.evidence_problems()
        self.emit(IntegrityCheck, phase=phase, ok=not bad, mismatches=bad)
        return bad

    # -- stages -----------------------------------------------------------------
    def run_stage(self, attempt: int, stage: str, findings: list[str]) -> StageResult:
        spec, d = self.spec, self.dir
        tag = f"a{attempt}-{stage}"
        prompt, hidden = self.redactor.text(build_prompt(
            self.manifest, spec.case, spec.variant, stage, attempt, findings,
            spec.instruction_texts, spec.initial_commit))
        self.redactions += hidden
        write_atomic(d / "prompts" / f"{tag}.md", prompt.encode("utf-8"))
        dirs = StageDirs(d / ".sandbox" / tag, self.home, self.tmp)
        dirs.create(prompt)
        time_left = max(self.left(), 0.0)
        self.emit(StageStarted, attempt=attempt, stage=stage, time_left_s=round(time_left, 3),
                  prompt_sha256=sha256_bytes(prompt.encode()))
        ctx = StageContext(
            kind=spec.variant.agent.kind, stage=stage, attempt=attempt, case_id=spec.case.id,
            repetition=spec.repetition, variant_id=spec.variant.id, model=spec.variant.model,
            seed=spec.seed, workspace=str(self.ws), reference_patch=None, patches_dir=None,
            candidates_dir=None, skill=None, price_per_mtok=None, findings=list(findings),
            prompt_file=str(dirs.prompt_file), events_file=str(dirs.events_file),
            verdict_file=str(dirs.verdict_file),
            labels=spec.case.labels.model_dump(exclude_none=True),
            reasoning_effort=spec.variant.reasoning_effort,
        )
        gw = self.box.gateway if spec.uses_gateway else None
        base: str | None = None
        if gw is not None:
            try:
                base = gw.open(trial_id=self.tid, case_id=spec.case.id, variant=spec.variant.id,
                               repetition=spec.repetition, stage=stage, attempt=attempt, workspace=self.ws)
            except GatewayConfigError as exc:  # e.g. replay without a recording for this trial
                why = f"model gateway: {exc}"
                res = ProcResult(None, None, False, True, 0.0, error=why)
                self.emit(StageFinished, attempt=attempt, stage=stage, could_not_start=True, duration_s=0.0)
                self.stages.append(_Stage(Usage(), 0.0))
                remove_tree(dirs.root)
                return StageResult(stage, attempt, res, AgentReport(), None, [],
                                   stop=Stop("infra_error", why, grade=False))
        raw_out, raw_err = d / "logs" / f"{tag}.stdout.raw", d / "logs" / f"{tag}.stderr.raw"
        try:
            inv = build_request(spec.variant, spec.case, ctx, spec.snapshot, dirs, network=self.box.network,
                                read_only=list(self.box.read_only), harness=spec.harness, base_url=base)
            started = datetime.now(UTC)
            res = sandbox.run(self.box.backend, inv.request, timeout=time_left, stdout_path=raw_out,
                              stderr_path=raw_err,
                              limit=HARNESS_STDOUT_LIMIT if inv.harness is not None else STAGE_OUTPUT_LIMIT)
        finally:
            calls = gw.close(self.tid, stage, attempt) if base is not None else []
        for call in calls:  # the gateway's own records: what crossed the wire, whatever the agent says
            self.emit(ModelCall, **to_event_fields(call))
        measured = gateway_usage(calls) if base is not None else None
        failure = gateway_failure(calls)
        gateway_stop = Stop("infra_error", failure, grade=False) if failure else None
        if self.evidence_problems():  # not isolated, and it replaced our directories: write nothing
            self.stages.append(_Stage(Usage(), res.duration_s, measured))
            self.emit(StageFinished, attempt=attempt, stage=stage, exit_code=res.exit_code,
                      signal=res.signal, timed_out=res.timed_out, could_not_start=res.could_not_start,
                      duration_s=round(res.duration_s, 3), gateway_usage=measured)
            return StageResult(stage, attempt, res, AgentReport(), None, [], stop=gateway_stop)
        # Every process of the invocation is gone now; read what it left, never following links.
        events_data, events_cut = read_capped(dirs.events_file, AGENT_FILE_LIMIT)
        events_copy = d / "agent-events" / f"{tag}.jsonl"
        clean_events, hidden = self.redactor.jsonl(events_data or b"")
        write_atomic(events_copy, clean_events)
        verdict_data, _ = read_capped(dirs.verdict_file, VERDICT_LIMIT)
        raw_verdict = verdict_data
        if verdict_data is not None:
            verdict_data, n = self.redactor.jsonl(verdict_data)
            hidden += n
            write_atomic(d / "verdicts" / f"{tag}.json", verdict_data)
        result: HarnessResult | None = None
        if inv.harness is not None and spec.harness is not None:
            collected = collect(inv.harness, d / ".runner" / f"trajectory-{tag}")
            result, steps = read_stage(spec.harness, inv.harness, collected, stdout=raw_out, stderr=raw_err,
                                       started=started, workspace=self.ws, stage=stage, calls=calls)
            report = result.report
            hidden += self.keep_trajectory(collected, tag)
        self.box.store.discard(dirs.root)
        if result is None:
            report = parse_agent_output(spec.variant.agent.usage_format, raw_out, events_copy,
                                        stage_started_at=started)
            steps = command_steps(events_copy, calls, started=started, stage=stage)
        if report.usage.cost_usd is not None and report.usage.cost_basis is None:
            report = replace(report, usage=report.usage.model_copy(update={"cost_basis": "reported"}))
        status, vfindings = _parse_verdict(verdict_data)
        out_path, err_path = d / "logs" / f"{tag}.stdout", d / "logs" / f"{tag}.stderr"
        stdout_limit = HARNESS_STORED_STDOUT if result is not None else STAGE_OUTPUT_LIMIT
        (n_out, k_out), (n_err, k_err) = (_store_redacted(raw_out, out_path, self.redactor, stdout_limit),
                                          _store_redacted(raw_err, err_path, self.redactor))
        redactions = n_out + n_err
        self.leaked += k_out + k_err + self.known_in(events_data) + self.known_in(raw_verdict)
        self.redactions += redactions + hidden
        gateway_ids = {c.response_id or c.request_id for c in calls} - {None}
        for step in steps[:MAX_STEPS]:
            self.emit(TrajectoryStep, attempt=attempt, stage=stage, **step_fields(step, gateway_ids))
        self.emit(
            StageFinished, attempt=attempt, stage=stage, exit_code=res.exit_code,
            signal=res.signal, timed_out=res.timed_out, could_not_start=res.could_not_start,
            duration_s=round(res.duration_s, 3), usage=report.usage, verdict_status=status,
            verdict_findings=vfindings, stdout_path=str(out_path.relative_to(d)),
            stderr_path=str(err_path.relative_to(d)),
            stdout_truncated=res.stdout_truncated or res.stderr_truncated or events_cut,
            redactions=redactions, gateway_usage=measured, trajectory_steps=min(len(steps), MAX_STEPS),
            **self.harness_fields(result, len(steps)),
        )
        self.stages.append(_Stage(report.usage, res.duration_s, measured))
        return StageResult(stage, attempt, res, report, status, vfindings, harness=result, stop=gateway_stop)

    def harness_fields(self, result: HarnessResult | None, n_steps: int) -> dict[str, Any]:
        """What a harness's own output said beyond usage, for ``stage_finished``."""
        notes = [f"{n_steps - MAX_STEPS} steps after the first {MAX_STEPS} not recorded"] if n_steps > MAX_STEPS else []
        if result is None:
            return {"harness_notes": notes}
        probed = self.spec.harness.version if self.spec.harness is not None else None
        version = result.cli_version or probed
        if result.cli_version and probed and result.cli_version != probed:
            notes.append(f"the CLI's output says version {result.cli_version}; --version said {probed}")
        elif not result.cli_version and probed:
            notes.append("version from --version (the output carries none)")
        return {
            "harness_version": version, "session_id": result.session_id,
            "claimed_cost_usd": result.claimed_cost_usd, "cost_basis": result.cost_basis,
            "permission_denials": [PermissionDenial(tool_name=p.tool_name, tool_use_id=p.tool_use_id)
                                   for p in result.permission_denials],
            "context_exhausted": result.context_exhausted, "stderr_excerpt": result.stderr_excerpt,
            "tokens_from": result.tokens_from, "harness_notes": [*result.notes, *notes],
        }

    def keep_trajectory(self, collected: Path | None, tag: str) -> int:
        """Redacted copies of the trajectory files a harness left, as evidence; returns redactions."""
        if collected is None:
            return 0
        files = sorted(collected.iterdir()) if collected.is_dir() else [collected]
        dest_dir = self.dir / "trajectories" / tag
        dest_dir.mkdir(parents=True, exist_ok=True)
        total = 0
        for path in files:
            if not path.is_file():
                continue
            data = path.read_bytes()
            self.leaked += self.known_in(data)  # the agent wrote the run's own secret into its log
            clean, n = self.redactor.jsonl(data)
            write_atomic(dest_dir / path.name, clean)
            total += n
        remove_tree(collected if collected.is_dir() else collected.parent)
        return total

    def after_stage(self, st: StageResult) -> Stop | None:
        """Checks, capture and checkpoint after a stage; a ``Stop`` ends the attempt."""
        bad = self.integrity(f"after:{st.stage}#{st.attempt}")
        if bad:
            return Stop("invalid", f"integrity violated after {st.stage}: {', '.join(bad)}", grade=False)
        res, report = st.proc, st.report
        if st.stop is not None and st.proc.could_not_start:
            return st.stop
        if res.could_not_start:
            return Stop("infra_error", f"agent could not start: {res.error}", grade=False)
        if st.stop is not None:
            return st.stop
        size_stop = self.check_size()
        if size_stop:
            return size_stop
        try:
            self.current = self.git.capture(self.ws, self.prepared_tree or "", excludes=self.box.excludes,
                                            timeout=max(self.left(), 0.01))
        except GitError as exc:
            return self.runner_work_failed("capturing the workspace", exc)
        if res.timed_out:
            return self.time_exhausted(f"time budget of {self.manifest.timeout_seconds:g}s exhausted in {st.stage}")
        # A harness's own account of an API failure counts even when it exits 0 (Claude
        # prints ``is_error`` results with exit 0 on some versions).
        if report.infra_error and (not res.ok or st.harness is not None):
            return Stop("infra_error",
                        f"agent reported an infrastructure failure: {report.message or report.status}",
                        grade=False)
        if self.cost_exceeded():
            return Stop("budget_exhausted", f"known spend above max_cost_usd={self.manifest.max_cost_usd:g}")
        if report.budget_hit:
            return Stop("budget_exhausted", f"agent stopped at its own limit in {st.stage} "
                                            f"({report.status}{': ' + report.message if report.message else ''})",
                        unless_accepted=True)
        if res.ok and st.stage in ("build", "qa"):
            previous = self.checkpoint_tree or self.prepared_tree or ""
            sha = self.git.commit(self.current.tree, self.checkpoint_sha,
                                  f"trialhouse checkpoint: {st.stage} (attempt {st.attempt})")
            self.emit(Checkpoint, attempt=st.attempt, stage=st.stage, sha=sha,
                      files_changed=self.git.changed_paths(previous, self.current.tree),
                      tree=self.current.tree)
            self.save_patch(previous, self.current.tree, self.dir / "checkpoints" / f"a{st.attempt}-{st.stage}.patch")
            self.checkpoint_sha, self.checkpoint_tree = sha, self.current.tree
        return None

    def save_patch(self, old: str, new: str, dest: Path) -> PatchInfo | None:
        """A bounded, redacted diff between two captured trees, written into place."""
        tmp = self.dir / ".runner" / f"{dest.name}.tmp"
        try:
            info = self.git.diff_to_file(old, new, tmp, timeout=max(self.left(), 5.0))
        except GitError:
            return None
        data, _cut = read_capped(tmp, info.bytes + 1)
        text, hidden = self.redactor.text((data or b"").decode("utf-8", errors="surrogateescape"))
        if hidden:
            text = (f"# trialhouse: {hidden} secret(s) redacted from this patch; those lines no "
                    "longer apply as they were written\n") + text
            self.redactions += hidden
        write_atomic(dest, text.encode("utf-8", errors="surrogateescape"))
        tmp.unlink(missing_ok=True)
        return info

    def check_size(self) -> Stop | None:
        used = tree_size(self.ws, self.home, self.tmp)
        cap = self.box.max_workspace_bytes
        if used <= cap:
            return None
        self.emit(Budget, type="workspace", status="exceeded", limit=round(cap / 2**20, 3),
                  used=round(used / 2**20, 3))
        return Stop("budget_exhausted", f"workspace grew to {used / 2**20:.0f} MB, over "
                                        f"max_workspace_mb={cap / 2**20:g}", grade=False)

    def runner_work_failed(self, what: str, exc: GitError) -> Stop:
        if self.left() <= 0:
            return self.time_exhausted(f"time budget exhausted while {what}", grade=False)
        return Stop("infra_error", f"{what} failed: {exc}", grade=False)

    def time_exhausted(self, reason: str, grade: bool = True) -> Stop:
        """Every stop on the time budget is recorded as a Budget event, wherever the clock ran out."""
        self.emit(Budget, type="time", status="exceeded", limit=self.manifest.timeout_seconds,
                  used=round(time.monotonic() - self.start, 3))
        return Stop("budget_exhausted", reason, grade=grade)

    # -- grading ----------------------------------------------------------------
    def grade(self, attempt: int) -> tuple[list[GradeResult], list[str]]:
        assert self.current is not None
        if self.grading is None:  # one per trial: its copies serve every attempt while intact
            self.grading = GradingContext(self.box.backend, self.spec.snapshot, self.git,
                                          self.dir / ".runner" / "grade", network=self.box.network,
                                          read_only=self.box.read_only, redactor=self.redactor)
        run = grade_tree(self.grading, list(self.spec.case.criteria), self.current.tree,
                         overlay=self.ignored_tree, log_dir=self.dir / "grading" / f"a{attempt}",
                         deadline_s=max(self.left(), 0.01))
        self.verification_s += sum(r.duration_s for r in run.results)
        return run.results, run.violations

    def emit_gradings(self, attempt: int, results: list[GradeResult], final: bool) -> None:
        for r in results:
            self.emit(Grading, attempt=attempt, final=final, criterion_id=r.criterion_id,
                      layer=r.layer, exit_code=r.exit_code, signal=r.signal, timed_out=r.timed_out,
                      verdict=r.verdict, duration_s=r.duration_s,
                      baseline=self.spec.baseline.get(r.criterion_id), tree=r.tree,
                      success_token=r.success_token, token_ok=r.token_ok, note=r.note)

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
                            scratch=self.dir / ".runner" / "judge")
        return judge_trial(self.box.judges, criteria, te, self.emit)

    def retry_findings(self, stage_findings: list[str], results: list[GradeResult]) -> list[str]:
        """Concrete findings for the next attempt: review findings + failed criteria."""
        out = list(stage_findings)
        crit = {c.id: c for c in self.spec.case.criteria}
        for r in results:
            if r.verdict == "passed":
                continue
            desc = crit[r.criterion_id].description or "(no description)"
            text = f"criterion {r.criterion_id} ({r.layer}) did not pass: {desc}"
            if self.manifest.reveal_grader_output and r.output_path:
                data, _cut = read_capped(Path(r.output_path), GRADER_TAIL * 64)
                if data is not None:
                    text += f"\ngrader output:\n{data.decode('utf-8', 'replace')[-GRADER_TAIL:]}"
            out.append(text)
        return out

    # -- the whole trial --------------------------------------------------------
    def prepare(self) -> Stop | None:
        for sub in (self.home, self.tmp):
            sub.mkdir(parents=True, exist_ok=True)
        try:
            create_workspace(self.box.store, self.spec.initial_commit, self.ws)
            initial_tree = self.box.store.tree_of(self.spec.initial_commit)
            self.git.remember_checkout(self.ws, initial_tree)
        except (GitError, OSError) as exc:
            return Stop("infra_error", f"could not create the workspace: {exc}")
        for argv in self.manifest.prepare_commands:
            logs = self.dir / "logs"
            logs.mkdir(exist_ok=True)
            req = sandbox.Request(argv=list(argv), cwd=self.ws, env=ordinary_env({"HOME": str(self.home)}),
                                  read_only=[*self.box.read_only, *argv_paths(list(argv))],
                                  read_write=[self.ws, self.home], tmp=self.tmp,
                                  network=self.box.network)
            res = sandbox.run(self.box.backend, req, timeout=max(self.left(), 0.001),
                              stdout_path=logs / "prepare.stdout", stderr_path=logs / "prepare.stderr")
            self.emit(PrepareFinished, command=list(argv), exit_code=res.exit_code,
                      timed_out=res.timed_out, duration_s=round(res.duration_s, 3))
            if not res.ok:
                why = "timed out" if res.timed_out else (
                    f"could not start ({res.error})" if res.could_not_start else
                    f"exited {res.exit_code if res.exit_code is not None else 'by signal ' + str(res.signal)}")
                return Stop("infra_error", f"prepare command {argv[0]} {why}")
        try:
            cap = self.git.capture(self.ws, initial_tree, excludes=self.box.excludes,
                                   timeout=max(self.left(), 0.01))
            self.prepared_tree = cap.tree
            if self.manifest.prepare_commands:
                ignored = self.git.capture(self.ws, initial_tree, excludes=self.box.excludes,
                                           ignored_only=True, timeout=max(self.left(), 0.01))
                self.ignored_tree = ignored.tree if ignored.files else None
        except GitError as exc:
            return self.runner_work_failed("capturing the prepared workspace", exc)
        self.current = cap
        self.emit(WorkspacePrepared, initial_tree=initial_tree, prepared_tree=cap.tree,
                  ignored_tree=self.ignored_tree, files=cap.files, bytes=cap.bytes)
        return None

    def run(self) -> TrialOutcome:
        spec = self.spec
        self.emit(TrialStarted, case_id=spec.case.id, variant=spec.variant.id,
                  config_id=spec.config_id, repetition=spec.repetition, seed=spec.seed,
                  workspace=str(self.ws), order=spec.order, case_fingerprint=spec.case_fingerprint)
        early = self.prepare()
        self.setup_s = time.monotonic() - self.start
        outcome, reason = (early.outcome, early.reason) if early else ("", "")
        attempts = 0
        findings: list[str] = []
        while not early and attempts < self.manifest.max_attempts:
            attempts += 1
            attempt = attempts
            self.emit(AttemptStarted, attempt=attempt, findings=findings)
            stop: Stop | None = None
            stage_findings: list[str] = []
            for stage in self.manifest.stages:
                _check_stop(spec)
                if self.left() <= 0:
                    stop = self.time_exhausted("time budget exhausted before " + stage)
                    break
                st = self.run_stage(attempt, stage, findings)
                _check_stop(spec)
                stage_findings += st.findings
                stop = self.after_stage(st)
                if stop or not st.proc.ok:
                    break  # a failed stage: grade what is there
            if stop and not stop.grade:
                outcome, reason = stop.outcome, stop.reason
                self.emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=[])
                break
            _check_stop(spec)
            try:
                results, violations = self.grade(attempt)
            except GitError as exc:
                failed = self.runner_work_failed("preparing the grading copy", exc)
                outcome, reason = failed.outcome, failed.reason
                self.emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=[])
                break
            bad = self.integrity("after_grading") + violations
            if bad:
                outcome, reason = "invalid", f"integrity violated during grading: {', '.join(bad)}"
            elif stop:
                graded = grading_outcome(results, spec.baseline)
                accepted = stop.unless_accepted and graded[0] == "accepted"
                outcome, reason = graded if accepted else (stop.outcome, stop.reason)
            else:
                outcome, reason = grading_outcome(results, spec.baseline)
            final = (outcome in ("accepted", "invalid", "infra_error", "budget_exhausted")
                     or attempt >= self.manifest.max_attempts or self.left() <= 0)
            self.last_results = results
            self.emit_gradings(attempt, results, final)
            if final and outcome not in ("invalid", "infra_error"):
                bad = self.judge(attempt, results)  # advisory: the outcome is already decided
                if bad:
                    outcome, reason = "invalid", f"integrity violated while judging: {', '.join(bad)}"
            next_findings = [] if final else self.retry_findings(stage_findings, results)
            self.emit(AttemptFinished, attempt=attempt, outcome=outcome, findings=next_findings)
            if final:
                break
            findings = next_findings
        return self.finish(outcome, reason, attempts)

    def cost_exceeded(self) -> bool:
        if self.manifest.max_cost_usd is None:
            return False
        spent = _known_cost(self.stages)
        if spent > self.manifest.max_cost_usd:
            self.cost_status = "exceeded"
            self.emit(Budget, type="cost", status="exceeded", limit=self.manifest.max_cost_usd, used=spent)
            return True
        if any(s.usage.cost_usd is None for s in self.stages) and self.cost_status != "unknown":
            self.cost_status = "unknown"
            self.emit(Budget, type="cost", status="unknown", limit=self.manifest.max_cost_usd, used=None)
        return False

    def patch_paths(self) -> list[str] | None:
        if self.current is None or self.prepared_tree is None:
            return None
        try:
            return self.git.changed_names(self.prepared_tree, self.current.tree)[:PATCH_PATHS]
        except GitError:
            return None

    def write_patch(self) -> int:
        """``changes.patch`` against the prepared tree, and the patch flags; returns flag count."""
        if self.current is None or self.prepared_tree is None or self.evidence_problems():
            return 0
        self.patch = self.save_patch(self.prepared_tree, self.current.tree, self.dir / "changes.patch")
        if self.patch is None:
            return 0
        data, _cut = read_capped(self.dir / "changes.patch", 2 * self.patch.bytes + 4096)
        return self.flag((data or b"").decode("utf-8", errors="replace"))

    def keep_workspace(self) -> None:
        """What stays of the workspace: its files, redacted; not the agent's ``.git``, not
        the runner's private git (both hold content compressed, where no redaction sees).
        Called only when the evidence directories were found intact."""
        if os.path.islink(self.ws) or not self.ws.is_dir():
            return
        pristine: dict[str, str] = {}
        for tree in (self.prepared_tree, self.ignored_tree):
            if tree:
                pristine.update({rel: sha for _m, sha, rel in self.git.entries(tree)})
        removed: list[str] = []
        for path in _files(self.ws):
            rel = path.relative_to(self.ws).as_posix()
            cached = self.git.cached(rel, path)
            if cached is not None and pristine.get(rel) == cached:
                continue  # the operator's content, unchanged since the checkout
            size = path.lstat().st_size
            if size > KEPT_FILE_LIMIT:  # not read back whole (nor redacted) by the runner
                path.unlink()
                removed.append(f"{rel}: {size} bytes")
                continue
            self.redactions += self.redactor.workspace_file(path)
        if removed:
            write_atomic(self.dir / "workspace-removed.txt",
                         ("Files the agent left that were too large to keep (over "
                          f"{KEPT_FILE_LIMIT} bytes):\n" + "".join(f"{r}\n" for r in removed)).encode())
        self.box.store.discard(self.ws / ".git")
        self.box.store.discard(self.dir / ".runner")

    def finish(self, outcome: str, reason: str, attempts: int) -> TrialOutcome:
        spec = self.spec
        intact = not self.evidence_problems()
        flags = self.write_patch() if intact else 0
        patch_paths = self.patch_paths() if intact else None  # before the runner's git dir goes
        if intact:
            self.box.store.discard(self.dir / ".sandbox")
            self.keep_workspace()
        if self.patch is not None and self.patch.summarised:
            reason += f" (changes.patch summarises {len(self.patch.summarised)} large file(s))"
        layers, _ = _layers(self.last_results, spec.baseline)
        if not self.last_results:
            layers = {k: "none" for k in layers}
        usage = _sum_usage(self.stages)
        wall = time.monotonic() - self.start
        line = summary_line(spec.case.id, spec.variant.id, spec.repetition, outcome, layers,
                            usage.cost_usd, wall, flags)
        self.emit(
            TrialFinished, case_id=spec.case.id, variant=spec.variant.id, config_id=spec.config_id,
            repetition=spec.repetition, outcome=outcome, reason=reason, attempts=attempts,
            duration_s=round(wall, 3), setup_s=round(self.setup_s or 0.0, 3),
            agent_s=round(sum(s.duration_s for s in self.stages), 3),
            verification_s=round(self.verification_s, 3), usage=usage,
            cost_budget_status=self.cost_status, layers=layers, flags=flags,
            simulated=spec.variant.agent.kind == "simulated", line=line,
            final_tree=self.current.tree if self.current else None,
            patch_truncated=bool(self.patch and self.patch.truncated),
            case_fingerprint=spec.case_fingerprint, scored=spec.scored, redactions=self.redactions,
            secrets_leaked=self.leaked,
            gateway_usage=sum_gateway([s.gateway for s in self.stages]), patch_paths=patch_paths,
        )
        return TrialOutcome(spec.trial_id, outcome, reason, line, round(wall, 3), usage, flags, attempts)

    def flag(self, diff: str) -> int:
        from runner.flags import inspect_patch

        findings = inspect_patch(diff, self.spec.case.allowed_paths)
        for f in findings:
            self.emit(Flag, kind=f.kind, path=f.path, detail=f.detail)
        return len(findings)


def _files(root: Path) -> list[Path]:
    """Regular files under ``root``, never following a symlink, skipping ``.git``."""
    out: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not (d == root and entry.name == ".git"):
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                out.append(Path(entry.path))
    return out


GRADER_TAIL = 2000
"""Characters of grader output handed to a retry when ``reveal_grader_output`` is set."""


def run_trial(spec: TrialSpec, emit: Emit) -> TrialOutcome:
    """Run one trial in a fresh directory; raises ``TrialInterrupted`` when stopping."""
    remove_tree(spec.trial_dir)
    spec.trial_dir.mkdir(parents=True)
    return _Trial(spec, emit).run()
