"""The run driver: open the run, establish its controls, run its trials, finish it.

The driver is the only writer of ``events.jsonl``. Trials run in worker threads (or as
Ray tasks) and emit through the driver's ``EventLog``; the report is rebuilt from the
events file at the end (or on Ctrl-C), so partial and resumed runs report the same way
(docs/runner.md). Each step is a module of its own: ``runner.setup`` (open, finish),
``runner.controls``, ``runner.plan`` (which trials), ``runner.pool`` (where they run).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.run_events import ExecutorInfo
from runner.controls import establish_controls, load_controls
from runner.errors import RunnerError
from runner.ids import trial_order
from runner.plan import earlier, plan_trials, unscored_cases
from runner.pool import RunInterrupted, run_trial_pool
from runner.setup import RunSetup, close_run, open_run
from runner.trial import TrialSpec, run_trial
from runner.validate import load_valid_manifest


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


def _connect(executor: str, manifest_path: Path, ray_address: str | None,
             jobs: int) -> tuple[Any, ExecutorInfo | None, Any]:
    """(Ray, what ``run_started`` records of it, the run's trial hosts) for
    ``executor="ray"``, else (None, None, None). Called before any output exists: a missing
    extra or a bad address is bad input. The hosts start here, so their processes come up
    while the driver opens the run and establishes its controls."""
    if executor != "ray":
        return None, None, None
    from runner.executors.on_ray import connect, describe, start_hosts

    manifest = load_valid_manifest(manifest_path, agents_here=False)
    ray = connect(ray_address, jobs)
    return ray, describe(ray, ray_address), start_hosts(ray, manifest, jobs)


def _executor(s: RunSetup, specs: list[TrialSpec], ray: Any, hosts: Any,
              stop: threading.Event) -> tuple[Callable[[TrialSpec], Any], Callable[[], None] | None, Callable[[], None]]:
    """(work, on_stop, done): how one trial runs — here, or on a Ray trial host —, how
    Ctrl-C cancels what runs elsewhere, and what ends it when the trials are done."""
    if hosts is None or not specs:
        return (lambda spec: run_trial(spec, s.log.emit)), None, (hosts.kill if hosts else lambda: None)
    from runner.executors.on_ray import RayExecutor
    from runner.executors.remote import make_payload

    remote = RayExecutor(ray, make_payload(s.run_id, s.manifest, s.snapshot, s.containment.store,
                                           [sp.initial_commit for sp in specs], s.harnesses),
                         s.run_dir, s.log.emit, stop, hosts)
    return remote.work, remote.cancel, remote.close


def run_trials(manifest_path: Path, output_dir: Path, *, jobs: int = 1, resume: bool = False,
               progress: bool = True, controls_dir: Path | None = None, repeats: int | None = None,
               score_unvalidated: bool = False, executor: str = "local",
               ray_address: str | None = None, rerun: tuple[str, ...] = ()) -> RunResult:
    """Establish every case's controls, then run the trials of the cases they pass.

    A case that fails a control or has a criterion that disagreed with itself is not
    scored: its trials are recorded as ``trial_skipped`` (or, with
    ``score_unvalidated``, run with ``scored: false``). Resume skips finished trials,
    except those whose last outcome is in ``rerun`` (e.g. ``infra_error``).
    ``executor="ray"`` runs each trial on a Ray trial host (``runner.executors.on_ray``);
    controls always run on the driver.
    """
    start = time.monotonic()
    if rerun and not resume:
        raise RunnerError("--rerun applies to --resume (it re-runs finished trials of an earlier run)")
    ray, where, hosts = _connect(executor, manifest_path, ray_address, jobs)
    try:
        reused = load_controls(Path(controls_dir), Path(manifest_path)) if controls_dir is not None else None
        s = open_run(manifest_path, output_dir, resume=resume, validation_only=False, jobs=jobs,
                     control_repeats=repeats, controls_from=reused.run_id if reused else None,
                     executor=where)
    except BaseException:
        if hosts is not None:
            hosts.kill()
        raise
    before = earlier(s.prior, rerun)
    total = len(trial_order(s.manifest))
    tally = before.tally()
    stop = threading.Event()
    status, unscored = "completed", {}
    try:
        validated = establish_controls(s, jobs, stop, repeats or s.manifest.control_repeats, reused)
        unscored = unscored_cases(validated)
        specs = plan_trials(s, before, validated, unscored, score_unvalidated=score_unvalidated,
                            stop=stop, tally=tally)
        work, on_stop, done = _executor(s, specs, ray, hosts, stop)
        try:
            run_trial_pool(specs, work, total=total, jobs=jobs, stop=stop, tally=tally, emit=s.log.emit,
                           containment=s.containment, progress=progress, on_stop=on_stop)
        finally:
            done()
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        if hosts is not None:
            hosts.kill()  # whatever happened before they were used (closing twice is harmless)
    finished = sum(tally.outcomes.values())
    report = close_run(s, status, start, trials_total=total, trials_finished=finished,
                       outcomes=dict(tally.outcomes), trials_skipped=tally.skipped,
                       unscored_cases=sorted(unscored))
    if status == "interrupted":
        raise RunInterrupted(
            f"interrupted after {finished}/{total} trials; partial report at {report}; "
            f"continue with: trialhouse run --manifest {manifest_path} --output {output_dir} --resume"
        )
    return RunResult(s.run_id, s.run_dir, s.log.path, report, dict(tally.outcomes), status, tally.lines,
                     skipped=len(before.finished), refused=s.refused, isolated=s.containment.backend.isolated,
                     unscored=unscored, trials_skipped=tally.skipped)
