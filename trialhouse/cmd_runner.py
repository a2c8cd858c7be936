"""CLI commands for the runner area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trialhouse.app import CommandError, JsonOpt, app, echo_json

ManifestOpt = Annotated[Path, typer.Option("--manifest", "-m", help="Manifest JSON file.")]


@app.command()
def validate(manifest: ManifestOpt, json_out: JsonOpt = False) -> None:
    """Check a manifest: shapes, ranges, ids, input paths, commits, reference patches.

    Prints every problem as `<location>: <message>`; exit 0 when valid, 2 when not.

    Example: trialhouse validate --manifest demo/corpus/manifest.json
    """
    from runner.validate import validate_manifest

    report = validate_manifest(manifest)
    if json_out:
        echo_json({"ok": report.ok, "problems": [
            {"location": p.location, "message": p.message} for p in report.problems]})
    elif report.ok:
        typer.echo(f"{manifest}: valid ({len(report.manifest.cases)} cases, "  # type: ignore[union-attr]
                   f"{len(report.manifest.variants)} variants)")  # type: ignore[union-attr]
    else:
        typer.echo(f"{manifest}: {len(report.problems)} problem(s)", err=True)
        for p in report.problems:
            typer.echo(f"{p.location}: {p.message}")
    if not report.ok:
        raise typer.Exit(2)


@app.command()
def run(
    manifest: ManifestOpt,
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (must be new or empty).")],
    validation_only: Annotated[bool, typer.Option("--validation-only", help="Only run the negative/positive controls; never invokes an agent.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, max=256, help="Trials run concurrently.")] = 1,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --output.")] = False,
    repeats: Annotated[int, typer.Option("--repeats", min=1, max=10, help="Control repetitions (flaky detection).")] = 2,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Run controls (--validation-only) or all trials: cases × variants × repetitions.

    Writes events.jsonl, per-trial evidence and report.json into --output.
    Exits 1 when a case fails its controls, 130 on Ctrl-C (resume with --resume).

    Example: trialhouse run --manifest demo/corpus/manifest.json --output demo/runs/r1 --jobs 4
    """
    from runner.run import run_controls, run_trials

    progress = not no_progress and not json_out
    if validation_only:
        if resume:
            raise CommandError("--resume does not apply to --validation-only runs")
        res = run_controls(manifest, output, jobs=jobs, repeats=repeats, progress=progress)
        if json_out:
            echo_json({"run_id": res.run_id, "run_dir": str(res.run_dir), "ok": res.ok,
                       "report": str(res.report_path), "cases": res.cases})
        else:
            bad = [c for c in res.cases if not c["ok"]]
            typer.echo(f"controls: {len(res.cases) - len(bad)}/{len(res.cases)} cases ok; "
                       f"events {res.events_path}; report {res.report_path}")
        if not res.ok:
            raise typer.Exit(1)
        return
    result = run_trials(manifest, output, jobs=jobs, resume=resume, progress=progress)
    if json_out:
        echo_json({"run_id": result.run_id, "run_dir": str(result.run_dir),
                   "events": str(result.events_path), "report": str(result.report_path),
                   "outcomes": result.outcomes, "skipped": result.skipped})
        return
    if not progress:
        for line in result.lines:
            typer.echo(line)
    summary = " ".join(f"{k}={v}" for k, v in sorted(result.outcomes.items()))
    typer.echo(f"run {result.run_id}: {summary}")
    typer.echo(f"events {result.events_path}; report {result.report_path}")


@app.command()
def schema(which: Annotated[str, typer.Argument(help="events or manifest")]) -> None:
    """Print the JSON Schema of the event stream or of the manifest.

    Example: trialhouse schema events > runner/schemas/events.v1.json
    """
    import json

    if which == "events":
        from runner.events import events_json_schema as fn
    elif which == "manifest":
        from runner.manifest import manifest_json_schema as fn
    else:
        raise CommandError(f"unknown schema {which!r}; use events or manifest")
    typer.echo(json.dumps(fn(), indent=2, sort_keys=True))


@app.command()
def example(directory: Annotated[Path, typer.Argument(help="New or empty directory.")]) -> None:
    """Write the example corpus (git repository, manifest, graders, patches) into DIR.

    Example: trialhouse example demo/corpus
    """
    from runner.example import write_example

    path = write_example(directory)
    typer.echo(f"wrote {path}")
    typer.echo(f"next: trialhouse validate --manifest {path}")
