"""``trialhouse regrade``: grade the final states of an existing run's trials with the
manifest's current graders, without running any agent (docs/runner.md, "Regrade").

A regrade is a run of its own (a new run id, ``run_started.regrade_of``): the run's
variants, budgets and stages, the manifest's current cases and graders. It runs the new
evaluator's controls first (a case they leave unscored is not graded again), then grades
each selected trial's final state as a trial is graded (``runner.regrade_trial``). Each
regraded trial links to the original (``trial_finished.regraded_from``) and keeps its
usage, cost, steps and times; the regrade's own time is ``regrade_s``. Trials whose final
state was not kept are listed (``trial_skipped``), never guessed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runner.controls import establish_controls
from runner.errors import RunnerError
from runner.plan import unscored_cases
from runner.pool import RunInterrupted, progress_bar, run_pool
from runner.regrade_source import SourceTrial, manifest_problem, read_source, select
from runner.regrade_trial import Regraded, regrade_trial, skip
from runner.setup import RegradeOf, case_source, close_run, open_run
from runner.trial import TrialInterrupted
from runner.validate import load_valid_manifest


@dataclass
class RegradeResult:
    run_id: str
    run_dir: Path
    events_path: Path
    report_path: Path
    regrade_of: str
    trials: list[Regraded] = field(default_factory=list)
    """Every selected trial: graded again (old → new), carried, or listed with why not."""
    unscored: dict[str, str] = field(default_factory=dict)
    """Case id → why the new evaluator's controls leave it unscored."""
    isolated: bool = True

    @property
    def transitions(self) -> Counter[tuple[str, str]]:
        """(old, new) → trials, for the trials graded again."""
        return Counter((t.old, t.new) for t in self.trials if t.new is not None)

    @property
    def not_regraded(self) -> list[Regraded]:
        return [t for t in self.trials if t.new is None]


def _plan(s: Any, picked: list[SourceTrial], problems: dict[str, str], unscored: dict[str, str],
          out: list[Regraded]) -> list[SourceTrial]:
    """List the trials a regrade cannot grade (``skip``) and return the rest."""
    todo = []
    for t in picked:
        case = t.finished.case_id
        why = problems.get(case) or (f"case not scored under the new evaluator: {unscored[case]}"
                                     if case in unscored else None)
        if why:
            out.append(skip(s, t, why))
        else:
            todo.append(t)
    return todo


def regrade_run(manifest_path: Path, source_dir: Path, output_dir: Path, *, configs: tuple[str, ...] = (),
                cases: tuple[str, ...] = (), jobs: int = 1, progress: bool = True,
                repeats: int | None = None, on_line: Callable[[str], None] | None = None,
                tier: Literal["scheduled"] | None = None) -> RegradeResult:
    """Grade the final states of ``source_dir``'s trials (all, or those of ``configs`` and
    ``cases``) with ``manifest_path``'s graders into the new run ``output_dir``; ``tier``
    ``scheduled``: with the scheduled checks too (``trialhouse run --tier scheduled``)."""
    start = time.monotonic()
    source = read_source(source_dir)
    picked = select(source, configs, cases)
    manifest = load_valid_manifest(manifest_path)
    base = Path(manifest_path).resolve().parent
    by_id = {c.id: c for c in manifest.cases}
    case_ids = sorted({t.finished.case_id for t in picked})
    commits = {cid: case_source(manifest, base, by_id[cid])[1] if cid in by_id else None for cid in case_ids}
    problems = {cid: why for cid in case_ids if (why := manifest_problem(source, manifest, cid, commits[cid]))}
    if len(problems) == len(case_ids):
        raise RunnerError(f"{manifest_path}: cannot grade any trial of {source.run_id} again: "
                          + "; ".join(problems.values()))
    s = open_run(manifest_path, output_dir, resume=False, validation_only=False, jobs=jobs,
                 control_repeats=repeats,
                 regrade=RegradeOf(source.run_id, source.head, tuple(c for c in case_ids if c not in problems), tier))
    stop = threading.Event()
    out: list[Regraded] = []
    status, unscored = "completed", {}
    bar, task = progress_bar(progress, len(picked), "regrade")

    def done(t: SourceTrial, fut: Future[Any]) -> None:
        try:
            res: Regraded = fut.result()
        except TrialInterrupted:
            return
        except Exception as exc:  # noqa: BLE001 - an engine bug must not lose the regrade
            res = skip(s, t, f"regrade error: {type(exc).__name__}: {exc}")
        out.append(res)
        if on_line is not None and res.line:
            on_line(res.line)
        bar.update(task, advance=1)

    try:
        validated = establish_controls(s, jobs, stop, repeats or s.manifest.control_repeats, None)
        unscored = unscored_cases(validated)
        todo = _plan(s, picked, problems, unscored, out)
        with bar:
            bar.update(task, completed=len(out))
            run_pool(todo, lambda t: regrade_trial(s, source, t, validated[t.finished.case_id],
                                                   commits[t.finished.case_id] or "", stop, tier), jobs, done,
                     stop)
    except KeyboardInterrupt:
        status = "interrupted"
    outcomes = Counter(r.new for r in out if r.new is not None)
    report = close_run(s, status, start, trials_total=len(picked), trials_finished=sum(outcomes.values()),
                       outcomes=dict(outcomes), trials_skipped=len([r for r in out if r.new is None]),
                       unscored_cases=sorted(unscored))
    if status == "interrupted":
        raise RunInterrupted(f"interrupted after {sum(outcomes.values())}/{len(picked)} trials; partial "
                             f"report at {report}; run the regrade again into a new --output")
    order = {t.trial_id: i for i, t in enumerate(picked)}
    out.sort(key=lambda r: order[r.trial_id])
    return RegradeResult(s.run_id, s.run_dir, s.log.path, report, source.run_id, out, unscored,
                         s.containment.backend.isolated)
