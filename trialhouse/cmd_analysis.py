"""CLI commands for the analysis area: each parses its options, asks one library function,
and hands the typed result to ``trialhouse.render`` (terminal table, ``--json`` or ``--csv``).

Library code is imported inside each command so ``trialhouse --help`` stays fast.
JSON keys are documented in docs/analysis.md; terminal layouts are in ``trialhouse.views``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from trialhouse.app import Choice, app, json_option, listed, option, warehouse_option

Many = tuple[str, ...]  # a repeatable option's values (empty when not given)

# Same values as analysis.pareto.X_CHOICES (tests/test_cli_docs.py checks).
PARETO_X = ("cost_per_accepted", "cost_per_trial")

csv_option = option("--csv", "csv_out", is_flag=True, help="CSV rows on stdout.")


def filter_options(by: bool = True):
    """The filters every analysis command takes: --run, --since, --until, --label, --holdout
    and (unless ``by=False``) --by."""
    opts = [
        option("--run", multiple=True, help="Run id (repeatable)."),
        option("--since", help="From this ISO date/time (UTC)."),
        option("--until", help="Before this ISO date/time."),
        option("--label", multiple=True, help="Case label key=value (repeatable, all must match)."),
        option("--holdout", type=Choice(("include", "exclude", "only")), default="include",
               help="Holdout tasks: include | exclude | only."),
    ]
    if by:
        opts.append(option("--by", multiple=True, help="Slice by task_class | repository | "
                                                       "difficulty | language | familiarity."))

    def decorate(f):
        for o in reversed(opts):
            f = o(f)
        return f

    return decorate


def _filters(run: Many, since: str | None, until: str | None, label: Many, holdout: str) -> Any:
    from analysis.filters import Filters

    return Filters.parse(runs=listed(run), since=since, until=until, labels=listed(label),
                         holdout=holdout)


@contextmanager
def _connect(warehouse: Path) -> Iterator[Any]:
    """A read-only warehouse connection, closed whatever happens."""
    from warehouse import db

    con = db.open(warehouse, read_only=True)
    try:
        yield con
    finally:
        con.close()


def _ask(warehouse: Path, fn: Any, *args: Any, **kwargs: Any) -> Any:
    with _connect(warehouse) as con:
        return fn(con, *args, **kwargs)


def _emit(result: Any, view: str, fmt: str, filters: Any) -> None:
    from trialhouse import views
    from trialhouse.render import emit

    emit(result, getattr(views, view), fmt, head={"filters": filters.as_dict()})


@app.command()
@warehouse_option
@filter_options()
@option("--format", "layout", type=Choice(("table", "seed")), default="table",
        help="table | seed (tab-separated columns of the per-run summary script).")
@json_option()
@csv_option
def summarize(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
              holdout: str, by: Many, layout: str, json_out: bool, csv_out: bool) -> None:
    """Per-configuration table: pass rate with Wilson and task-clustered intervals, cost, latency, flags.

    Example: trialhouse summarize --warehouse w.duckdb --run r1 --by task_class
    """
    from analysis.seed import seed_lines
    from analysis.summary import summarize as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    result = _ask(warehouse, ask, filters, by=listed(by))
    if layout == "seed" and fmt == "table":
        click.echo("\n".join(seed_lines(result)))
        return
    _emit(result, "summary", fmt, filters)


@app.command()
@warehouse_option
@option("--baseline", help="Variant name or config id (default: the first variant that is "
                           "not a null/reference baseline).")
@option("--candidate", multiple=True,
        help="Variant name or config id (repeatable; default: every non-baseline).")
@option("--report", type=click.Path(path_type=Path),
        help="Compare from RUN_DIR/report.json instead of the warehouse.")
@filter_options()
@json_option()
@csv_option
def compare(warehouse: Path, baseline: str | None, candidate: Many, report: Path | None,
            run: Many, since: str | None, until: str | None, label: Many, holdout: str,
            by: Many, json_out: bool, csv_out: bool) -> None:
    """Paired comparison of candidates against a baseline: headline, pairs, sign test, paired difference.

    With --by, one comparison per slice (directions and sign test within the slice).

    Example: trialhouse compare --warehouse w.duckdb --baseline baseline --candidate tuned
    """
    from analysis import compare as cmp
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    if report is not None:
        if by:
            raise click.UsageError("--by needs the warehouse (case labels); drop --report")
        result = cmp.compare_report(report, baseline, listed(candidate))
    else:
        result = _ask(warehouse, cmp.compare, filters, baseline, listed(candidate),
                      by=listed(by))
    if fmt == "json":
        from analysis.headline import headline
        from trialhouse.app import echo_json

        doc = result.as_dict()
        echo_json({"filters": filters.as_dict(), **{k: v for k, v in doc.items()
                                                    if k != "comparisons"},
                   "headline": headline(result).as_dict(), "comparisons": doc["comparisons"]})
        return
    _emit(result, "comparisons", fmt, filters)


@app.command()
@warehouse_option
@filter_options()
@json_option()
@csv_option
def consistency(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
                holdout: str, by: Many, json_out: bool, csv_out: bool) -> None:
    """Tasks passed on every repetition (Wilson over tasks), pass^k and pass@k for k ≤ min n.

    Example: trialhouse consistency --warehouse w.duckdb --run r1
    """
    from analysis.consistency import consistency as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters, by=listed(by)), "consistency", fmt, filters)


@app.command()
@warehouse_option
@option("--x", type=Choice(PARETO_X), default="cost_per_accepted",
        help="Cost axis of the front.")
@option("--convex", is_flag=True, help="Also mark the convex frontier.")
@filter_options()
@json_option()
@csv_option
def pareto(warehouse: Path, x: str, convex: bool, run: Many, since: str | None,
           until: str | None, label: Many, holdout: str, by: Many, json_out: bool,
           csv_out: bool) -> None:
    """Cost/quality Pareto front: non-dominated configurations and who dominates the rest.

    With --by, one front per slice.

    Example: trialhouse pareto --warehouse w.duckdb --x cost_per_trial --convex
    """
    from analysis.pareto import pareto as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters, x=x, convex=convex, by=listed(by)), "pareto", fmt,
          filters)


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
@csv_option
def matrix(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
           holdout: str, json_out: bool, csv_out: bool) -> None:
    """Model × harness grid, effects within rows and columns, and the interaction test.

    Example: trialhouse matrix --warehouse w.duckdb --run r1
    """
    from analysis.matrix import matrix as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters), "matrix", fmt, filters)


@app.command()
@warehouse_option
@option("--disagreements", is_flag=True,
        help="List reviewer decisions that disagree with the grader.")
@filter_options()
@json_option()
@csv_option
def failures(warehouse: Path, disagreements: bool, run: Many, since: str | None,
             until: str | None, label: Many, holdout: str, by: Many, json_out: bool,
             csv_out: bool) -> None:
    """Outcome classes and first-decisive-wrong-choice categories with shares and lost spend.

    Example: trialhouse failures --warehouse w.duckdb --by task_class
    """
    from analysis import failures as f
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    if disagreements:
        _emit(_ask(warehouse, f.review_disagreements, filters), "disagreements", fmt, filters)
    else:
        _emit(_ask(warehouse, f.failures, filters, by=listed(by)), "failures", fmt, filters)


@app.command()
@warehouse_option
@filter_options()
@json_option()
@csv_option
def familiarity(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
                holdout: str, by: Many, json_out: bool, csv_out: bool) -> None:
    """Known vs unknown repository gap per configuration, interval clustered by repository.

    --by takes task_class, difficulty, language or subsystem.

    Example: trialhouse familiarity --warehouse w.duckdb --by task_class
    """
    from analysis.familiarity import familiarity as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters, by=listed(by)), "familiarity", fmt, filters)


@app.command()
@warehouse_option
@filter_options()
@json_option()
@csv_option
def latency(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
            holdout: str, by: Many, json_out: bool, csv_out: bool) -> None:
    """Latency by phase (setup, agent, verification, total) and time to first edit: p50/p90/p95.

    Example: trialhouse latency --warehouse w.duckdb --by difficulty
    """
    from analysis.latency import latency as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters, by=listed(by)), "latency", fmt, filters)


@app.command()
@warehouse_option
@filter_options(by=False)
@json_option()
@csv_option
def trajectory(warehouse: Path, run: Many, since: str | None, until: str | None, label: Many,
               holdout: str, json_out: bool, csv_out: bool) -> None:
    """Trajectory metrics per configuration and stage: median / p90, accepted trials beside the others.

    How the agents worked (repeated calls, failed check → edit, reads outside the patch, final
    check, time to first edit, model share of time, tokens per step): read next to outcomes,
    never as a score (docs/trajectories.md).

    Example: trialhouse trajectory --warehouse w.duckdb --run r1
    """
    from analysis.trajectory import summary as ask
    from trialhouse.render import output_format

    fmt = output_format(json_out, csv_out)
    filters = _filters(run, since, until, label, holdout)
    _emit(_ask(warehouse, ask, filters), "trajectory", fmt, filters)
