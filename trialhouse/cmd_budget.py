"""CLI commands for budgets and checks: ``budget-curve`` (quality at several budgets) and
``visibility`` (visible and hidden checks apart).

Each parses its options, asks one library function and hands the typed result to
``trialhouse.render``; the tables are ``analysis.layouts``' (the report shows the same
cells). Library code is imported inside each command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trialhouse import selection
from trialhouse.app import app, json_option, option, warehouse_option
from trialhouse.render import View
from trialhouse.selection import csv_option, filter_options


def _curve_view(curve: Any) -> View:
    from analysis import formatting as fmt
    from analysis.layouts import budget_curve_tables

    simulated = any("SIMULATED" in str(r.get("model") or "") for r in curve.rows)
    after = ["SIMULATED agents: these numbers measure the simulator, not a model."] if simulated else []
    return View(tables=budget_curve_tables(curve, fmt.label_with_id), after=after, notes=list(curve.warnings))


def _visibility_view(vis: Any) -> View:
    from analysis import formatting as fmt
    from analysis.layouts import visibility_table

    return View(lines=["A visible check is one the agent could run; the hidden ones decide too. Passing the "
                       "visible checks and failing a hidden one is the over-fitting signal."],
                tables=[visibility_table(vis, fmt.label_with_id)], notes=list(vis.warnings))


@app.command("budget-curve")
@warehouse_option
@option("--seed", type=int, default=20260601,
        help="Seed of the bootstrap intervals of the paired deltas (as compare).")
@option("--allow-evaluator-change", is_flag=True,
        help="Pair a case across evaluator fingerprints (refused by default); the output says so.")
@filter_options(by=False, cost=True)
@json_option()
@csv_option
def budget_curve(warehouse: Path, seed: int, json_out: bool, csv_out: bool, **sel: Any) -> None:
    """Quality at several budgets: each budget sweep's acceptance with its Wilson interval and cost per accepted at every budget, and each step to the next budget paired on the same tasks (sign test, Holm over the sweep).

    A sweep is a variant whose max_cost_usd or timeout_seconds lists several values.

    Example: trialhouse budget-curve --warehouse w.duckdb --run r1
    """
    from analysis.budget_curve import budget_curve as ask
    from trialhouse.render import emit, output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    emit(selection.ask(warehouse, ask, filters, seed=seed), _curve_view, fmt, head={"filters": filters.as_dict()})


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
@csv_option
def visibility(warehouse: Path, json_out: bool, csv_out: bool, **sel: Any) -> None:
    """Visible and hidden checks apart: per configuration, trials passing every check the agent could run and every hidden one, the gap, and the discordant trials (sign test).

    Example: trialhouse visibility --warehouse w.duckdb --run r1
    """
    from analysis.visibility import visibility as ask
    from trialhouse.render import emit, output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    emit(selection.ask(warehouse, ask, filters), _visibility_view, fmt, head={"filters": filters.as_dict()})
