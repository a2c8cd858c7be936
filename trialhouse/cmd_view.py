"""``trialhouse view``: the trial viewer, served locally or written as a static bundle
(thin: parse options, call ``viewer.serve`` or ``viewer.bundle``, print)."""

from __future__ import annotations

from pathlib import Path

import click

from trialhouse.app import app, echo_json, json_option, option, warehouse_option


@app.command()
@warehouse_option
@option("--port", type=click.IntRange(0, 65535), default=0, help="Port to serve on (0: a free one).")
@option("--host", default="127.0.0.1", help="Address to serve on; beyond the loopback only with --allow-remote.")
@option("--allow-remote", is_flag=True, help="Allow a --host that is not a loopback address (no login: say who may reach it).")
@option("--no-open", is_flag=True, help="Do not open a browser; just print the URL.")
@option("--runs-root", "runs_roots", multiple=True, type=click.Path(path_type=Path),
        help="Where run directories are when the warehouse's recorded paths do not lead there "
             "(a run directory or a directory of runs; repeatable).")
@option("--reviews", type=click.Path(path_type=Path, dir_okay=False),
        help="JSONL file that reviews recorded on trial pages are appended to (without it the form is read-only).")
@option("--rubric", type=click.Path(path_type=Path, exists=True, dir_okay=False),
        help="Review rubric (YAML: id, version, reason_codes, items) for the form's anchored grid.")
@option("--bundle", type=click.Path(path_type=Path, file_okay=False),
        help="Write the pages as a static site into this directory instead of serving them.")
@option("--bundle-max-mb", type=click.IntRange(1, 100_000), default=200,
        help="Size bound of a bundle; the largest evidence is summarised past it.")
@json_option("json")
def view(warehouse: Path, port: int, host: str, allow_remote: bool, no_open: bool, runs_roots: tuple[Path, ...],
         reviews: Path | None, rubric: Path | None, bundle: Path | None, bundle_max_mb: int, json: bool) -> None:
    """Browse runs, configurations, tasks and trials (diffs, grader output, trajectories,
    judgments, reviews) in a local viewer, or write them as a static bundle.

    Example: trialhouse view -w demo/warehouse/trialhouse.duckdb --runs-root demo/runs --reviews reviews.jsonl --rubric demo/corpus/reviews/grid.yaml
    """
    import viewer
    from trialhouse.paths import creatable

    if bundle is not None:
        creatable(bundle, "--bundle", "dir")
    if reviews is not None:
        creatable(reviews, "--reviews", "file")
    if bundle is not None:
        result = viewer.bundle(warehouse, bundle, runs_roots=runs_roots, rubric=rubric,
                               max_bytes=bundle_max_mb * 1024 * 1024)
        if json:
            echo_json(result.as_dict())
            return
        click.echo(f"bundle: {bundle / 'index.html'}  ({result.pages:,} pages, {result.bytes / 1e6:.1f} MB)")
        click.echo(f"trial pages: {result.trial_pages:,} ({result.summarised:,} summarised, "
                   f"{result.facts_only:,} facts only, to stay within {bundle_max_mb} MB); "
                   f"side-by-side pages: {result.compare_pages:,}")
        if result.largest and (result.summarised or result.facts_only):
            click.echo("largest evidence: " + ", ".join(f"{t} ({b:,} bytes of changes.patch)" for b, t in result.largest))
        return

    def started(url: str) -> None:
        click.echo(f"trialhouse view: {url}  (Ctrl-C to stop)")
        if reviews is not None:
            click.echo(f"reviews are appended to {reviews}; ingest them with: trialhouse review import "
                       f"{reviews}{f' --rubric {rubric}' if rubric else ''} --warehouse {warehouse}")
        if not no_open:
            import threading
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    viewer.serve(warehouse, host=host, port=port, allow_remote=allow_remote, runs_roots=runs_roots,
                 reviews=reviews, rubric=rubric, started=started, warn=lambda m: click.echo(m, err=True))
