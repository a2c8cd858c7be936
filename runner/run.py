"""The run driver: controls, trial ordering, thread pool, resume, progress, report.

The driver is the only writer of ``events.jsonl``. Trials run in worker threads and
emit through the driver's ``EventLog``; the report is rebuilt from the events file
at the end (or on Ctrl-C), so partial and resumed runs report the same way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import secrets
import sys
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from contract.files import engine_version
from contract.redact import Redactor
from contract.run_events import (
    CaseInfo,
    CaseValidated,
    ControlResult,
    CriterionInfo,
    ExecutorInfo,
    IsolationInfo,
    RunFinished,
    RunStarted,
    VariantInfo,
)
from contract.trial_events import TrialFinished, TrialSkipped
from runner import sandbox
from runner.capture import DEFAULT_EXCLUDES, RunStore, TrialGit
from runner.errors import RunnerError
from runner.eventlog import EventLog, VerifiedEvents, read_events, read_verified, repair_tail
from runner.fingerprint import GRADING_SEMANTICS, case_fingerprint
from runner.git import GitError, git, git_version
from runner.grading import GradingContext, argv_paths, grade_tree
from runner.manifest import Case, Manifest, Variant, config_id
from runner.paths import Snapshot, input_refs, read_inputs, sha256_file, snapshot_inputs
from runner.procs import kill_all, ordinary_env
from runner.prompts import instruction_texts
from runner.report import write_report
from runner.trial import (
    Containment,
    TrialInterrupted,
    TrialSpec,
    create_workspace,
    remove_tree,
    run_trial,
)
from runner.validate import load_valid_manifest, protected_paths, repo_path


class RunInterrupted(RunnerError):
    """Ctrl-C: the run stopped cleanly; a partial report exists and --resume continues."""

    exit_code = 130


@dataclass
class ControlsResult:
    run_id: str
    run_dir: Path
    events_path: Path
    report_path: Path
    ok: bool
    cases: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    events_path: Path
    report_path: Path
    outcomes: dict[str, int]
    status: str = "completed"
    lines: list[str] = field(default_factory=list)
    skipped: int = 0
    """Trials already finished before a ``--resume``."""
    refused: list[tuple[int, str]] = field(default_factory=list)
    """Lines of the resumed events.jsonl its hash chain refused (reported, not data)."""
    isolated: bool = True
    unscored: dict[str, str] = field(default_factory=dict)
    """Case id → why it is not scored (failed or flaky controls)."""
    trials_skipped: int = 0


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def trial_seed(manifest_id: str, case_id: str, rep: int) -> int:
    """Shared by every variant of a case/repetition: paired trials see the same draw."""
    return int(hashlib.sha256(f"{manifest_id}/{case_id}/{rep}".encode()).hexdigest()[:8], 16)


def trial_order(m: Manifest) -> list[tuple[Case, Variant, int]]:
    """Cases × variants × repetitions; variant order reversed on even repetitions."""
    out = []
    for rep in range(1, m.repetitions + 1):
        variants = list(m.variants) if rep % 2 else list(reversed(m.variants))
        for case in m.cases:
            for var in variants:
                out.append((case, var, rep))
    return out


def trial_id(case_id: str, variant_id: str, rep: int) -> str:
    return f"{case_id}__{variant_id}__r{rep}"


@dataclass
class _Setup:
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


def _case_source(s_manifest: Manifest, base: Path, case: Case) -> tuple[Path, str]:
    return (repo_path(base, case.repository or s_manifest.repository),
            case.initial_commit or s_manifest.initial_commit)


SETUP_MARKER = ".trialhouse-setup"
"""Written first into a new run directory; with no ``run_started`` line yet, the
directory holds an interrupted setup that a new run (or ``--resume``) may clear."""


def _interrupted_setup(run_dir: Path) -> bool:
    """The directory holds only what an interrupted setup of ours left behind."""
    if not (run_dir / SETUP_MARKER).exists():
        return False
    events = run_dir / "events.jsonl"
    if not events.exists():
        return True
    verified = read_verified(events)
    return not any(isinstance(e, RunStarted) for e in verified.events)


def run_secrets(manifest: Manifest) -> list[str]:
    """Values of every variable any variant passes to its agent or marks secret, and of
    the gateway's provider keys and ``secret_env``: redacted from everything stored."""
    names = {n for v in manifest.variants for n in (*v.agent.pass_env, *v.agent.secret_env)}
    if manifest.gateway is not None:
        from runner.gateway.run import key_names

        names |= {*key_names(manifest.gateway), *manifest.gateway.secret_env}
    return [os.environ[n] for n in sorted(names) if os.environ.get(n)]


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
    if gateway is not None and manifest.uses_gateway(v) and manifest.gateway.mode in ("scripted", "replay"):
        info = gateway.info()
        source = info.script_sha256.get(v.id) or info.script_sha256.get("*") if manifest.gateway.mode == "scripted" \
            else gateway.recordings_sha256
        settings["gateway"] = extra["gateway"] = {"mode": manifest.gateway.mode, "sha256": source}
    return settings, extra


def _containment(manifest: Manifest, run_dir: Path, redactor: Redactor, gateway: Any = None) -> Containment:
    backend = sandbox.backend(manifest.isolation.backend)
    excludes = tuple(manifest.checkpoint_exclude) if manifest.checkpoint_exclude is not None else DEFAULT_EXCLUDES
    return Containment(
        backend=backend, store=RunStore(run_dir / ".runner" / "store.git"),
        network=manifest.isolation.network,
        read_only=tuple(Path(p) for p in manifest.isolation.read_only_paths),
        excludes=excludes, max_workspace_bytes=int(manifest.max_workspace_mb * 2**20),
        redactor=redactor, gateway=gateway,
    )


def _sources(manifest: Manifest, base: Path) -> list[tuple[Path, str]]:
    pairs = {(repo_path(base, manifest.repository), manifest.initial_commit)}
    pairs |= {_case_source(manifest, base, c) for c in manifest.cases}
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


def _open_run(manifest_path: Path, output_dir: Path, *, resume: bool, validation_only: bool,
              jobs: int, listener: Any = None, control_repeats: int | None = None,
              controls_from: str | None = None, executor: ExecutorInfo | None = None) -> _Setup:
    manifest_path = Path(manifest_path)
    manifest = load_valid_manifest(manifest_path)
    base = manifest_path.resolve().parent
    # Absolute: agents and graders run with other working directories.
    run_dir = Path(output_dir).resolve()
    events_path = run_dir / "events.jsonl"
    manifest_sha = sha256_file(manifest_path)
    prior: list[Any] = []
    refused: list[tuple[int, str]] = []
    last_line: bytes | None = None
    lines = 0
    if resume and run_dir.is_dir() and _interrupted_setup(run_dir):
        resume = False  # no run had started here: set it up afresh
        remove_tree(run_dir)
    if resume:
        if not events_path.exists():
            raise RunnerError(f"{run_dir}: nothing to resume (no events.jsonl); start a run without --resume")
        repair_tail(events_path)
        verified: VerifiedEvents = read_verified(events_path)
        prior, refused = verified.events, list(verified.refused)
        last_line, lines = verified.last_line, verified.lines
        starts = [e for e in prior if isinstance(e, RunStarted)]
        if not starts:
            raise RunnerError(f"{events_path}: no run_started event; cannot resume this directory")
        if starts[0].manifest_sha256 != manifest_sha:
            raise RunnerError(f"{manifest_path}: the manifest changed since the run started; resume needs the same manifest")
        if starts[0].validation_only:
            raise RunnerError(f"{run_dir}: a validation-only run cannot be resumed")
        run_id = starts[0].run_id
        snapshot = _resume_snapshot(run_dir, base, manifest, dict(starts[0].input_hashes))
        next_seq = max(e.seq for e in prior) + 1
    else:
        if run_dir.exists() and _interrupted_setup(run_dir):
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
        next_seq = 0
    secrets_ = run_secrets(manifest)
    redactor = Redactor(secrets_)
    harnesses = resolve_harnesses(manifest, base, protected_paths(manifest, base, run_dir))
    gateway = None
    if not validation_only and any(manifest.uses_gateway(v) for v in manifest.variants):
        from runner.gateway.run import RunGateway

        gateway = RunGateway(manifest, snapshot, run_dir, secrets=secrets_, trial_id=trial_id)
    containment = _containment(manifest, run_dir, redactor, gateway)
    if not validation_only:
        from runner.judges.invoke import JudgeRuntime, judge_criteria

        if judge_criteria(manifest):
            containment = dataclasses.replace(containment, judges=JudgeRuntime.build(
                manifest, base, snapshot, containment.backend, network=containment.network,
                read_only=containment.read_only, redactor=redactor, secrets=secrets_))
    try:
        for repo, commit in _sources(manifest, base):
            containment.store.pin(repo, commit)
    except GitError as exc:
        raise RunnerError(f"could not copy the pinned commits into the run's store: {exc}") from exc
    texts = {v.id: instruction_texts(v, snapshot) for v in manifest.variants}
    records = {v.id: variant_record(manifest, v, harnesses.get(v.id), gateway) for v in manifest.variants}
    config_ids = {v.id: config_id(v, texts[v.id], records[v.id][1]) for v in manifest.variants}
    fingerprints = {c.id: case_fingerprint(manifest, c, snapshot.hashes, _case_source(manifest, base, c)[1])
                    for c in manifest.cases}
    log = EventLog(events_path, run_id, next_seq, listener=listener, last_line=last_line, lines=lines,
                   redactor=redactor)
    repo, commit = repo_path(base, manifest.repository), manifest.initial_commit
    log.emit(
        RunStarted,
        manifest_id=manifest.id, manifest_path=str(manifest_path.resolve()),
        manifest_sha256=manifest_sha, validation_only=validation_only,
        engine_version=engine_version(), os=platform.platform(), python=sys.version.split()[0],
        git_version=git_version(), repository=str(repo.resolve()), initial_commit=commit,
        initial_tree=containment.store.tree_of(commit), input_hashes=snapshot.hashes,
        repetitions=manifest.repetitions, max_attempts=manifest.max_attempts,
        timeout_seconds=manifest.timeout_seconds, max_cost_usd=manifest.max_cost_usd,
        stages=list(manifest.stages),
        variants=[
            VariantInfo(
                variant=v.id, config_id=config_ids[v.id], model=v.model,
                harness=v.harness or (v.agent.kind if v.agent.is_harness else None),
                harness_version=v.harness_version or (harnesses[v.id].version if v.id in harnesses else None),
                reasoning_effort=v.reasoning_effort,
                service_tier=v.service_tier, settings=records[v.id][0], agent_kind=v.agent.kind,
                simulated=v.agent.kind == "simulated",
                stage_instruction_hashes={p: snapshot.hashes[p] for p in texts[v.id]},
            )
            for v in manifest.variants
        ],
        cases=[
            CaseInfo(
                case_id=c.id, holdout=c.holdout,
                labels={k: str(v) for k, v in c.labels.model_dump(exclude_none=True).items()},
                initial_commit=_case_source(manifest, base, c)[1],
                criteria=[CriterionInfo(criterion_id=k.id, layer=k.layer,
                                           kind="command" if k.command else "judge",
                                           description=k.description,
                                           severity=k.resolved_severity) for k in c.criteria],  # type: ignore[arg-type]
                fingerprint=fingerprints[c.id],
            )
            for c in manifest.cases
        ],
        jobs=jobs, resumed=resume,
        simulated=any(v.agent.kind == "simulated" for v in manifest.variants),
        isolation=IsolationInfo(backend=containment.backend.name,  # type: ignore[arg-type]
                                   isolated=containment.backend.isolated,
                                   version=containment.backend.version,
                                   network=containment.network),
        control_repeats=control_repeats or manifest.control_repeats, controls_from=controls_from,
        grading_semantics=GRADING_SEMANTICS, gateway=gateway.info() if gateway is not None else None,
        executor=executor or ExecutorInfo(kind="local"),
    )
    (run_dir / SETUP_MARKER).unlink(missing_ok=True)
    return _Setup(manifest, manifest_path, base, run_dir, run_id, log, snapshot, texts, config_ids,
                  prior, containment, fingerprints, redactor, refused, harnesses)


# ---------------------------------------------------------------- controls


def _expected(control: str, layer: str) -> str:
    return "failed" if control == "negative" and layer == "target" else "passed"


def _control_case(s: _Setup, case: Case, repeats: int, stop: threading.Event) -> dict[str, Any]:
    """Negative (and positive) control of one case; emits control_result + case_validated.

    Each control is graded exactly as a trial is: a runner-captured tree of a fresh
    workspace (after ``prepare_commands``; plus the reference patch for the positive
    control), a fresh copy per criterion, inside the isolation backend.
    """
    _repo, commit = _case_source(s.manifest, s.manifest_dir, case)
    problems: list[str] = []
    verdicts: dict[tuple[str, str], list[str]] = {}
    baseline: dict[str, str] = {}
    controls = ("negative", "positive")
    box = s.containment
    for control in controls:
        if stop.is_set():
            raise TrialInterrupted(case.id)
        where = s.run_dir / "controls" / case.id / control
        remove_tree(where)
        ws, tgit = where / "workspace", TrialGit(where / ".runner" / "git", box.store)
        try:
            tree, ignored, why = _control_state(s, case, control, ws, tgit, commit)
        except (GitError, OSError) as exc:
            tree, ignored, why = None, None, f"could not create a workspace: {exc}"
        if tree is None:
            problems.append(f"{control} control: {why}")
            continue
        ctx = GradingContext(box.backend, s.snapshot, tgit, where / ".runner" / "grade",
                             network=box.network, read_only=box.read_only, redactor=s.redactor)
        log_dir = s.run_dir / "controls" / case.id / f"{control}-logs"
        for repeat in range(1, repeats + 1):
            run = grade_tree(ctx, list(case.criteria), tree, overlay=ignored, log_dir=log_dir,
                             tag=f".{repeat}")
            for r in run.results:
                expected = _expected(control, r.layer)
                s.log.emit(ControlResult, case_id=case.id, control=control,
                           criterion_id=r.criterion_id, layer=r.layer, repeat=repeat,
                           exit_code=r.exit_code, signal=r.signal, timed_out=r.timed_out,
                           verdict=r.verdict, expected=expected, ok=r.verdict == expected,
                           duration_s=r.duration_s)
                verdicts.setdefault((control, r.criterion_id), []).append(r.verdict)
            if run.violations:
                problems.append(f"{control} control: a grader changed its inputs: "
                                f"{', '.join(run.violations[:3])}")
                break
        ctx.close()
        remove_tree(ws)
    flaky = sorted({cid for (_, cid), vs in verdicts.items() if len(set(vs)) > 1})
    for (control, cid), vs in sorted(verdicts.items()):
        layer = next(c.layer for c in case.criteria if c.id == cid)
        exp = _expected(control, layer)
        if control == "negative":
            baseline[cid] = vs[0] if len(set(vs)) == 1 else "inconclusive"
        if cid in flaky:
            continue
        if vs[0] != exp:
            problems.append(f"{control} control: {cid} ({layer}) {vs[0]}, expected {exp}")
    fixed = {c.id: c.flaky_fixed for c in case.criteria}
    for cid in flaky:
        if fixed.get(cid):
            problems.append(f"{cid} is marked fixed in the manifest ({fixed[cid]}) but disagreed with "
                            f"itself again over {repeats} repeats: it is still flaky")
        else:
            problems.append(f"{cid} is flaky (different verdicts on repeated runs of the same state); "
                            "its case is not scored until it is fixed and marked flaky_fixed")
    s.log.emit(CaseValidated, case_id=case.id, ok=not problems, problems=problems,
               flaky_criteria=flaky, baseline=baseline, repeats=repeats,
               fingerprint=s.fingerprints[case.id])
    return {"case_id": case.id, "ok": not problems, "problems": problems, "flaky": flaky,
            "baseline": baseline}


def _control_state(s: _Setup, case: Case, control: str, ws: Path, tgit: TrialGit,
                   commit: str) -> tuple[str | None, str | None, str]:
    """(tree, ignored tree, problem) of a control's state, captured by the runner."""
    box = s.containment
    create_workspace(box.store, commit, ws)
    initial = box.store.tree_of(commit)
    home = ws.parent / ".sandbox" / "home"
    home.mkdir(parents=True, exist_ok=True)
    for argv in s.manifest.prepare_commands:
        req = sandbox.Request(argv=list(argv), cwd=ws, env=ordinary_env({"HOME": str(home)}),
                              read_only=[*box.read_only, *argv_paths(list(argv))],
                              read_write=[ws, home], network=box.network)
        res = sandbox.run(box.backend, req, timeout=s.manifest.timeout_seconds)
        if not res.ok:
            return None, None, f"prepare command {argv[0]} failed (exit {res.exit_code})"
    ignored = None
    if s.manifest.prepare_commands:
        cap = tgit.capture(ws, initial, excludes=box.excludes, ignored_only=True)
        ignored = cap.tree if cap.files else None
    if control == "positive":
        patch = ws.parent / "reference.patch"
        patch.write_bytes(s.snapshot.contents[case.reference_patch])
        done = git(ws, "apply", "--whitespace=nowarn", str(patch), check=False)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()
            return None, None, f"reference patch does not apply: {why}"
    tree = tgit.capture(ws, initial, excludes=box.excludes).tree
    return tree, ignored, ""


def _progress(enabled: bool, total: int, label: str):
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    progress = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.fields[outcomes]}"), TimeElapsedColumn(), TextColumn("eta"),
        TimeRemainingColumn(), console=Console(stderr=True), disable=not enabled, transient=False,
    )
    task = progress.add_task(label, total=total, outcomes="")
    return progress, task


def _run_pool(items: list[Any], fn: Any, jobs: int, on_done: Any, stop: threading.Event,
              on_stop: Any = None) -> None:
    """Run ``fn(item)`` on a thread pool; Ctrl-C sets ``stop``, kills agents (and calls
    ``on_stop``, e.g. to cancel remote tasks), re-raises."""
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="trial")
    futures: dict[Future[Any], Any] = {pool.submit(fn, it): it for it in items}
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for f in done:
                on_done(futures.pop(f), f)  # a finished trial's outcome is not kept (flat memory)
    except KeyboardInterrupt:
        stop.set()
        kill_all()
        if on_stop is not None:
            on_stop()
        pool.shutdown(wait=False, cancel_futures=True)
        # Keep killing until workers notice the stop flag (they check between steps).
        deadline = time.monotonic() + 30
        while any(not f.done() for f in futures) and time.monotonic() < deadline:
            kill_all()
            time.sleep(0.1)
        raise
    pool.shutdown(wait=True)


def _controls_table(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="controls per case")
    for col in ("case", "ok", "flaky", "problems"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["case_id"], "yes" if r["ok"] else "[red]NO[/red]",
                      ", ".join(r["flaky"]) or "-", "; ".join(r["problems"]) or "-")
    Console(stderr=False).print(table)


def run_controls(manifest_path: Path, output_dir: Path, *, jobs: int = 1, repeats: int | None = None,
                 progress: bool = True) -> ControlsResult:
    """Validation-only run: negative + positive control per case, repeated; no agents."""
    start = time.monotonic()
    s = _open_run(manifest_path, output_dir, resume=False, validation_only=True, jobs=jobs,
                  control_repeats=repeats)
    repeats = repeats or s.manifest.control_repeats
    stop = threading.Event()
    rows: dict[str, dict[str, Any]] = {}
    bar, task = _progress(progress, len(s.manifest.cases), "controls")

    def done(case: Case, fut: Future[Any]) -> None:
        try:
            rows[case.id] = fut.result()
        except TrialInterrupted:
            return
        bar.update(task, advance=1)

    status = "completed"
    try:
        with bar:
            _run_pool(list(s.manifest.cases), lambda c: _control_case(s, c, repeats, stop),
                      jobs, done, stop)
    except KeyboardInterrupt:
        status = "interrupted"
    ordered = [rows[c.id] for c in s.manifest.cases if c.id in rows]
    ok = status == "completed" and all(r["ok"] for r in ordered)
    if status == "completed" and not ok:
        status = "failed_controls"
    s.log.emit(RunFinished, status=status, trials_total=0, trials_finished=0, outcomes={},
               duration_s=round(time.monotonic() - start, 3))
    s.log.close()
    s.containment.store.close()  # the per-run seeds and indexes (runner.capture.RunStore)
    report = write_report(s.run_dir, read_events(s.log.path))
    if progress:
        _controls_table(ordered)
    if status == "interrupted":
        raise RunInterrupted(f"interrupted; partial report at {report}")
    return ControlsResult(s.run_id, s.run_dir, s.log.path, report, ok, ordered)


# ---------------------------------------------------------------- trials


@dataclass(frozen=True)
class ReusedControls:
    """The controls of a validation-only run, checked to be for exactly these inputs."""

    run_id: str
    validated: list[Any]


def load_controls(controls_dir: Path, manifest_path: Path) -> ReusedControls:
    """Read ``--controls DIR``; refuse it (naming the mismatch) unless it fits this manifest."""
    events_path = Path(controls_dir) / "events.jsonl"
    if not events_path.is_file():
        raise RunnerError(f"{controls_dir}: no events.jsonl; pass the output directory of a "
                          "'trialhouse run --validation-only' run to --controls")
    verified = read_verified(events_path)
    starts = [e for e in verified.events if isinstance(e, RunStarted)]
    if not starts or not starts[0].validation_only:
        raise RunnerError(f"{controls_dir}: not a validation-only run (--controls takes the output of "
                          "'trialhouse run --validation-only')")
    if not verified.intact:
        raise RunnerError(f"{events_path}: its hash chain does not verify ({verified.problems()}); "
                          "re-run the controls")
    head = starts[0]
    sha = sha256_file(manifest_path)
    if head.manifest_sha256 != sha:
        raise RunnerError(f"{controls_dir}: its controls were run for a manifest with sha256 "
                          f"{head.manifest_sha256[:12]}…, but {manifest_path} has {sha[:12]}…; "
                          "re-run the controls for this manifest")
    manifest = load_valid_manifest(manifest_path)
    base = Path(manifest_path).resolve().parent
    current = read_inputs(base, input_refs(manifest.model_dump(mode="json")), base).hashes
    if dict(head.input_hashes) != current:
        changed = sorted(k for k in set(head.input_hashes) | set(current)
                         if head.input_hashes.get(k) != current.get(k))
        raise RunnerError(f"{controls_dir}: input files changed since its controls ran "
                          f"({', '.join(changed[:3])}: sha256 differs); re-run the controls")
    validated = [e for e in verified.events if isinstance(e, CaseValidated)]
    missing = sorted({c.id for c in manifest.cases} - {e.case_id for e in validated})
    if missing:
        raise RunnerError(f"{controls_dir}: has no controls for {', '.join(missing[:5])} "
                          "(the validation-only run did not finish); re-run the controls")
    return ReusedControls(head.run_id, validated)


def _establish_controls(s: _Setup, jobs: int, stop: threading.Event, repeats: int,
                        reused: ReusedControls | None) -> dict[str, Any]:
    """Case id → its ``case_validated`` event: from this run (resume), reused, or run now."""
    known: dict[str, Any] = {e.case_id: e for e in s.prior if isinstance(e, CaseValidated)}
    if reused is not None:
        run_id, validated = reused.run_id, reused.validated
        for e in validated:
            if e.case_id not in known:
                known[e.case_id] = s.log.emit(
                    CaseValidated, case_id=e.case_id, ok=e.ok, problems=e.problems,
                    flaky_criteria=e.flaky_criteria, baseline=e.baseline, repeats=e.repeats,
                    fingerprint=s.fingerprints[e.case_id], from_run=run_id)
    todo = [c for c in s.manifest.cases if c.id not in known]
    results: dict[str, dict[str, Any]] = {}

    def done(case: Case, fut: Future[Any]) -> None:
        results[case.id] = fut.result()

    if todo:
        _run_pool(todo, lambda c: _control_case(s, c, repeats, stop), jobs, done, stop)
    fresh = {e.case_id: e for e in read_events(s.log.path) if isinstance(e, CaseValidated)}
    return {c.id: known.get(c.id) or fresh[c.id] for c in s.manifest.cases}


def run_trials(manifest_path: Path, output_dir: Path, *, jobs: int = 1, resume: bool = False,
               progress: bool = True, controls_dir: Path | None = None, repeats: int | None = None,
               score_unvalidated: bool = False, executor: str = "local",
               ray_address: str | None = None, rerun: tuple[str, ...] = ()) -> RunResult:
    """Establish every case's controls, then run the trials of the cases they pass.

    A case that fails a control or has a criterion that disagreed with itself is not
    scored: its trials are recorded as ``trial_skipped`` (or, with
    ``score_unvalidated``, run with ``scored: false``). Resume skips finished trials,
    except those whose last outcome is in ``rerun`` (e.g. ``infra_error``).
    ``executor="ray"`` runs each trial as a Ray task (``runner.executors.on_ray``);
    controls always run on the driver.
    """
    start = time.monotonic()
    if rerun and not resume:
        raise RunnerError("--rerun applies to --resume (it re-runs finished trials of an earlier run)")
    ray, where = None, None
    if executor == "ray":  # before any output exists: a missing extra or a bad address is bad input
        from runner.executors.on_ray import connect, describe, refuse_unsupported

        refuse_unsupported(load_valid_manifest(manifest_path))
        ray = connect(ray_address, jobs)
        where = describe(ray, ray_address)
    reused = load_controls(Path(controls_dir), Path(manifest_path)) if controls_dir is not None else None
    s = _open_run(manifest_path, output_dir, resume=resume, validation_only=False, jobs=jobs,
                  control_repeats=repeats, controls_from=reused.run_id if reused else None,
                  executor=where)
    m = s.manifest
    repeats = repeats or m.control_repeats
    last_finish = {e.trial_id: e for e in s.prior if isinstance(e, TrialFinished)}
    finished = {tid for tid, e in last_finish.items() if e.outcome not in rerun}
    skipped_before = {(e.case_id, e.variant, e.repetition) for e in s.prior if isinstance(e, TrialSkipped)}
    order = trial_order(m)
    stop = threading.Event()
    outcomes: Counter[str] = Counter(last_finish[tid].outcome for tid in finished)
    lines: list[str] = []
    status = "completed"
    unscored: dict[str, str] = {}
    skipped = len(skipped_before)
    bar, task = _progress(progress, len(order), "trials")
    try:
        validated = _establish_controls(s, jobs, stop, repeats, reused)
        unscored = {cid: "; ".join(v.problems) or "controls failed"
                    for cid, v in validated.items() if not v.ok}
        specs = []
        for idx, (case, var, rep) in enumerate(order):
            tid = trial_id(case.id, var.id, rep)
            if tid in finished:
                continue
            if case.id in unscored and not score_unvalidated:
                if (case.id, var.id, rep) not in skipped_before:
                    s.log.emit(TrialSkipped, trial_id=tid, case_id=case.id, variant=var.id,
                               config_id=s.config_ids[var.id], repetition=rep,
                               reason=f"case not scored: {unscored[case.id]}",
                               case_fingerprint=s.fingerprints[case.id])
                    skipped += 1
                continue
            _repo, commit = _case_source(m, s.manifest_dir, case)
            specs.append(TrialSpec(
                run_id=s.run_id, trial_id=tid, order=idx, manifest=m, manifest_dir=s.manifest_dir,
                case=case, variant=var, config_id=s.config_ids[var.id], repetition=rep,
                seed=trial_seed(m.id, case.id, rep), initial_commit=commit,
                snapshot=s.snapshot, trial_dir=s.run_dir / "trials" / tid,
                containment=s.containment, case_fingerprint=s.fingerprints[case.id],
                scored=case.id not in unscored,
                instruction_texts=s.texts[var.id], baseline=dict(validated[case.id].baseline), stop=stop,
                harness=s.harnesses.get(var.id), uses_gateway=m.uses_gateway(var),
            ))

        def work(spec: TrialSpec) -> Any:
            return run_trial(spec, s.log.emit)

        on_stop = None
        if ray is not None:
            from runner.executors.on_ray import RayExecutor
            from runner.executors.remote import make_payload

            remote = RayExecutor(ray, make_payload(s.run_id, m, s.snapshot, s.containment.store,
                                                   [sp.initial_commit for sp in specs]),
                                 m, s.run_dir, s.log.emit, stop)
            work, on_stop = remote.work, remote.cancel  # noqa: F811 - the executor's

        def done(spec: TrialSpec, fut: Future[Any]) -> None:
            try:
                result = fut.result()
            except TrialInterrupted:
                return
            except Exception as exc:  # noqa: BLE001 - an engine bug must not lose the run
                result = None
                reason = (str(exc) if isinstance(exc, RunnerError)
                          else f"runner error: {type(exc).__name__}: {exc}")
                line = f"task={spec.case.id} variant={spec.variant.id} rep={spec.repetition} outcome=infra_error"
                s.log.emit(TrialFinished, trial_id=spec.trial_id, case_id=spec.case.id,
                           variant=spec.variant.id, config_id=spec.config_id,
                           repetition=spec.repetition, outcome="infra_error", reason=reason,
                           attempts=0, duration_s=0.0, line=line,
                           case_fingerprint=spec.case_fingerprint, scored=spec.scored)
                outcomes["infra_error"] += 1
                lines.append(line)
            if result is not None:
                outcomes[result.outcome] += 1
                lines.append(result.line)
                line = result.line
            if progress:
                bar.console.print(line, highlight=False, markup=False, soft_wrap=True)
            bar.update(task, advance=1, outcomes=" ".join(f"{k}={v}" for k, v in sorted(outcomes.items())))

        gateway = s.containment.gateway
        judges = s.containment.judges
        with bar, (gateway if gateway is not None and specs else contextlib.nullcontext()), \
                (judges if judges is not None and specs else contextlib.nullcontext()):
            bar.update(task, completed=len(order) - len(specs),
                       outcomes=" ".join(f"{k}={v}" for k, v in sorted(outcomes.items())))
            _run_pool(specs, work, jobs, done, stop, on_stop)
    except KeyboardInterrupt:
        status = "interrupted"
    total_finished = sum(outcomes.values())
    s.log.emit(RunFinished, status=status, trials_total=len(order),
               trials_finished=total_finished, outcomes=dict(outcomes),
               duration_s=round(time.monotonic() - start, 3), trials_skipped=skipped,
               unscored_cases=sorted(unscored))
    s.log.close()
    s.containment.store.close()  # the per-run seeds and indexes (runner.capture.RunStore)
    report = write_report(s.run_dir, read_events(s.log.path))
    if status == "interrupted":
        raise RunInterrupted(
            f"interrupted after {total_finished}/{len(order)} trials; partial report at {report}; "
            f"continue with: trialhouse run --manifest {manifest_path} --output {output_dir} --resume"
        )
    return RunResult(s.run_id, s.run_dir, s.log.path, report, dict(outcomes), status, lines,
                     skipped=len(finished), refused=s.refused, isolated=s.containment.backend.isolated,
                     unscored=unscored, trials_skipped=skipped)


def read_report(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())
