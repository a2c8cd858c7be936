"""CLI commands for the statistics no other tool ships: ``noise``, ``rank`` and ``plan``.

Each parses its options, asks one library function and hands the typed result to
``trialhouse.render`` (terminal table, ``--json`` or ``--csv``); layouts are in
``trialhouse.views``. Library code is imported inside each command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trialhouse import selection
from trialhouse.app import app, json_option, option, warehouse_option
from trialhouse.selection import csv_option, filter_options


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
@csv_option
def noise(warehouse: Path, json_out: bool, csv_out: bool, **sel: Any) -> None:
    """Noise decomposition per configuration: repetition (within-task) vs between-task variance, and the SE with more repetitions.

    Example: trialhouse noise --warehouse w.duckdb --run r1
    """
    from analysis.noise import noise as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    selection.show(selection.ask(warehouse, ask, filters), "noise", fmt, filters)


@app.command()
@warehouse_option
@option("--seed", type=int, default=20260601, help="Seed of the bootstrap over tasks.")
@option("--resamples", type=click.IntRange(100, 100_000), default=1000,
        help="Bootstrap resamples.")
@filter_options(by=False)
@json_option()
@csv_option
def rank(warehouse: Path, seed: int, resamples: int, json_out: bool, csv_out: bool,
         **sel: Any) -> None:
    """Leaderboard per task universe: ranks by mean task rate with bootstrap rank intervals; overlapping intervals are statistical ties.

    Example: trialhouse rank --warehouse w.duckdb --universe acme-bugs-v1
    """
    from analysis.ranks import ranks as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    result = selection.ask(warehouse, ask, filters, seed=seed, resamples=resamples)
    selection.show(result, "ranks", fmt, filters)


@app.command()
@warehouse_option
@option("--baseline", help="Pilot baseline (as compare: variant name or config id).")
@option("--candidate", help="Pilot candidate (as compare).")
@option("--between", type=float,
        help="Between-task variance of the per-task difference (instead of a pilot).")
@option("--within", type=float,
        help="Within-task (per repetition) variance of the difference (with --between).")
@option("--tasks", type=click.IntRange(min=2), help="Tasks of the design (default: the pilot's).")
@option("--reps", type=click.FloatRange(min=1), help="Repetitions per task (default: the pilot's).")
@option("--alpha", type=float, default=0.05, help="Two-sided significance level.")
@option("--power", type=float, default=0.8, help="Power to reach.")
@option("--target", type=float,
        help="Difference in acceptance rate to detect, e.g. 0.05: tasks × repetitions needed.")
@filter_options(by=False)
@json_option()
@csv_option
def plan(warehouse: Path, baseline: str | None, candidate: str | None, between: float | None,
         within: float | None, tasks: int | None, reps: float | None, alpha: float,
         power: float, target: float | None, json_out: bool, csv_out: bool,
         **sel: Any) -> None:
    """Power planner for a paired comparison: the minimum detectable difference at tasks × repetitions, and what a target difference needs.

    From a pilot in the warehouse (two configurations) or from --between/--within.

    Example: trialhouse plan --warehouse w.duckdb --baseline base --candidate new --target 0.05
    """
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    if (between is None) != (within is None):
        raise click.UsageError("give both --between and --within, or neither (to use a pilot)")
    if between is not None and within is not None:
        from analysis.plan import plan_components

        if tasks is None:
            raise click.UsageError("--between/--within need --tasks (the design's task count)")
        result = plan_components(between, within, tasks, reps or 1, alpha, power, target)
    else:
        from analysis.plan import plan as ask

        result = selection.ask(warehouse, ask, filters, baseline, candidate, tasks, reps, alpha,
                      power, target)
    selection.show(result, "plan", fmt, filters)
