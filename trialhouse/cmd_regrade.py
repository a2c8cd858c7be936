"""CLI commands for regrades: ``regrade`` (grade an existing run's final states again,
no agent runs; ``runner.regrade``) and ``regrades`` (old and new evaluator outcomes trial
by trial, from the warehouse; ``analysis.regrade``). Thin: parse, call, render."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trialhouse.app import app, echo_json, json_option, option, warehouse_option
from trialhouse.render import View
from trialhouse.selection import csv_option

Many = tuple[str, ...]


@app.command()
@option("--manifest", "-m", type=click.Path(path_type=Path), required=True,
        help="Manifest whose current graders grade the final states (the cases' commits must match).")
@option("--from", "source", type=click.Path(path_type=Path), required=True,
        help="The run directory whose trials are graded again (its events.jsonl and trials/).")
@option("--output", "-o", type=click.Path(path_type=Path), required=True,
        help="The regrade's own run directory (must be new or empty).")
@option("--config", multiple=True, help="Only this configuration: variant name, config id or prefix (repeatable).")
@option("--case", multiple=True, help="Only this case (repeatable).")
@option("--jobs", "-j", type=click.IntRange(1, 256), default=1, help="Trials graded concurrently.")
@option("--repeats", type=click.IntRange(1, 20), default=None,
        help="Repeats of each control of the new evaluator; default: the manifest's control_repeats.")
@option("--no-progress", is_flag=True, help="No progress bar.")
@json_option()
def regrade(manifest: Path, source: Path, output: Path, config: Many, case: Many, jobs: int,
            repeats: int | None, no_progress: bool, json_out: bool) -> None:
    """Grade the final states of an existing run's trials with the manifest's current graders; no agent runs.

    Writes a new run: the new evaluator's controls first, then each trial's final state
    (rebuilt from its changes.patch and proven against its recorded tree) graded as a
    trial is, linked to the original (regraded_from), with the original's usage, cost,
    steps and times. Trials whose final state was not kept are listed, never guessed.
    Exits 1 when the new evaluator leaves a case unscored.

    Example: trialhouse regrade --manifest demo/corpus/manifest.json --from demo/runs/main --output demo/runs/regrade
    """
    grade_again(manifest, source, output, config, case, jobs, repeats, no_progress, json_out)


def grade_again(manifest: Path, source: Path, output: Path, config: Many, case: Many, jobs: int,
                repeats: int | None, no_progress: bool, json_out: bool, tier: str | None = None) -> None:
    """``regrade`` and ``run --tier scheduled`` (``tier``): the regrade run, then its result."""
    from analysis.regrade import change_sentence
    from runner.regrade import regrade_run

    progress = not no_progress and not json_out
    res = regrade_run(manifest, source, output, configs=config, cases=case, jobs=jobs, progress=progress,
                      repeats=repeats, on_line=None if progress or json_out else click.echo,
                      tier="scheduled" if tier == "scheduled" else None)
    graded = [t for t in res.trials if t.new is not None]
    sentence = change_sentence(res.transitions, len(graded))
    if json_out:
        echo_json({"run_id": res.run_id, "run_dir": str(res.run_dir), "regrade_of": res.regrade_of,
                   "events": str(res.events_path), "report": str(res.report_path), "sentence": sentence,
                   "trials": [{"trial_id": t.trial_id, "case_id": t.case_id, "variant": t.variant, "old": t.old,
                               "new": t.new, "not_regraded": t.why or None} for t in res.trials],
                   "unscored_cases": res.unscored, "isolated": res.isolated})
    else:
        if not res.isolated:
            click.echo("warning: isolation backend 'none': graders were NOT isolated", err=True)
        click.echo(f"regrade {res.run_id} of run {res.regrade_of}: {sentence}")
        for t in res.trials:
            if t.new is not None and t.new != t.old:
                click.echo(f"  {t.trial_id}: {t.old} → {t.new}")
        if res.not_regraded:
            click.echo(f"not graded again: {len(res.not_regraded)} trial(s):", err=True)
            for t in res.not_regraded:
                click.echo(f"  {t.trial_id}: {t.why}", err=True)
        for case_id, why in sorted(res.unscored.items()):
            click.echo(f"not scored under the new evaluator: {case_id}: {why}", err=True)
        click.echo(f"events {res.events_path}; report {res.report_path}")
    if res.unscored:
        raise click.exceptions.Exit(1)


def regrades_view(r: Any) -> View:
    """Per regrade run: its sentence, then the trials whose outcome changed, then those not regraded."""
    from analysis.document import Table, columns

    tables = []
    for run in r.runs:
        changed = [t for t in run.trials if t.changed]
        tables.append(Table(
            f"Outcomes changed by regrade {run.run_id}",
            columns(["trial", "case", "configuration", "rep", "old", "new"], [False, False, False, True, False, False]),
            [[t.trial_id, t.case_id, t.variant or t.config_id[:12], str(t.repetition), t.old or "-", t.new or "-"]
             for t in changed]))
        if run.not_regraded:
            tables.append(Table(
                f"Not graded again by {run.run_id}",
                columns(["trial", "case", "configuration", "original outcome", "why"]),
                [[str(n[k] or "-") for k in ("trial_id", "case_id", "variant", "original_outcome", "reason")]
                 for n in run.not_regraded]))
    return View(lines=[run.sentence() for run in r.runs], tables=tables, notes=list(r.warnings))


@app.command()
@warehouse_option
@option("--run", multiple=True, help="A regrade run, or a run that was regraded (repeatable; default: every regrade).")
@json_option()
@csv_option
def regrades(warehouse: Path, run: Many, json_out: bool, csv_out: bool) -> None:
    """Old and new evaluator outcomes, trial by trial, of each regrade run ("regrade changed 7 of 40 outcomes: …").

    Example: trialhouse regrades --warehouse demo/warehouse/trialhouse.duckdb
    """
    from analysis.regrade import regrades as ask
    from trialhouse import selection
    from trialhouse.render import emit, output_format

    fmt = output_format(json_out, csv_out)
    result = selection.ask(warehouse, ask, list(run))
    emit(result, regrades_view, fmt, head={"runs": list(run)})
