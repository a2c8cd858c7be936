"""CLI commands for the report area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trialhouse.app import DEFAULT_WAREHOUSE, JsonOpt, WarehouseOpt, app, echo_json


@app.command()
def report(
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory to write report.html/.md/.json and charts/ into.")],
    warehouse: WarehouseOpt = DEFAULT_WAREHOUSE,
    run: Annotated[list[str] | None, typer.Option("--run", metavar="RUN_ID", help="Run id to include (repeatable; default: all).")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Window start, ISO date or time (UTC), inclusive.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Window end, ISO date or time (UTC), exclusive.")] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Baseline configuration: variant name or config id (prefix).")
    ] = None,
    previous_period: Annotated[
        bool,
        typer.Option("--previous-period", help="Also compare with the window of the same length before --since."),
    ] = False,
    title: Annotated[str | None, typer.Option("--title", help="Report title.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Write an offline HTML report (plus Markdown, JSON and chart PNG/SVG) for runs or a time window.

    Example: trialhouse report --warehouse demo/warehouse/trialhouse.duckdb --output reports/2026-11-30 --since 2026-11-23 --until 2026-11-30 --previous-period
    """
    from analysis.report import build_report

    paths = build_report(
        warehouse,
        output,
        runs=run or None,
        since=since,
        until=until,
        baseline=baseline,
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
        typer.echo(f"report: {paths.html}")
        typer.echo(f"markdown: {paths.markdown}")
        typer.echo(f"json: {paths.json}")
        typer.echo(f"charts: {len(paths.charts)} (PNG and SVG in {paths.directory / 'charts'})")
