"""CLI commands for the runner area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trialhouse.app import Choice, app, echo_json, json_option, option

manifest_option = option("--manifest", "-m", type=click.Path(path_type=Path), required=True,
                         help="Manifest JSON file.")


@app.command()
@manifest_option
@json_option()
def validate(manifest: Path, json_out: bool) -> None:
    """Check a manifest: shapes, ranges, ids, input paths, commits, reference patches, agent CLIs.

    Prints every problem as `<location>: <message>`; exit 0 when valid, 2 when not.

    Example: trialhouse validate --manifest demo/corpus/manifest.json
    """
    from runner.validate import validate_manifest

    report = validate_manifest(manifest)
    if json_out:
        echo_json({"ok": report.ok, "problems": [
            {"location": p.location, "message": p.message} for p in report.problems], "notes": report.notes})
    elif report.ok:
        click.echo(f"{manifest}: valid ({len(report.manifest.cases)} cases, "  # type: ignore[union-attr]
                   f"{len(report.manifest.variants)} variants)")  # type: ignore[union-attr]
        for note in report.notes:
            click.echo(note)
    else:
        click.echo(f"{manifest}: {len(report.problems)} problem(s)", err=True)
        for p in report.problems:
            click.echo(f"{p.location}: {p.message}")
    if not report.ok:
        raise click.exceptions.Exit(2)


@app.command()
@manifest_option
@option("--output", "-o", type=click.Path(path_type=Path), required=True,
        help="Run directory (must be new or empty).")
@option("--validation-only", is_flag=True,
        help="Only run the negative/positive controls; never invokes an agent.")
@option("--jobs", "-j", type=click.IntRange(1, 256), default=1, help="Trials run concurrently.")
@option("--resume", is_flag=True, help="Continue an interrupted run in --output.")
@option("--repeats", type=click.IntRange(1, 20), default=None,
        help="Repeats of each control (flaky detection); default: the manifest's control_repeats (5).")
@option("--controls", "controls_dir", type=click.Path(path_type=Path), default=None,
        help="Reuse the controls of this --validation-only run (same manifest and inputs).")
@option("--score-unvalidated", is_flag=True,
        help="Also run the trials of cases that fail their controls (recorded as not scored).")
@option("--executor", type=Choice(["local", "ray"]), default="local",
        help="Where trials run: this machine's thread pool, or one Ray task per trial "
             "(needs the extra: pip install 'trialhouse[ray]'; docs/scale.md).")
@option("--ray-address", default=None, metavar="ADDR",
        help="Ray cluster to join (host:6379 of 'ray start --head'); default: a local instance.")
@option("--rerun", multiple=True, type=Choice(["infra_error", "invalid", "budget_exhausted"]),
        help="With --resume: also re-run finished trials whose outcome was this (repeatable).")
@option("--tier", type=Choice(["scheduled"]), default=None,
        help="scheduled: grade the kept final states of the run --from names with every check tier, "
             "the scheduled checks included (a regrade: no agent runs; docs/rollout.md).")
@option("--from", "source", type=click.Path(path_type=Path), default=None,
        help="With --tier scheduled: the run directory whose final states are graded.")
@option("--no-progress", is_flag=True, help="No progress bar.")
@json_option()
def run(manifest: Path, output: Path, validation_only: bool, jobs: int, resume: bool,
        repeats: int | None, controls_dir: Path | None, score_unvalidated: bool, executor: str,
        ray_address: str | None, rerun: tuple[str, ...], tier: str | None, source: Path | None,
        no_progress: bool, json_out: bool) -> None:
    """Run controls (--validation-only) or all trials: cases × variants × repetitions.

    Every case's controls (negative + positive, repeated) come first; a case that fails
    them, or whose criterion disagrees with itself, is not scored and its trials are
    skipped. Writes events.jsonl, per-trial evidence and report.json into --output.
    Exits 1 when a case fails its controls, 130 on Ctrl-C (resume with --resume).

    Example: trialhouse run --manifest demo/corpus/manifest.json --output demo/runs/r1 --jobs 4
    """
    if tier is not None or source is not None:
        return _scheduled(manifest, output, source, tier, jobs, repeats, no_progress, json_out)
    _check_run_options(validation_only, resume, bool(controls_dir or score_unvalidated), rerun,
                       executor, ray_address)
    from runner.controls import run_controls
    from runner.run import run_trials
    from trialhouse.paths import creatable

    creatable(output, "--output", "dir")

    progress = not no_progress and not json_out
    if validation_only:
        res = run_controls(manifest, output, jobs=jobs, repeats=repeats, progress=progress)
        if json_out:
            echo_json({"run_id": res.run_id, "run_dir": str(res.run_dir), "ok": res.ok,
                       "report": str(res.report_path), "cases": res.cases})
        else:
            bad = [c for c in res.cases if not c["ok"]]
            click.echo(f"controls: {len(res.cases) - len(bad)}/{len(res.cases)} cases ok; "
                       f"events {_shown(res.events_path)}; report {_shown(res.report_path)}")
        if not res.ok:
            raise click.exceptions.Exit(1)
        return
    result = run_trials(manifest, output, jobs=jobs, resume=resume, progress=progress,
                        controls_dir=controls_dir, repeats=repeats, score_unvalidated=score_unvalidated,
                        executor=executor, ray_address=ray_address, rerun=rerun)
    if json_out:
        echo_json({"run_id": result.run_id, "run_dir": str(result.run_dir),
                   "events": str(result.events_path), "report": str(result.report_path),
                   "outcomes": result.outcomes, "skipped": result.skipped,
                   "refused_lines": [{"line": n, "reason": why} for n, why in result.refused],
                   "isolated": result.isolated, "unscored_cases": result.unscored,
                   "trials_skipped": result.trials_skipped})
        if result.unscored:
            raise click.exceptions.Exit(1)
        return
    _print_run(result, progress)


def _scheduled(manifest: Path, output: Path, source: Path | None, tier: str | None, jobs: int,
               repeats: int | None, no_progress: bool, json_out: bool) -> None:
    """``run --tier scheduled --from RUN``: the regrade that runs the scheduled checks."""
    from trialhouse.cmd_regrade import grade_again
    from trialhouse.paths import creatable

    if tier is None or source is None:
        raise click.UsageError("--tier scheduled and --from RUN go together: the scheduled checks "
                               "grade the kept final states of an earlier run")
    creatable(output, "--output", "dir")
    grade_again(manifest, source, output, (), (), jobs, repeats, no_progress, json_out, tier)


def _check_run_options(validation_only: bool, resume: bool, scoring_options: bool,
                       rerun: tuple[str, ...], executor: str, ray_address: str | None) -> None:
    """Option combinations that mean nothing, refused before anything runs."""
    if validation_only and resume:
        raise click.UsageError("--resume does not apply to --validation-only runs")
    if validation_only and scoring_options:
        raise click.UsageError("--controls and --score-unvalidated apply to scored runs, not --validation-only")
    if rerun and not resume:
        raise click.UsageError("--rerun applies to --resume (it re-runs trials of an earlier run)")
    if ray_address and executor != "ray":
        raise click.UsageError("--ray-address applies to --executor ray")
    if validation_only and executor != "local":
        raise click.UsageError("--validation-only runs the controls on this machine; drop --executor")


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it is below it (as the user named
    the run directory), else as it is."""
    try:
        return Path(path).resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return Path(path)


def _print_run(result: Any, progress: bool) -> None:
    """The terminal form of a scored run's result; exit 1 when a case was not scored."""
    for number, why in result.refused[:20]:
        click.echo(f"warning: {result.events_path}:{number}: refused on resume: {why}", err=True)
    if len(result.refused) > 20:
        click.echo(f"warning: {len(result.refused) - 20} more refused line(s)", err=True)
    if not result.isolated:
        click.echo("warning: isolation backend 'none': agents and graders were NOT isolated", err=True)
    if not progress:
        for line in result.lines:
            click.echo(line)
    summary = " ".join(f"{k}={v}" for k, v in sorted(result.outcomes.items()))
    click.echo(f"run {result.run_id}: {summary}")
    if result.unscored:
        click.echo(f"not scored: {len(result.unscored)} case(s) failed their controls "
                   f"({result.trials_skipped} trial(s) skipped):", err=True)
        for case_id, why in sorted(result.unscored.items()):
            click.echo(f"  {case_id}: {why}", err=True)
    else:
        click.echo("controls: every case passed; 0 cases not scored")
    click.echo(f"events {_shown(result.events_path)}; report {_shown(result.report_path)}")
    if result.unscored:
        raise click.exceptions.Exit(1)


@app.command()
@click.argument("which", type=Choice(["events", "manifest"]))
def schema(which: str) -> None:
    """Print the JSON Schema of the event stream or of the manifest.

    Example: trialhouse schema events > contract/schemas/events.v1.json
    """
    import json

    if which == "events":
        from contract.events import events_json_schema as fn
    else:
        from runner.manifest import manifest_json_schema as fn
    click.echo(json.dumps(fn(), indent=2, sort_keys=True))


@app.command()
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
def example(directory: Path) -> None:
    """Write the example corpus (git repository, manifest, graders, patches) into DIR.

    DIR must be new or empty.

    Example: trialhouse example demo/corpus
    """
    from runner.example import write_example
    from trialhouse.paths import creatable

    creatable(directory, "DIR", "dir")
    path = write_example(directory)
    shown = directory / path.name  # as the user named it: no absolute path of this machine
    click.echo(f"wrote {shown}")
    click.echo(f"next: trialhouse validate --manifest {shown}")


@app.command()
@click.argument("repo", metavar="REPO", type=click.Path(path_type=Path), default=".")
@option("--output", "-o", type=click.Path(path_type=Path), default=None,
        help="Directory to write (new or empty, outside REPO); default: REPO-trialhouse beside it.")
def init(repo: Path, output: Path | None) -> None:
    """Write a first manifest for your own git repository REPO (default: here).

    One case, a criterion per layer, your `command` agent in two variants and the null and
    reference points, with a README saying what each is. Fill in every `FILL IN:` blank
    (validate names each), then validate, run, ingest and report (docs/runner.md).

    Example: trialhouse init ../my-service --output my-service-trialhouse
    """
    import os

    from runner.scaffold import init_manifest
    from trialhouse.paths import creatable

    top = Path(os.path.normpath(repo.absolute()))
    out = output if output is not None else Path(os.path.relpath(top.parent / f"{top.name}-trialhouse"))
    creatable(out, "--output", "dir")
    made = init_manifest(repo, out)
    others = [str(p.relative_to(out)) for p in made.written if p.name != "manifest.json"]
    click.echo(f"wrote {out / 'manifest.json'} for {repo} at {made.commit[:12]}"
               f" ({made.language or 'language not recognised'}), with {', '.join(others)}")
    if made.uncommitted:
        click.echo(f"note: {made.uncommitted} uncommitted change(s) in {repo} are not part of it "
                   "(it starts from the commit)")
    click.echo(f"next: fill in each FILL IN: blank ({out / 'README.md'} says how), then "
               f"trialhouse validate --manifest {out / 'manifest.json'}")
