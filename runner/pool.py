"""The local pool: trials (and controls) on worker threads, the progress bar, Ctrl-C.

Workers never write ``events.jsonl``: they emit through the driver's ``EventLog``. On
Ctrl-C the pool sets the run's stop flag, kills every agent process and, for a remote
executor, cancels its tasks; the driver then finishes the run as ``interrupted`` and
``--resume`` continues it (docs/runner.md).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from contract.trial_events import TrialFinished
from runner.blame import agent_output_reason
from runner.containment import Containment
from runner.errors import RunnerError
from runner.eventlog import Emit
from runner.procs import kill_all
from runner.trial import TrialInterrupted, TrialSpec


class RunInterrupted(RunnerError):
    """Ctrl-C: the run stopped cleanly; a partial report exists and --resume continues."""

    exit_code = 130


@dataclass
class Tally:
    """What the run's trials came to so far: outcome counts, summary lines, skipped trials."""

    outcomes: Counter[str] = field(default_factory=Counter)
    lines: list[str] = field(default_factory=list)
    skipped: int = 0
    """``trial_skipped`` events of the run (earlier attempts included)."""

    def counts(self) -> str:
        return " ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items()))


def progress_bar(enabled: bool, total: int, label: str) -> tuple[Any, Any]:
    """A rich progress bar on stderr (disabled: draws nothing) and its one task."""
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


def run_pool(items: list[Any], fn: Callable[[Any], Any], jobs: int,
             on_done: Callable[[Any, Future[Any]], None], stop: threading.Event,
             on_stop: Callable[[], None] | None = None) -> None:
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
        # What finished while stopping was written: count it (an interrupted one raises
        # its own TrialInterrupted, which ``on_done`` leaves uncounted).
        for f in [f for f in futures if f.done() and not f.cancelled()]:
            with contextlib.suppress(TrialInterrupted):
                on_done(futures.pop(f), f)
        raise
    pool.shutdown(wait=True)


def _engine_failure(spec: TrialSpec, exc: Exception, emit: Emit) -> tuple[str, str]:
    """Record a trial whose run raised (an engine bug must not lose the run) as
    ``infra_error``, or as ``agent_output_error`` when what the agent left caused it
    (``runner.blame``); returns (outcome, summary line)."""
    charged = agent_output_reason(exc, "finishing the trial")
    outcome = "infra_error" if charged is None else "agent_output_error"
    reason = charged or (str(exc) if isinstance(exc, RunnerError)
                         else f"runner error: {type(exc).__name__}: {exc}")
    line = f"task={spec.case.id} variant={spec.variant.id} rep={spec.repetition} outcome={outcome}"
    emit(TrialFinished, trial_id=spec.trial_id, case_id=spec.case.id,
         variant=spec.variant.id, config_id=spec.config_id,
         repetition=spec.repetition, outcome=outcome, reason=reason,
         attempts=0, duration_s=0.0, line=line,
         cost_budget_status="unlimited" if spec.manifest.max_cost_usd is None else "unknown",
         case_fingerprint=spec.case_fingerprint, scored=spec.scored)
    return outcome, line


def run_trial_pool(specs: list[TrialSpec], work: Callable[[TrialSpec], Any], *, total: int, jobs: int,
                   stop: threading.Event, tally: Tally, emit: Emit, containment: Containment,
                   progress: bool, on_stop: Callable[[], None] | None = None) -> None:
    """Run ``work(spec)`` for every trial with the run's gateway and judges serving (when
    there are trials), counting outcomes into ``tally`` and printing each trial's line.
    ``total`` counts every trial of the run; those not in ``specs`` show as done."""
    bar, task = progress_bar(progress, total, "trials")

    def done(spec: TrialSpec, fut: Future[Any]) -> None:
        try:
            result = fut.result()
        except TrialInterrupted:
            return
        except Exception as exc:  # noqa: BLE001 - an engine bug must not lose the run
            result = None
            outcome, line = _engine_failure(spec, exc, emit)
            tally.outcomes[outcome] += 1
            tally.lines.append(line)
        if result is not None:
            tally.outcomes[result.outcome] += 1
            tally.lines.append(result.line)
            line = result.line
        if progress:
            bar.console.print(line, highlight=False, markup=False, soft_wrap=True)
        bar.update(task, advance=1, outcomes=tally.counts())

    gateway, judges = containment.gateway, containment.judges
    with bar, (gateway if gateway is not None and specs else contextlib.nullcontext()), \
            (judges if judges is not None and specs else contextlib.nullcontext()):
        bar.update(task, completed=total - len(specs), outcomes=tally.counts())
        run_pool(specs, work, jobs, done, stop, on_stop)
