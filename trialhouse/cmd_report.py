"""CLI commands for the report area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path

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
@json_option()
def report(output: Path, warehouse: Path, run: tuple[str, ...], since: str | None, until: str | None,
           baseline: str | None, candidate: tuple[str, ...], previous_period: bool,
           title: str | None, json_out: bool) -> None:
    """Write an offline HTML report (plus Markdown, JSON and chart PNG/SVG) for runs or a time window.

    The headline and the comparison are compare's: same baseline, candidates and Holm family.

    Example: trialhouse report --warehouse demo/warehouse/trialhouse.duckdb --output reports/2026-11-30 --since 2026-11-23 --until 2026-11-30 --previous-period
    """
    from analysis.report import write_report

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
    )
    if json_out:
        echo_json(
            {
                "html": str(paths.html),
                "markdown": str(paths.markdown),
                "json": str(paths.json),
                "charts": {n: {k: str(v) for k, v in p.items()} for n, p in paths.charts.items()},
            }
        )
    else:
        click.echo(f"report: {paths.html}")
        click.echo(f"markdown: {paths.markdown}")
        click.echo(f"json: {paths.json}")
        click.echo(f"charts: {len(paths.charts)} (PNG and SVG in {paths.directory / 'charts'})")
