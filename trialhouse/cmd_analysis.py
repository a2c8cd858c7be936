"""CLI commands for the analysis area: each parses its options, asks one library function,
and hands the typed result to ``trialhouse.render`` (terminal table, ``--json`` or ``--csv``).

Library code is imported inside each command so ``trialhouse --help`` stays fast.
JSON keys are documented in docs/analysis.md; terminal layouts are in ``trialhouse.views``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trialhouse import selection
from trialhouse.app import Choice, app, json_option, listed, option, warehouse_option
from trialhouse.selection import csv_option, filter_options

Many = tuple[str, ...]  # a repeatable option's values (empty when not given)

# Same values as analysis.pareto.X_CHOICES (tests/test_cli_docs.py checks).
PARETO_X = ("cost_per_accepted", "cost_per_trial", "median_steps")


@app.command()
@warehouse_option
@filter_options(cost=True)
@option("--format", "layout", type=Choice(("table", "seed")), default="table",
        help="table | seed (tab-separated columns of the per-run summary script).")
@option("--rates", is_flag=True,
        help="The dashboard rates instead: target-fix, regression-free and accepted rates and "
             "review minutes per accepted result, side by side (docs/rollout.md).")
@option("--checks", is_flag=True,
        help="Check results instead, by --by tier (default) or a bank tag: tag.subsystem, "
             "tag.mechanism, tag.consequence, tag.incident (docs/rollout.md).")
@json_option()
@csv_option
def summarize(warehouse: Path, by: Many, layout: str, rates: bool, checks: bool, json_out: bool,
              csv_out: bool, **sel: Any) -> None:
    """Per-configuration table on the common tasks of each task universe: pass rate with Wilson and task-clustered intervals, cost, latency, flags.

    Prints the task set of each universe (the same one consistency uses).

    Example: trialhouse summarize --warehouse w.duckdb --run r1 --by task_class
    """
    from analysis.seed import seed_lines
    from analysis.summary import summarize as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    if rates or checks:
        _rollout_summary(warehouse, filters, listed(by) or [], layout, rates, checks, fmt)
        return
    result = selection.ask(warehouse, ask, filters, by=listed(by))
    if layout == "seed" and fmt == "table":
        click.echo("\n".join(seed_lines(result)))
        return
    selection.show(result, "summary", fmt, filters)


def _rollout_summary(warehouse: Path, filters: Any, by: list[str], layout: str, rates: bool,
                     checks: bool, fmt: str) -> None:
    """``summarize --rates`` (the dashboard) or ``summarize --checks`` (by tier or bank tag)."""
    if layout != "table" or (rates and (by or checks)) or len(by) > 1:
        raise click.UsageError("--rates takes no --by; --checks takes one --by (tier or tag.NAME); "
                               "neither takes --format seed")
    if rates:
        from analysis.dashboard import dashboard

        selection.show(selection.ask(warehouse, dashboard, filters), "dashboard", fmt, filters)
        return
    from analysis.check_tiers import check_results

    result = selection.ask(warehouse, check_results, filters, by[0] if by else "tier")
    selection.show(result, "check_tiers", fmt, filters)


@app.command()
@warehouse_option
@option("--baseline", help="Variant name or config id (default: the first variant that is "
                           "not a null/reference baseline).")
@option("--candidate", multiple=True,
        help="Variant name or config id (repeatable; default: every non-baseline).")
@option("--report", type=click.Path(path_type=Path),
        help="Compare from RUN_DIR/report.json instead of the warehouse.")
@option("--seed", type=int, default=20260601,
        help="Seed of the bootstrap intervals of the wall-time, cost, token and step deltas.")
@option("--allow-evaluator-change", is_flag=True,
        help="Pair a case across evaluator fingerprints (refused by default: a grader change "
             "is not an agent change); the output says so.")
@option("--pool-conditions", is_flag=True,
        help="Pair a candidate that ran under other named conditions than the baseline "
             "(cache=warm against cache=cold; left out by default, refused when named); labelled.")
@filter_options(cost=True)
@json_option()
@csv_option
def compare(warehouse: Path, baseline: str | None, candidate: Many, report: Path | None,
            seed: int, by: Many, json_out: bool, csv_out: bool, **sel: Any) -> None:
    """Paired comparison of candidates against a baseline within one task universe: headline, pairs, sign test, paired difference, bootstrap deltas.

    With --by, one comparison per slice (directions and sign test within the slice).

    Example: trialhouse compare --warehouse w.duckdb --baseline baseline --candidate tuned
    """
    from analysis import compare as cmp
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    if report is not None:
        if by:
            raise click.UsageError("--by needs the warehouse (case labels); drop --report")
        result = cmp.compare_report(report, baseline, listed(candidate))
    else:
        result = selection.ask(warehouse, cmp.compare, filters, baseline, listed(candidate),
                      by=listed(by), seed=seed)
    if fmt == "json":
        from analysis.headline import headline
        from trialhouse.app import echo_json

        doc = result.as_dict()
        echo_json({"filters": filters.as_dict(), **{k: v for k, v in doc.items()
                                                    if k != "comparisons"},
                   "headline": headline(result).as_dict(), "comparisons": doc["comparisons"]})
        return
    selection.show(result, "comparisons", fmt, filters)


def _question(name: str, fn: str, view: str, doc: str, cost: bool = False,
              by: bool = True) -> None:
    """Register a command that asks ``analysis.<module>.<fn>`` with the selection (and
    --by) and prints the result through ``view``."""
    module, func = fn.rsplit(".", 1)

    def command(warehouse: Path, json_out: bool, csv_out: bool, **sel: Any) -> None:
        import importlib

        from trialhouse.render import output_format

        fmt = output_format(json_out, csv_out)
        slices = sel.pop("by", None)
        filters = selection.filters(sel)
        ask = getattr(importlib.import_module(module), func)
        kwargs = {"by": listed(slices)} if by else {}
        selection.show(selection.ask(warehouse, ask, filters, **kwargs), view, fmt, filters)

    command.__doc__ = doc
    command.__name__ = name
    for deco in reversed([app.command(name), warehouse_option,
                          filter_options(by=by, cost=cost), json_option(), csv_option]):
        command = deco(command)


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
@csv_option
def eligibility(warehouse: Path, json_out: bool, csv_out: bool, **sel: Any) -> None:
    """Eligibility per configuration: baseline or candidate, and why a candidate is ineligible.

    A candidate is ineligible with an invalid trial, a blocker-severity regression, a run
    whose events are tampered, or a trial that leaked a run secret; ineligible
    configurations are never on a Pareto front or named best.

    Example: trialhouse eligibility --warehouse w.duckdb --run r1
    """
    from analysis.eligibility import eligibility_report as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    selection.show(selection.ask(warehouse, ask, filters), "eligibility", fmt, filters)


_question("consistency", "analysis.consistency.consistency", "consistency", """Tasks passed on every repetition (Wilson over tasks), pass^k and pass@k for k ≤ min n.

    Uses the same task set as summarize (printed above the table).

    Example: trialhouse consistency --warehouse w.duckdb --run r1
    """)


@app.command()
@warehouse_option
@option("--x", type=Choice(PARETO_X), default="cost_per_accepted",
        help="The axis to minimise: cost per accepted result, cost per trial, or median steps.")
@option("--convex", is_flag=True, help="Also mark the convex frontier.")
@filter_options(cost=True)
@json_option()
@csv_option
def pareto(warehouse: Path, x: str, convex: bool, by: Many, json_out: bool, csv_out: bool,
           **sel: Any) -> None:
    """Cost/quality Pareto front per task universe: non-dominated configurations and who dominates the rest.

    With --by, one front per slice; --x median_steps puts steps on the axis.

    Example: trialhouse pareto --warehouse w.duckdb --x cost_per_trial --convex
    """
    from analysis.pareto import pareto as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    result = selection.ask(warehouse, ask, filters, x=x, convex=convex, by=listed(by))
    selection.show(result, "pareto", fmt, filters)


_question("matrix", "analysis.matrix.matrix", "matrix", """Model × harness: one model under several harnesses, several models under one, or the full grid (interaction).

    An incomplete grid is analysed on its largest complete sub-grid; the cells left out
    are named.

    Example: trialhouse matrix --warehouse w.duckdb --model claude-3-7-sonnet
    """, by=False)


@app.command()
@warehouse_option
@option("--disagreements", is_flag=True,
        help="List reviewer decisions that disagree with the grader.")
@filter_options()
@json_option()
@csv_option
def failures(warehouse: Path, disagreements: bool, by: Many, json_out: bool, csv_out: bool,
             **sel: Any) -> None:
    """Outcome classes and first-decisive-wrong-choice categories with shares and lost spend.

    Example: trialhouse failures --warehouse w.duckdb --by task_class
    """
    from analysis import failures as f
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = selection.filters(sel)
    if disagreements:
        result = selection.ask(warehouse, f.review_disagreements, filters)
        selection.show(result, "disagreements", fmt, filters)
    else:
        result = selection.ask(warehouse, f.failures, filters, by=listed(by))
        selection.show(result, "failures", fmt, filters)


_question("familiarity", "analysis.familiarity.familiarity", "familiarity", """Known vs unknown repository gap per configuration, interval clustered by repository.

    --by takes task_class, difficulty, language or subsystem. Familiarity comes from the
    case label, however it arrived (manifest, labels file, a field of an imported line).

    Example: trialhouse familiarity --warehouse w.duckdb --by task_class
    """)

_question("latency", "analysis.latency.latency", "latency", """Latency by phase (setup, agent, verification, total) and time to first edit: p50/p90/p95.

    Example: trialhouse latency --warehouse w.duckdb --by difficulty
    """)


_question("trajectory", "analysis.trajectory.summary", "trajectory", """Trajectory metrics per configuration and stage: median / p90, accepted trials beside the others.

    How the agents worked (repeated calls, failed check → edit, reads outside the patch, final
    check, time to first edit, model share of time, tokens per step): read next to outcomes,
    never as a score (docs/trajectories.md).

    Example: trialhouse trajectory --warehouse w.duckdb --run r1
    """, by=False)
