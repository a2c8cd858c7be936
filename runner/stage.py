"""One stage of one attempt: invoke the agent in its sandbox, capture its usage, store its evidence.

A stage gets the time the trial's budget has left (``TrialBudget.for_agent``), runs the
agent once (through the run's model gateway when the variant uses one), and when every
process of the invocation is gone reads what it left without following a link: the
agent-events file, the verdict file, a harness's trajectory, stdout and stderr, each
bounded and redacted before it is stored (docs/agents.md, "Evidence the runner keeps
per stage"). Its spend goes to the budget; its events go to ``emit``.

Everything here takes ``emit``, the budget and the trial's paths as arguments and never
imports the trial that calls it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.call_events import ModelCall, NetworkConnection, TrajectoryStep
from contract.redact import Redactor
from contract.stage_events import PermissionDenial, StageFinished, StageStarted, Usage
from contract.trial_events import Budget, Flag
from contract.values import as_text
from runner import sandbox
from runner.agents.agent_report import AgentReport
from runner.agents.harness_result import HarnessResult
from runner.agents.harness_stage import (
    HARNESS_STDOUT_LIMIT,
    MAX_STEPS,
    ResolvedHarness,
    collect,
    command_steps,
    gateway_filled,
    gateway_usage,
    read_stage,
    step_fields,
)
from runner.agents.invoke import StageContext, StageDirs, build_request
from runner.agents.usage import parse_agent_output
from runner.budget import StageSpend, TrialBudget, TrialEmit
from runner.evidence import read_capped, write_atomic
from runner.gateway.records import gateway_failure, to_event_fields
from runner.gateway.settings import GatewayConfigError
from runner.manifest import Case, Manifest, Variant
from runner.outcome import Stop
from runner.paths import Snapshot, sha256_bytes
from runner.pristine import remove_tree
from runner.procs import ProcResult
from runner.prompts import build_prompt
from runner.run_store import RunStore
from runner.task_key import task_key
from runner.trial_files import TrialFiles

STAGE_OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout and of stderr kept per stage."""
AGENT_FILE_LIMIT = 4 * 1024 * 1024
"""Bytes of an agent-written events file kept (the rest is dropped with a count)."""
VERDICT_LIMIT = 256 * 1024
HARNESS_STORED_STDOUT = 8 * 1024 * 1024
"""Bytes of a harness's stdout kept (head and tail): Claude's stream-json is its trajectory."""


@dataclass(frozen=True)
class StageSetup:
    """What every stage of one trial shares: the trial's case and variant, the run's containment."""

    trial_id: str
    manifest: Manifest
    case: Case
    variant: Variant
    repetition: int
    seed: int
    initial_commit: str
    instruction_texts: dict[str, str]
    snapshot: Snapshot
    harness: ResolvedHarness | None
    """For the harness kinds: the resolved CLI (settings, version, mounts)."""
    backend: sandbox.Backend
    network: bool
    read_only: tuple[Path, ...]
    redactor: Redactor
    store: RunStore
    gateway: Any = None
    """The run's model gateway when this trial's model calls go through it, else None."""


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
    redactions: int = 0
    """Secrets and token-like strings redacted from what the stage left."""
    leaked: int = 0
    """Occurrences of the run's own secret values the agent put in its output."""


@dataclass(frozen=True)
class _Invocation:
    """A stage's agent run, as far as it got: the process, the gateway's calls, when it began."""

    res: ProcResult
    calls: list[Any]
    measured: Any
    stop: Stop | None
    started: datetime
    harness: Any
    raw_out: Path
    raw_err: Path
    connections: list[Any]


def run_stage(setup: StageSetup, files: TrialFiles, budget: TrialBudget, emit: TrialEmit,
              attempt: int, stage: str, findings: list[str]) -> StageResult:
    """Run ``stage`` of ``attempt`` with the review's and graders' ``findings``."""
    tag = f"a{attempt}-{stage}"
    prompt, hidden = setup.redactor.text(build_prompt(
        setup.manifest, setup.case, setup.variant, stage, attempt, findings,
        setup.instruction_texts, setup.initial_commit))
    write_atomic(files.dir / "prompts" / f"{tag}.md", prompt.encode("utf-8"))
    dirs = StageDirs(files.dir / ".sandbox" / tag, files.home, files.tmp, files.shm)
    dirs.create(prompt)
    time_left = budget.for_agent()
    emit(StageStarted, attempt=attempt, stage=stage, time_left_s=round(time_left, 3),
         prompt_sha256=sha256_bytes(prompt.encode()))
    gw = setup.gateway
    base: str | None = None
    if gw is not None:
        try:
            base = gw.open(trial_id=setup.trial_id, case_id=setup.case.id, variant=setup.variant.id,
                           repetition=setup.repetition, stage=stage, attempt=attempt, workspace=files.ws,
                           task=task_key(prompt, setup.case, setup.store.tree_of(setup.initial_commit),
                                         setup.variant, setup.harness))
        except GatewayConfigError as exc:  # replay without a recording for this trial, or of another task
            why = f"model gateway: {exc}"
            res = ProcResult(None, None, False, True, 0.0, error=why)
            emit(StageFinished, attempt=attempt, stage=stage, could_not_start=True, duration_s=0.0)
            budget.spend(StageSpend(Usage(), 0.0))
            remove_tree(dirs.root)
            return StageResult(stage, attempt, res, AgentReport(), None, [],
                               stop=Stop("infra_error", why, grade=False), redactions=hidden)
    inv = _invoke(setup, files, dirs, tag, stage, attempt, findings, (time_left, budget), base, emit)
    files.special += len(inv.res.special)
    for path in inv.res.special:  # removed before anything of the runner's could open them
        emit(Flag, kind="special_file", path=path,
             detail="a FIFO, socket or device the agent left; removed by the runner, never opened")
    for call in inv.calls:  # the gateway's own records: what crossed the wire, whatever the agent says
        emit(ModelCall, **to_event_fields(call))
    for conn in inv.connections:  # every connection through the gateway's proxy, allowed or not
        emit(NetworkConnection, **conn.model_dump(exclude={"trial_id"}))
    if files.problems():  # not isolated, and it replaced our directories: write nothing
        res = inv.res
        budget.spend(StageSpend(Usage(), res.duration_s, inv.measured))
        emit(StageFinished, attempt=attempt, stage=stage, exit_code=res.exit_code,
             signal=res.signal, timed_out=res.timed_out, could_not_start=res.could_not_start,
             duration_s=round(res.duration_s, 3), gateway_usage=inv.measured)
        return StageResult(stage, attempt, res, AgentReport(), None, [], stop=inv.stop, redactions=hidden)
    return _finish(setup, files, budget, emit, dirs, tag, stage, attempt, inv, hidden)


def _invoke(setup: StageSetup, files: TrialFiles, dirs: StageDirs, tag: str, stage: str, attempt: int,
            findings: list[str], clock: tuple[float, TrialBudget], base: str | None,
            emit: TrialEmit) -> _Invocation:
    """The agent's one sandboxed run, with the gateway's records of its calls; ``clock``:
    the stage's time and the trial's budget (the spend so far goes into the context; its
    finish-by time bounds reclaiming the workspace)."""
    case, variant = setup.case, setup.variant
    time_left, budget = clock
    ctx = StageContext(
        kind=variant.agent.kind, stage=stage, attempt=attempt, case_id=case.id,
        repetition=setup.repetition, variant_id=variant.id, model=variant.model,
        seed=setup.seed, workspace=str(files.ws), reference_patch=None, patches_dir=None,
        candidates_dir=None, skill=None, price_per_mtok=None, findings=list(findings),
        prompt_file=str(dirs.prompt_file), events_file=str(dirs.events_file),
        verdict_file=str(dirs.verdict_file),
        labels=case.labels.model_dump(exclude_none=True),
        reasoning_effort=variant.reasoning_effort,
        max_cost_usd=budget.max_cost_usd, spent_usd=round(budget.known_cost(), 6), sweep=variant.sweep,
        stages=list(setup.manifest.stages),
    )
    gw = setup.gateway
    raw_out, raw_err = files.dir / "logs" / f"{tag}.stdout.raw", files.dir / "logs" / f"{tag}.stderr.raw"
    link = gw.link(setup.trial_id, stage, attempt) if gw is not None and base is not None else None
    try:
        req = build_request(variant, case, ctx, setup.snapshot, dirs, network=setup.network,
                            read_only=list(setup.read_only), harness=setup.harness, base_url=base, link=link)
        started = datetime.now(UTC)
        res = sandbox.run(setup.backend, req.request, timeout=time_left, stdout_path=raw_out,
                          stderr_path=raw_err, reclaim_by=budget.finish_by(),
                          limit=HARNESS_STDOUT_LIMIT if req.harness is not None else STAGE_OUTPUT_LIMIT)
    finally:
        route = gw.close(setup.trial_id, stage, attempt) if gw is not None and base is not None else None
    calls = route.calls if route is not None else []
    measured = gateway_usage(calls) if base is not None else None
    failure = gateway_failure(calls)
    stop = Stop("infra_error", failure, grade=False) if failure else None
    if route is not None and route.breach is not None:  # the agent went over a gateway cap
        b = route.breach
        emit(Budget, type="gateway", status="exceeded", limit=float(b.limit), used=float(b.used))
        stop = Stop("budget_exhausted", b.reason, grade=False)
    return _Invocation(res, calls, measured, stop, started, req.harness, raw_out, raw_err,
                       route.connections if route is not None else [])


def _finish(setup: StageSetup, files: TrialFiles, budget: TrialBudget, emit: TrialEmit, dirs: StageDirs,
            tag: str, stage: str, attempt: int, inv: _Invocation, hidden: int) -> StageResult:
    """Every process of the invocation is gone now: read what it left, never following links."""
    d, redactor = files.dir, setup.redactor
    events_data, events_cut = read_capped(dirs.events_file, AGENT_FILE_LIMIT)
    events_copy = d / "agent-events" / f"{tag}.jsonl"
    clean_events, n = redactor.jsonl(events_data or b"")
    hidden += n
    write_atomic(events_copy, clean_events)
    verdict_data, _ = read_capped(dirs.verdict_file, VERDICT_LIMIT)
    raw_verdict = verdict_data
    if verdict_data is not None:
        verdict_data, n = redactor.jsonl(verdict_data)
        hidden += n
        write_atomic(d / "verdicts" / f"{tag}.json", verdict_data)
    leaked = known_in(redactor, events_data) + known_in(redactor, raw_verdict)
    result: HarnessResult | None = None
    if inv.harness is not None and setup.harness is not None:
        collected = collect(inv.harness, d / ".runner" / f"trajectory-{tag}")
        result, steps = read_stage(setup.harness, inv.harness, collected, stdout=inv.raw_out, stderr=inv.raw_err,
                                   started=inv.started, workspace=files.ws, stage=stage, calls=inv.calls)
        report = result.report
        n, k = keep_trajectory(collected, d / "trajectories" / tag, redactor)
        hidden, leaked = hidden + n, leaked + k
    setup.store.discard(dirs.root)
    if result is None:
        report = parse_agent_output(setup.variant.agent.usage_format, inv.raw_out, events_copy,
                                    stage_started_at=inv.started)
        steps = command_steps(events_copy, inv.calls, started=inv.started, stage=stage)
        report = replace(report, usage=gateway_filled(report.usage, inv.measured, steps))
    if report.usage.cost_usd is not None and report.usage.cost_basis is None:
        report = replace(report, usage=report.usage.model_copy(update={"cost_basis": "reported"}))
    status, vfindings = parse_verdict(verdict_data)
    out_path, err_path = d / "logs" / f"{tag}.stdout", d / "logs" / f"{tag}.stderr"
    stdout_limit = HARNESS_STORED_STDOUT if result is not None else STAGE_OUTPUT_LIMIT
    (n_out, k_out), (n_err, k_err) = (store_redacted(inv.raw_out, out_path, redactor, stdout_limit),
                                      store_redacted(inv.raw_err, err_path, redactor))
    gateway_ids = {c.response_id or c.request_id for c in inv.calls} - {None}
    for step in steps[:MAX_STEPS]:
        emit(TrajectoryStep, attempt=attempt, stage=stage, **step_fields(step, gateway_ids))
    res = inv.res
    emit(
        StageFinished, attempt=attempt, stage=stage, exit_code=res.exit_code,
        signal=res.signal, timed_out=res.timed_out, could_not_start=res.could_not_start,
        duration_s=round(res.duration_s, 3), usage=report.usage, verdict_status=status,
        verdict_findings=vfindings, stdout_path=str(out_path.relative_to(d)),
        stderr_path=str(err_path.relative_to(d)),
        stdout_truncated=res.stdout_truncated or res.stderr_truncated or events_cut,
        redactions=n_out + n_err, gateway_usage=inv.measured, trajectory_steps=min(len(steps), MAX_STEPS),
        **harness_fields(result, len(steps), setup.harness),
    )
    budget.spend(StageSpend(report.usage, res.duration_s, inv.measured))
    return StageResult(stage, attempt, res, report, status, vfindings, harness=result, stop=inv.stop,
                       redactions=hidden + n_out + n_err, leaked=leaked + k_out + k_err)


def harness_fields(result: HarnessResult | None, n_steps: int, harness: ResolvedHarness | None) -> dict[str, Any]:
    """What a harness's own output said beyond usage, for ``stage_finished``."""
    notes = [f"{n_steps - MAX_STEPS} steps after the first {MAX_STEPS} not recorded"] if n_steps > MAX_STEPS else []
    if result is None:
        return {"harness_notes": notes}
    probed = harness.version if harness is not None else None
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


def known_in(redactor: Redactor, data: bytes | None) -> int:
    """Occurrences of the run's own secret values in ``data``."""
    return sum(data.count(s.encode()) for s in redactor.secrets) if data else 0


def keep_trajectory(collected: Path | None, dest_dir: Path, redactor: Redactor) -> tuple[int, int]:
    """Redacted copies of the trajectory files a harness left, as evidence; (redactions, leaked)."""
    if collected is None:
        return 0, 0
    files = sorted(collected.iterdir()) if collected.is_dir() else [collected]
    dest_dir.mkdir(parents=True, exist_ok=True)
    total = leaked = 0
    for path in files:
        if not path.is_file():
            continue
        data = path.read_bytes()
        leaked += known_in(redactor, data)  # the agent wrote the run's own secret into its log
        clean, n = redactor.jsonl(data)
        write_atomic(dest_dir / path.name, clean)
        total += n
    remove_tree(collected if collected.is_dir() else collected.parent)
    return total, leaked


def parse_verdict(data: bytes | None) -> tuple[str | None, list[str]]:
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


def store_redacted(raw: Path, dest: Path, redactor: Redactor, limit: int = STAGE_OUTPUT_LIMIT) -> tuple[int, int]:
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
