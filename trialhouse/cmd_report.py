"""CLI commands for the report area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trialhouse.app import app, echo_json, json_option, listed, option, warehouse_option


@app.command()
@option("--output", "-o", type=click.Path(path_type=Path), required=True,
        help="Directory to write report.html/.md/.json and charts/ into.")
@warehouse_option
@option("--run", metavar="RUN_ID", multiple=True, help="Run id to include (repeatable; default: all).")
@option("--since", help="Window start, ISO date or time (UTC), inclusive.")
@option("--until", help="Window end, ISO date or time (UTC), exclusive.")
@option("--baseline", help="Baseline configuration: variant name or config id (prefix); default: "
                           "the first variant that is not a null/reference baseline, as compare.")
@option("--candidate", multiple=True,
        help="Candidate configuration (repeatable; default: every non-baseline, as compare).")
@option("--previous-period", is_flag=True,
        help="Also compare with the window of the same length before --since.")
@option("--title", help="Report title.")
@option("--config", multiple=True, help="Only these configurations (repeatable, as summarize).")
@option("--model", multiple=True, help="Only configurations of these models (repeatable).")
@option("--harness", multiple=True, help="Only configurations of these harnesses (repeatable).")
@option("--source", multiple=True, help="Only runs of these source formats (repeatable).")
@option("--benchmark", multiple=True, help="Only cases with these benchmark labels (repeatable).")
@option("--universe", multiple=True, help="Only these task universes (repeatable).")
@option("--include-unvalidated", is_flag=True,
        help="Also count cases whose controls failed or disagreed (labelled in the report).")
@option("--allow-evaluator-change", is_flag=True,
        help="Compare a case across evaluator fingerprints (refused by default; labelled).")
@option("--viewer-url", metavar="URL",
        help="Link each trial id to its page in a running trial viewer (trialhouse view), "
             "e.g. http://127.0.0.1:8765.")
@option("--bundle", type=click.Path(path_type=Path, file_okay=False),
        help="Link each trial id to its page in a viewer bundle (trialhouse view --bundle DIR), "
             "relative to the report.")
@option("--rules", "rules", type=click.Path(path_type=Path),
        help="Stop-rules file: fired rules open the report with their owners (trialhouse rules check).")
@option("--pool-conditions", is_flag=True,
        help="Pair configurations that ran under different named conditions (labelled; left "
             "out of the comparison by default).")
@option("--accept-drift", metavar="REASON",
        help="Acknowledge canary drift in the period comparison (recorded in the warehouse with "
             "the reason); without it a drift withholds the period's verdicts and the exit is 1.")
@json_option()
def report(output: Path, warehouse: Path, run: tuple[str, ...], since: str | None, until: str | None,
           baseline: str | None, candidate: tuple[str, ...], previous_period: bool,
           title: str | None, include_unvalidated: bool, allow_evaluator_change: bool,
           viewer_url: str | None, bundle: Path | None, rules: Path | None,
           pool_conditions: bool, accept_drift: str | None, json_out: bool,
           **selectors: tuple[str, ...]) -> None:
    """Write an offline HTML report (plus Markdown, JSON and chart PNG/SVG) for runs or a time window.

    The headline and the comparison are compare's: same baseline, candidates and Holm family.

    Example: trialhouse report --warehouse demo/warehouse/trialhouse.duckdb --output reports/2026-11-30 --since 2026-11-23 --until 2026-11-30 --previous-period
    """
    import viewer
    from analysis.report import write_report
    from ingest.decisions import record_drift_decision
    from trialhouse.paths import creatable

    if viewer_url and bundle:
        raise click.UsageError("choose one of --viewer-url and --bundle")
    if viewer_url and not viewer_url.startswith(("http://", "https://")):
        raise click.BadParameter(f"{viewer_url!r}: give the viewer's http:// or https:// "
                                 "address (trialhouse view prints it)", param_hint="--viewer-url")
    if bundle is not None and not (bundle / "index.html").is_file():
        click.echo(f"note: {bundle} holds no viewer bundle yet; write it with: trialhouse view "
                   f"--warehouse {warehouse} --bundle {bundle}", err=True)
    pages = (viewer.trial_links(viewer_url=viewer_url, bundle=bundle, report_dir=output)
             if viewer_url or bundle is not None else None)
    creatable(output, "--output", "dir")
    paths = write_report(
        warehouse,
        output,
        runs=listed(run),
        since=since,
        until=until,
        baseline=baseline,
        candidates=listed(candidate),
        previous_period=previous_period,
        title=title,
        selectors={k: v for k, v in selectors.items() if v},
        include_unvalidated=include_unvalidated,
        allow_evaluator_change=allow_evaluator_change,
        trial_pages=pages,
        rules=rules,
        pool_conditions=pool_conditions,
        accept_drift=accept_drift,
        record_drift=lambda row: record_drift_decision(warehouse, row),
    )
    _said(paths, json_out, accept_drift)


def _said(paths: Any, json_out: bool, accept_drift: str | None) -> None:
    """What was written; exit 1 when canary drift withholds the period's verdicts."""
    if json_out:
        echo_json(
            {
                "html": str(paths.html),
                "markdown": str(paths.markdown),
                "json": str(paths.json),
                "charts": {n: {k: str(v) for k, v in p.items()} for n, p in paths.charts.items()},
                "blocked": paths.blocked,
            }
        )
    else:
        click.echo(f"report: {paths.html}")
        click.echo(f"markdown: {paths.markdown}")
        click.echo(f"json: {paths.json}")
        click.echo(f"charts: {len(paths.charts)} (PNG and SVG in {paths.directory / 'charts'})")
    if accept_drift is not None and not json_out:
        click.echo(f"drift acknowledged (recorded in drift_decisions): {accept_drift}")
    if paths.blocked:
        click.echo(f"blocked: {paths.blocked}", err=True)
        raise click.exceptions.Exit(1)
