"""Opening a run and closing it: the resume check, the input snapshot, the run's containment,
config ids and fingerprints, ``run_started``; at the end ``run_finished`` and ``report.json``
(docs/runner.md). A run directory is new (refused unless empty) or resumed (the same manifest,
its events chain verified, its input snapshot checked). A directory that holds only an
interrupted setup (``SETUP_MARKER``, no ``run_started``) is cleared and set up afresh.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import resource
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from contract.files import engine_version
from contract.redact import Redactor
from contract.run_events import (
    BankInfo,
    CaseInfo,
    ExecutorInfo,
    IsolationInfo,
    RotationInfo,
    RunFinished,
    RunStarted,
    VariantInfo,
)
from runner import eventlog
from runner.bank import draw
from runner.containment import Containment, build_containment, run_secrets
from runner.errors import RunnerError
from runner.eventlog import EventLog, read_events, read_verified, repair_tail
from runner.fingerprint import GRADING_SEMANTICS, case_fingerprint
from runner.git import GitError, git_version
from runner.ids import new_run_id, trial_id
from runner.manifest import Case, Manifest, Variant, budget_fields, config_id
from runner.paths import Snapshot, input_refs, sha256_file, snapshot_inputs
from runner.pristine import remove_tree
from runner.prompts import instruction_texts
from runner.report import write_report
from runner.rotation import rotate
from runner.tiers import criterion_infos
from runner.validate import load_valid_manifest, protected_paths, repo_path

SETUP_MARKER = ".trialhouse-setup"
"""Written first into a new run directory; with no ``run_started`` line yet, the
directory holds an interrupted setup that a new run (or ``--resume``) may clear."""


@dataclass
class RunSetup:
    """An open run: its manifest, directory, event log and what every trial shares."""

    manifest: Manifest
    manifest_path: Path
    manifest_dir: Path
    run_dir: Path
    run_id: str
    log: EventLog
    snapshot: Snapshot
    texts: dict[str, dict[str, str]]
    config_ids: dict[str, str]
    prior: list[Any]
    containment: Containment
    fingerprints: dict[str, str]
    """Case id → evaluator fingerprint (runner.fingerprint)."""
    redactor: Redactor
    refused: list[tuple[int, str]] = field(default_factory=list)
    """Lines of a resumed events.jsonl its hash chain refused (reported, never data)."""
    harnesses: dict[str, Any] = field(default_factory=dict)
    """Variant id → ``ResolvedHarness`` for the harness kinds."""
    rotation: RotationInfo | None = None  # the hidden pools' draw (runner.rotation): manifest has it
    bank: BankInfo | None = None  # the behaviour bank's draw (runner.bank): a case draws from it


@dataclass(frozen=True)
class RegradeOf:
    """What a regrade run takes from the run it grades again (``runner.regrade``): its id,
    its first ``run_started`` (variants, budgets, stages, repetitions) and the cases it
    grades. A regrade runs no agent: no harness is resolved, no gateway or judge started."""

    run_id: str
    head: RunStarted
    case_ids: tuple[str, ...]
    tier: Literal["scheduled"] | None = None  # run --tier scheduled: every tier graded (runner.tiers)


@dataclass
class _Start:
    """Where a run's log starts: a new run's first line, or a resumed run's next one."""

    run_id: str
    snapshot: Snapshot
    prior: list[Any] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)
    last_line: bytes | None = None
    lines: int = 0
    next_seq: int = 0


def case_source(manifest: Manifest, base: Path, case: Case) -> tuple[Path, str]:
    """(repository, initial commit) a case starts from: its own, else the manifest's."""
    return (repo_path(base, case.repository or manifest.repository),
            case.initial_commit or manifest.initial_commit)


def interrupted_setup(run_dir: Path) -> bool:
    """The directory holds only what an interrupted setup of ours left behind."""
    if not (run_dir / SETUP_MARKER).exists():
        return False
    events = run_dir / "events.jsonl"
    if not events.exists():
        return True
    verified = read_verified(events)
    return not any(isinstance(e, RunStarted) for e in verified.events)


def resolve_harnesses(manifest: Manifest, base: Path, protected: tuple[Path, ...]) -> dict[str, Any]:
    """Variant id → ``ResolvedHarness`` for every harness variant; ``RunnerError`` naming the
    first problem (``trialhouse validate`` lists them all)."""
    from runner.agents.harness_stage import resolve

    out: dict[str, Any] = {}
    for i, v in enumerate(manifest.variants):
        if not v.agent.is_harness:
            continue
        found = resolve(v, base, uses_gateway=manifest.uses_gateway(v),
                        isolated=manifest.isolation.backend == "bubblewrap", protected=protected)
        if found.problems:
            where, why = found.problems[0]
            raise RunnerError(f"variants[{i}].{where}: {why}")
        out[v.id] = found.harness
    return out


def variant_record(manifest: Manifest, v: Variant, harness: Any, gateway: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(recorded settings, what else feeds ``config_id``) of a variant.

    A harness variant records its effective ``HarnessSettings`` (defaults included, so a
    changed trialhouse default is a new configuration) under ``settings.harness``. A
    variant answered by a scripted or replayed gateway records which script or recording
    (its hash): the "model" is then that file, and a different one is a different
    configuration. Forward and record modes add nothing: the same real model answers.
    """
    settings = dict(v.settings)
    extra: dict[str, Any] = {}
    if harness is not None:
        settings["harness"] = extra["harness"] = harness.settings.settings_record()
    mode = manifest.gateway.mode if manifest.gateway is not None else None
    if gateway is not None and manifest.uses_gateway(v) and mode in ("scripted", "replay"):
        info = gateway.info()
        source = info.script_sha256.get(v.id) or info.script_sha256.get("*") if mode == "scripted" \
            else gateway.recordings_sha256
        settings["gateway"] = extra["gateway"] = {"mode": mode, "sha256": source}
    return settings, extra


def raise_fd_limit() -> tuple[int, int]:
    """Raise the runner's soft ``RLIMIT_NOFILE`` to its hard limit (at start): the runner's own
    descriptors are budgeted apart from the agents', whose connections to the gateway are
    capped per trial (``runner.gateway.links``). Returns (soft, hard) as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            return soft, hard
        soft = target
    return soft, hard


def _sources(manifest: Manifest, base: Path) -> list[tuple[Path, str]]:
    pairs = {(repo_path(base, manifest.repository), manifest.initial_commit)}
    pairs |= {case_source(manifest, base, c) for c in manifest.cases}
    return sorted(pairs)


def _resume_snapshot(run_dir: Path, base: Path, manifest: Manifest, hashes: dict[str, str]) -> Snapshot:
    """The snapshot of a run being resumed: the run's copy, else the manifest's files."""
    snap, bad = Snapshot.load(run_dir / "inputs", hashes)
    if not bad:
        return snap
    fresh = snapshot_inputs(base, input_refs(manifest.model_dump(mode="json")), run_dir / ".runner" / "inputs-check")
    remove_tree(run_dir / ".runner" / "inputs-check")
    if fresh.hashes != hashes:
        changed = sorted(k for k in set(hashes) | set(fresh.hashes) if hashes.get(k) != fresh.hashes.get(k))
        raise RunnerError(
            f"{run_dir / 'inputs'}: the run's input snapshot was changed ({', '.join(bad[:3])}) and "
            f"the manifest's own input files differ from the recorded hashes too "
            f"({', '.join(changed[:3])}); this run cannot be resumed — start a new one")
    remove_tree(run_dir / "inputs")
    fresh.root = run_dir / "inputs"
    fresh.materialise(fresh.root)
    return fresh


def _resumed(run_dir: Path, manifest_path: Path, manifest: Manifest, base: Path, manifest_sha: str) -> _Start:
    """Continue the run in ``run_dir``: same manifest, its chain read, its snapshot checked."""
    events_path = run_dir / "events.jsonl"
    if not events_path.exists():
        raise RunnerError(f"{run_dir}: nothing to resume (no events.jsonl); start a run without --resume")
    repair_tail(events_path)
    verified = read_verified(events_path)
    prior = verified.events
    starts = [e for e in prior if isinstance(e, RunStarted)]
    if not starts:
        raise RunnerError(f"{events_path}: no run_started event; cannot resume this directory")
    if starts[0].manifest_sha256 != manifest_sha:
        raise RunnerError(f"{manifest_path}: the manifest changed since the run started; resume needs the same manifest")
    if starts[0].validation_only:
        raise RunnerError(f"{run_dir}: a validation-only run cannot be resumed")
    eventlog.check_evidence(run_dir, verified)
    snapshot = _resume_snapshot(run_dir, base, manifest, dict(starts[0].input_hashes))
    return _Start(starts[0].run_id, snapshot, prior, list(verified.refused), verified.last_line,
                  verified.lines, max(e.seq for e in prior) + 1)


def _fresh(run_dir: Path, manifest: Manifest, base: Path) -> _Start:
    """A new run in the empty (or new) ``run_dir``, its inputs snapshotted first."""
    if run_dir.exists() and interrupted_setup(run_dir):
        remove_tree(run_dir)
    if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
        raise RunnerError(
            f"{run_dir}: output directory exists and is not empty; choose a new --output "
            "(or pass --resume to continue an interrupted run)"
        )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / SETUP_MARKER).write_text("a run is being set up here\n")
    run_id = new_run_id()
    staging = run_dir / ".runner" / "inputs-staging"
    snapshot = snapshot_inputs(base, input_refs(manifest.model_dump(mode="json")), staging)
    os.replace(staging, run_dir / "inputs")
    snapshot.root = run_dir / "inputs"
    return _Start(run_id, snapshot)


def _contain(manifest: Manifest, base: Path, run_dir: Path, snapshot: Snapshot, secrets: list[str],
             redactor: Redactor, validation_only: bool) -> Containment:
    """The run's containment with its gateway and judges (none for controls alone), every
    pinned commit copied into the run store."""
    gateway = None
    if not validation_only and any(manifest.uses_gateway(v) for v in manifest.variants):
        from runner.gateway.run import RunGateway

        gateway = RunGateway(manifest, snapshot, run_dir, secrets=secrets, trial_id=trial_id)
    containment = build_containment(manifest, run_dir, redactor, gateway)
    if not validation_only:
        from runner.judges.config import judge_criteria
        from runner.judges.invoke import JudgeRuntime

        if judge_criteria(manifest):
            containment = dataclasses.replace(containment, judges=JudgeRuntime.build(
                manifest, base, snapshot, containment.backend, network=containment.network_policy,
                read_only=containment.read_only, redactor=redactor, secrets=secrets))
    try:
        for repo, commit in _sources(manifest, base):
            containment.store.pin(repo, commit)
    except GitError as exc:
        raise RunnerError(f"could not copy the pinned commits into the run's store: {exc}") from exc
    return containment


def open_run(manifest_path: Path, output_dir: Path, *, resume: bool, validation_only: bool,
             jobs: int, listener: Any = None, control_repeats: int | None = None,
             controls_from: str | None = None, executor: ExecutorInfo | None = None,
             regrade: RegradeOf | None = None) -> RunSetup:
    """Open (or resume) the run of ``manifest_path`` in ``output_dir`` and emit ``run_started``;
    with ``regrade``, a regrade run of that run's cases (``runner.regrade``)."""
    manifest_path = Path(manifest_path)
    manifest = load_valid_manifest(manifest_path, agents_here=executor is None)
    if regrade is not None:
        manifest = manifest.model_copy(update={"cases": [c for c in manifest.cases if c.id in regrade.case_ids]})
    raise_fd_limit()  # the runner's descriptors are budgeted apart from the agents' (docs/gateway.md)
    base = manifest_path.resolve().parent
    # Absolute: agents and graders run with other working directories.
    run_dir = Path(output_dir).resolve()
    manifest_sha = sha256_file(manifest_path)
    if resume and run_dir.is_dir() and interrupted_setup(run_dir):
        resume = False  # no run had started here: set it up afresh
        remove_tree(run_dir)
    start = _resumed(run_dir, manifest_path, manifest, base, manifest_sha) if resume \
        else _fresh(run_dir, manifest, base)
    snapshot = start.snapshot
    manifest, rotation = rotate(manifest, start.run_id, start.prior)
    manifest, bank = draw(manifest)
    secrets = run_secrets(manifest)
    redactor = Redactor(secrets)
    harnesses = {} if regrade else resolve_harnesses(manifest, base, protected_paths(manifest, base, run_dir))
    containment = _contain(manifest, base, run_dir, snapshot, secrets, redactor, validation_only or bool(regrade))
    texts = {} if regrade else {v.id: instruction_texts(v, snapshot) for v in manifest.variants}
    records = {} if regrade else {v.id: variant_record(manifest, v, harnesses.get(v.id), containment.gateway)
                                  for v in manifest.variants}
    config_ids = ({v.variant: v.config_id for v in regrade.head.variants} if regrade else
                  {v.id: config_id(v, texts[v.id], records[v.id][1]) for v in manifest.variants})
    fingerprints = {c.id: case_fingerprint(manifest, c, snapshot.hashes, case_source(manifest, base, c)[1])
                    for c in manifest.cases}
    log = EventLog(run_dir / "events.jsonl", start.run_id, start.next_seq, listener=listener,
                   last_line=start.last_line, lines=start.lines, redactor=redactor, key=eventlog.run_key())
    s = RunSetup(manifest, manifest_path, base, run_dir, start.run_id, log, snapshot, texts, config_ids,
                 start.prior, containment, fingerprints, redactor, start.refused, harnesses, rotation, bank)
    _emit_run_started(s, {v: r[0] for v, r in records.items()}, manifest_sha,
                      validation_only=validation_only, jobs=jobs, resumed=resume,
                      control_repeats=control_repeats, controls_from=controls_from, executor=executor,
                      regrade=regrade)
    (run_dir / SETUP_MARKER).unlink(missing_ok=True)
    return s


def _variant_infos(s: RunSetup, settings: dict[str, dict[str, Any]]) -> list[VariantInfo]:
    return [
        VariantInfo(
            variant=v.id, config_id=s.config_ids[v.id], model=v.model,
            harness=v.harness or (v.agent.kind if v.agent.is_harness else None),
            harness_version=v.harness_version or (s.harnesses[v.id].version if v.id in s.harnesses else None),
            reasoning_effort=v.reasoning_effort,
            service_tier=v.service_tier, settings=settings[v.id], agent_kind=v.agent.kind,
            simulated=v.agent.kind == "simulated", conditions=dict(v.conditions),
            stage_instruction_hashes={p: s.snapshot.hashes[p] for p in s.texts[v.id]},
            **budget_fields(s.manifest.variants, v),
        )
        for v in s.manifest.variants
    ]


def _case_infos(s: RunSetup) -> list[CaseInfo]:
    return [
        CaseInfo(
            case_id=c.id, holdout=c.holdout, canary=c.canary,
            labels={k: str(v) for k, v in c.labels.model_dump(exclude_none=True).items()},
            initial_commit=case_source(s.manifest, s.manifest_dir, c)[1],
            criteria=criterion_infos(c.criteria, s.rotation.chosen.get(c.id, ()) if s.rotation else (),
                                     [*s.bank.matched.get(c.id, ()), *s.bank.sampled.get(c.id, ())] if s.bank else ()),
            fingerprint=s.fingerprints[c.id], timeout_seconds=c.timeout_seconds, max_cost_usd=c.max_cost_usd,
        )
        for c in s.manifest.cases
    ]


def _regrade_fields(regrade: RegradeOf | None) -> dict[str, Any]:
    """What a regrade's ``run_started`` takes from the run it grades again: the trials'
    configurations, budgets, stages and repetitions (the grading is the manifest's)."""
    if regrade is None:
        return {}
    h = regrade.head
    return {"variants": list(h.variants), "repetitions": h.repetitions, "max_attempts": h.max_attempts,
            "timeout_seconds": h.timeout_seconds, "max_cost_usd": h.max_cost_usd, "stages": list(h.stages),
            "simulated": h.simulated, "regrade_of": regrade.run_id, "tier": regrade.tier}


def _emit_run_started(s: RunSetup, settings: dict[str, dict[str, Any]], manifest_sha: str, *,
                      validation_only: bool, jobs: int, resumed: bool, control_repeats: int | None,
                      controls_from: str | None, executor: ExecutorInfo | None,
                      regrade: RegradeOf | None = None) -> None:
    manifest, box = s.manifest, s.containment
    repo, commit = repo_path(s.manifest_dir, manifest.repository), manifest.initial_commit
    fields: dict[str, Any] = dict(
        repetitions=manifest.repetitions, max_attempts=manifest.max_attempts,
        timeout_seconds=manifest.timeout_seconds, max_cost_usd=manifest.max_cost_usd,
        stages=list(manifest.stages), variants=[] if regrade else _variant_infos(s, settings),
        simulated=any(v.agent.kind == "simulated" for v in manifest.variants))
    fields.update(_regrade_fields(regrade))
    s.log.emit(
        RunStarted,
        manifest_id=manifest.id, manifest_path=str(s.manifest_path.resolve()),
        manifest_sha256=manifest_sha, validation_only=validation_only,
        engine_version=engine_version(), os=platform.platform(), python=sys.version.split()[0],
        git_version=git_version(), repository=str(repo.resolve()), initial_commit=commit,
        initial_tree=box.store.tree_of(commit), input_hashes=s.snapshot.hashes, cases=_case_infos(s),
        jobs=jobs, resumed=resumed, **fields,
        # The backend is the one the manifest names (``build_containment``), typed there.
        isolation=IsolationInfo(backend=manifest.isolation.backend, isolated=box.backend.isolated,
                                version=box.backend.version, network=box.network,
                                network_policy=manifest.network_policy,
                                allow_hosts=list(manifest.isolation.allow_hosts)),
        control_repeats=control_repeats or manifest.control_repeats, controls_from=controls_from,
        grading_semantics=GRADING_SEMANTICS, rotation=s.rotation, bank=s.bank,
        gateway=box.gateway.info() if box.gateway is not None else None,
        executor=executor or ExecutorInfo(kind="local"),
        chain_key=s.log.key_id,
    )


def close_run(s: RunSetup, status: str, started: float, **counts: Any) -> Path:
    """Emit ``run_finished`` (``counts``: its trial counts), close the log and the run
    store, and rebuild ``report.json`` from the events; returns the report's path."""
    s.log.emit(RunFinished, status=status, **counts, duration_s=round(time.monotonic() - started, 3))
    s.log.close()
    s.containment.store.close()  # the per-run seeds and indexes (runner.capture.RunStore)
    return write_report(s.run_dir, read_events(s.log.path))
