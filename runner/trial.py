"""One trial as a self-contained unit: spec in, events (via ``emit``) and evidence out.

A trial owns its directory ``<run_dir>/trials/<trial_id>/`` and nothing else; it never
writes ``events.jsonl`` itself. That keeps it runnable unchanged on another engine
(a thread pool today, a distributed worker later).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner import events as ev
from runner.agents.invoke import StageContext, build_invocation
from runner.eventlog import Emit
from runner.grading import GradeResult, grade
from runner.manifest import Case, Manifest, Variant
from runner.paths import Snapshot, sha256_bytes
from runner.procs import ordinary_env, run_bounded
from runner.prompts import build_prompt
from runner.workspace import WorkspaceError, changes_patch, checkpoint, create_workspace, is_intact

STAGE_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout and of stderr kept per stage."""


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
    repository: Path
    initial_commit: str
    snapshot: Snapshot
    trial_dir: Path
    instruction_texts: dict[str, str] = field(default_factory=dict)
    baseline: dict[str, str] = field(default_factory=dict)
    """Criterion id → verdict on the initial commit (negative control)."""
    stop: threading.Event | None = None


@dataclass
class TrialOutcome:
    trial_id: str
    outcome: str
    reason: str
    line: str
    duration_s: float
    usage: ev.Usage
    flags: int = 0
    attempts: int = 0


@dataclass
class _Stage:
    usage: ev.Usage
    duration_s: float


def _check_stop(spec: TrialSpec) -> None:
    if spec.stop is not None and spec.stop.is_set():
        raise TrialInterrupted(spec.trial_id)


def _sum_usage(stages: list[_Stage]) -> ev.Usage:
    """Trial totals; a field stays None when any stage left it unreported."""
    if not stages:
        return ev.Usage()
    totals: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "cost_usd", "steps"):
        vals = [getattr(s.usage, name) for s in stages]
        totals[name] = None if any(v is None for v in vals) else sum(vals)
    firsts = [s.usage.time_to_first_edit_s for s in stages if s.usage.time_to_first_edit_s is not None]
    totals["time_to_first_edit_s"] = firsts[0] if firsts else None
    sources = sorted({s.usage.source for s in stages if s.usage.source})
    totals["source"] = "+".join(sources) or None
    return ev.Usage(**totals)


def _known_cost(stages: list[_Stage]) -> float:
    return sum(s.usage.cost_usd for s in stages if s.usage.cost_usd is not None)


def _read_verdict(path: Path) -> tuple[str | None, list[str]]:
    """What a stage claimed in its verdict file (recorded, never a grade)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None, []
    if not isinstance(data, dict):
        return None, []
    status = data.get("status")
    findings = data.get("findings")
    findings = [str(f)[:2000] for f in findings[:50]] if isinstance(findings, list) else []
    return (str(status)[:100] if status is not None else None), findings


def _secrets(variant: Variant) -> list[str]:
    names = set(variant.agent.secret_env) | set(variant.agent.pass_env)
    return [os.environ[n] for n in sorted(names) if os.environ.get(n)]


def _store_redacted(raw: Path, dest: Path, secrets: list[str]) -> int:
    """Copy ``raw`` to ``dest`` with secrets and token-like strings redacted."""
    from runner.redact import redact

    text = raw.read_bytes().decode("utf-8", errors="replace") if raw.exists() else ""
    clean, count = redact(text, secrets)
    dest.write_text(clean, encoding="utf-8")
    raw.unlink(missing_ok=True)
    return count


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


class _Trial:
    """The mutable state of one running trial (kept private; ``run_trial`` is the API)."""

    def __init__(self, spec: TrialSpec, emit: Emit) -> None:
        self.spec = spec
        self.m = spec.manifest
        self.tid = spec.trial_id
        self._emit = emit
        self.start = time.monotonic()
        self.deadline = self.start + self.m.timeout_seconds
        self.ws = spec.trial_dir / "workspace"
        self.stages: list[_Stage] = []
        self.verification_s = 0.0
        self.setup_s: float | None = None
        self.cost_status = "unlimited" if self.m.max_cost_usd is None else "within"
        self.last_results: list[GradeResult] = []

    def emit(self, cls: type[ev._Event], **fields: Any) -> None:
        self._emit(cls, trial_id=self.tid, **fields)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    # -- integrity --------------------------------------------------------------
    def integrity(self, phase: str) -> list[str]:
        bad = [f"inputs/{rel}" for rel in self.spec.snapshot.verify()]
        if not is_intact(self.ws):
            bad.append("workspace (missing or no longer a git repository)")
        self.emit(ev.IntegrityCheck, phase=phase, ok=not bad, mismatches=bad)
        return bad

    # -- stages -----------------------------------------------------------------
    def run_stage(self, attempt: int, stage: str, findings: list[str]) -> dict[str, Any]:
        spec, d = self.spec, self.spec.trial_dir
        tag = f"a{attempt}-{stage}"
        for sub in ("prompts", "logs", "agent-events", "verdicts", "ctx"):
            (d / sub).mkdir(exist_ok=True)
        prompt = build_prompt(self.m, spec.case, spec.variant, stage, attempt, findings,
                              spec.instruction_texts, spec.initial_commit)
        prompt_file = d / "prompts" / f"{tag}.md"
        prompt_file.write_text(prompt, encoding="utf-8")
        events_file = d / "agent-events" / f"{tag}.jsonl"
        events_file.touch()
        verdict_file = d / "verdicts" / f"{tag}.json"
        time_left = max(self.left(), 0.0)
        self.emit(ev.StageStarted, attempt=attempt, stage=stage, time_left_s=round(time_left, 3),
                  prompt_sha256=sha256_bytes(prompt.encode()))
        ctx = StageContext(
            kind=spec.variant.agent.kind, stage=stage, attempt=attempt, case_id=spec.case.id,
            repetition=spec.repetition, variant_id=spec.variant.id, model=spec.variant.model,
            seed=spec.seed, workspace=str(self.ws.resolve()),
            inputs_dir=str(spec.snapshot.root.resolve()),
            reference_patch=str(spec.snapshot.path(spec.case.reference_patch).resolve()),
            patches_dir=None, candidates_dir=None, skill=None, price_per_mtok=None,
            findings=list(findings), prompt_file=str(prompt_file.resolve()),
            events_file=str(events_file.resolve()), verdict_file=str(verdict_file.resolve()),
            labels=spec.case.labels.model_dump(exclude_none=True),
            reasoning_effort=spec.variant.reasoning_effort,
        )
        argv, env = build_invocation(spec.variant, ctx, spec.manifest_dir, d / "ctx" / f"{tag}.json")
        raw_out, raw_err = d / "logs" / f"{tag}.stdout.raw", d / "logs" / f"{tag}.stderr.raw"
        cwd = self.ws if self.ws.is_dir() else d
        res = run_bounded(argv, cwd=cwd, env=env, timeout=time_left, stdout_path=raw_out,
                          stderr_path=raw_err, limit=STAGE_OUTPUT_LIMIT)
        from runner.agents.usage import parse_agent_output

        report = parse_agent_output(spec.variant.agent.usage_format, raw_out, events_file)
        status, vfindings = _read_verdict(verdict_file)
        secrets = _secrets(spec.variant)
        out_path, err_path = d / "logs" / f"{tag}.stdout", d / "logs" / f"{tag}.stderr"
        redactions = _store_redacted(raw_out, out_path, secrets) + _store_redacted(raw_err, err_path, secrets)
        self.emit(
            ev.StageFinished, attempt=attempt, stage=stage, exit_code=res.exit_code,
            signal=res.signal, timed_out=res.timed_out, could_not_start=res.could_not_start,
            duration_s=round(res.duration_s, 3), usage=report.usage, verdict_status=status,
            verdict_findings=vfindings, stdout_path=str(out_path.relative_to(d)),
            stderr_path=str(err_path.relative_to(d)),
            stdout_truncated=res.stdout_truncated or res.stderr_truncated, redactions=redactions,
        )
        self.stages.append(_Stage(report.usage, res.duration_s))
        return {"res": res, "report": report, "status": status, "findings": vfindings}

    # -- grading ----------------------------------------------------------------
    def grade_all(self, attempt: int) -> list[GradeResult]:
        log_dir = self.spec.trial_dir / "grading" / f"a{attempt}"
        results = []
        for crit in self.spec.case.criteria:
            if crit.command is None:
                continue  # judges are supplementary and never invoked by the runner core
            results.append(grade(crit, workspace=self.ws, inputs_dir=self.spec.snapshot.root,
                                 log_dir=log_dir))
        self.verification_s += sum(r.duration_s for r in results)
        return results

    def emit_gradings(self, attempt: int, results: list[GradeResult], final: bool) -> None:
        for r in results:
            self.emit(ev.Grading, attempt=attempt, final=final, criterion_id=r.criterion_id,
                      layer=r.layer, exit_code=r.exit_code, signal=r.signal, timed_out=r.timed_out,
                      verdict=r.verdict, duration_s=r.duration_s,
                      baseline=self.spec.baseline.get(r.criterion_id))

    def retry_findings(self, stage_findings: list[str], results: list[GradeResult]) -> list[str]:
        """Concrete findings for the next attempt: review findings + failed criteria."""
        out = list(stage_findings)
        crit = {c.id: c for c in self.spec.case.criteria}
        for r in results:
            if r.verdict == "passed":
                continue
            desc = crit[r.criterion_id].description or "(no description)"
            text = f"criterion {r.criterion_id} ({r.layer}) did not pass: {desc}"
            if self.m.reveal_grader_output and r.output_path:
                try:
                    tail = Path(r.output_path).read_text(errors="replace")[-2000:]
                    text += f"\ngrader output:\n{tail}"
                except OSError:
                    pass
            out.append(text)
        return out

    # -- the whole trial --------------------------------------------------------
    def prepare(self) -> tuple[str, str] | None:
        try:
            create_workspace(self.spec.repository, self.spec.initial_commit, self.ws)
        except (WorkspaceError, OSError) as exc:
            return "infra_error", f"could not create the workspace: {exc}"
        for argv in self.m.prepare_commands:
            logs = self.spec.trial_dir / "logs"
            logs.mkdir(exist_ok=True)
            res = run_bounded(list(argv), cwd=self.ws, env=ordinary_env(), timeout=max(self.left(), 0.001),
                              stdout_path=logs / "prepare.stdout", stderr_path=logs / "prepare.stderr")
            self.emit(ev.PrepareFinished, command=list(argv), exit_code=res.exit_code,
                      timed_out=res.timed_out, duration_s=round(res.duration_s, 3))
            if not res.ok:
                why = "timed out" if res.timed_out else (
                    "could not start" if res.could_not_start else f"exited {res.exit_code if res.exit_code is not None else 'by signal ' + str(res.signal)}")
                return "infra_error", f"prepare command {argv[0]} {why}"
        return None

    def run(self) -> TrialOutcome:
        spec = self.spec
        self.emit(ev.TrialStarted, case_id=spec.case.id, variant=spec.variant.id,
                  config_id=spec.config_id, repetition=spec.repetition, seed=spec.seed,
                  workspace=str(self.ws), order=spec.order)
        early = self.prepare()
        self.setup_s = time.monotonic() - self.start
        outcome, reason, attempts = (early or ("", ""))[0], (early or ("", ""))[1], 0
        findings: list[str] = []
        while not early and attempts < self.m.max_attempts:
            attempts += 1
            attempt = attempts
            self.emit(ev.AttemptStarted, attempt=attempt, findings=findings)
            stop: tuple[str, str] | None = None
            stage_findings: list[str] = []
            for stage in self.m.stages:
                _check_stop(spec)
                if self.left() <= 0:
                    stop = ("budget_exhausted", "time budget exhausted before " + stage)
                    break
                st = self.run_stage(attempt, stage, findings)
                _check_stop(spec)
                res, report = st["res"], st["report"]
                stage_findings += st["findings"]
                bad = self.integrity(f"after:{stage}#{attempt}")
                if bad:
                    stop = ("invalid", f"integrity violated after {stage}: {', '.join(bad)}")
                    break
                if res.could_not_start:
                    stop = ("infra_error", f"agent could not start: {res.error}")
                    break
                if res.timed_out:
                    self.emit(ev.Budget, type="time", status="exceeded",
                              limit=self.m.timeout_seconds, used=round(time.monotonic() - self.start, 3))
                    stop = ("budget_exhausted", f"time budget of {self.m.timeout_seconds:g}s exhausted in {stage}")
                    break
                if report.infra_error and not res.ok:
                    stop = ("infra_error", f"agent reported an infrastructure failure: {report.message or report.status}")
                    break
                if self.cost_exceeded():
                    stop = ("budget_exhausted", f"known spend above max_cost_usd={self.m.max_cost_usd:g}")
                    break
                if not res.ok:
                    break  # the stage failed: grade what is there
                if stage in ("build", "qa"):
                    cp = checkpoint(self.ws, f"trialhouse checkpoint: {stage} (attempt {attempt})")
                    self.emit(ev.Checkpoint, attempt=attempt, stage=stage, sha=cp.sha,
                              files_changed=cp.files_changed)
            if stop and stop[0] in ("invalid", "infra_error"):
                outcome, reason = stop
                self.emit(ev.AttemptFinished, attempt=attempt, outcome=outcome, findings=[])
                break
            _check_stop(spec)
            bad = self.integrity("before_grading")
            if bad:
                outcome, reason = "invalid", f"integrity violated before grading: {', '.join(bad)}"
                self.emit(ev.AttemptFinished, attempt=attempt, outcome=outcome, findings=[])
                break
            results = self.grade_all(attempt)
            bad = self.integrity("after_grading")
            if bad:
                outcome, reason = "invalid", f"integrity violated during grading: {', '.join(bad)}"
            elif stop:
                outcome, reason = stop
            else:
                outcome, reason = grading_outcome(results, spec.baseline)
            final = (outcome in ("accepted", "invalid", "infra_error", "budget_exhausted")
                     or attempt >= self.m.max_attempts or self.left() <= 0)
            self.last_results = results
            self.emit_gradings(attempt, results, final)
            next_findings = [] if final else self.retry_findings(stage_findings, results)
            self.emit(ev.AttemptFinished, attempt=attempt, outcome=outcome, findings=next_findings)
            if final:
                break
            findings = next_findings
        return self.finish(outcome, reason, attempts)

    def cost_exceeded(self) -> bool:
        if self.m.max_cost_usd is None:
            return False
        spent = _known_cost(self.stages)
        if spent > self.m.max_cost_usd:
            self.cost_status = "exceeded"
            self.emit(ev.Budget, type="cost", status="exceeded", limit=self.m.max_cost_usd, used=spent)
            return True
        if any(s.usage.cost_usd is None for s in self.stages) and self.cost_status != "unknown":
            self.cost_status = "unknown"
            self.emit(ev.Budget, type="cost", status="unknown", limit=self.m.max_cost_usd, used=None)
        return False

    def finish(self, outcome: str, reason: str, attempts: int) -> TrialOutcome:
        spec = self.spec
        flags = 0
        if is_intact(self.ws):
            try:
                diff = changes_patch(self.ws, spec.initial_commit)
                (spec.trial_dir / "changes.patch").write_text(diff, encoding="utf-8")
                flags = self.flag(diff)
            except WorkspaceError as exc:
                reason += f" (changes.patch unavailable: {exc})"
        layers, _ = _layers(self.last_results, spec.baseline)
        if not self.last_results:
            layers = {k: "none" for k in layers}
        usage = _sum_usage(self.stages)
        wall = time.monotonic() - self.start
        line = summary_line(spec.case.id, spec.variant.id, spec.repetition, outcome, layers,
                            usage.cost_usd, wall, flags)
        self.emit(
            ev.TrialFinished, case_id=spec.case.id, variant=spec.variant.id, config_id=spec.config_id,
            repetition=spec.repetition, outcome=outcome, reason=reason, attempts=attempts,
            duration_s=round(wall, 3), setup_s=round(self.setup_s or 0.0, 3),
            agent_s=round(sum(s.duration_s for s in self.stages), 3),
            verification_s=round(self.verification_s, 3), usage=usage,
            cost_budget_status=self.cost_status, layers=layers, flags=flags,
            simulated=spec.variant.agent.kind == "simulated", line=line,
        )
        return TrialOutcome(spec.trial_id, outcome, reason, line, round(wall, 3), usage, flags, attempts)

    def flag(self, diff: str) -> int:
        from runner.flags import inspect_patch

        findings = inspect_patch(diff, self.spec.case.allowed_paths)
        for f in findings:
            self.emit(ev.Flag, kind=f.kind, path=f.path, detail=f.detail)
        return len(findings)


def run_trial(spec: TrialSpec, emit: Emit) -> TrialOutcome:
    """Run one trial in a fresh directory; raises ``TrialInterrupted`` when stopping."""
    if spec.trial_dir.exists():
        shutil.rmtree(spec.trial_dir)
    spec.trial_dir.mkdir(parents=True)
    return _Trial(spec, emit).run()
