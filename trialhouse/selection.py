"""What every analysis command shares: the selection options, and asking one question.

``filter_options`` declares --run, --config, --since, ... (and --by, --cost-coverage);
``filters`` turns them into ``analysis.filters.Filters``; ``ask`` runs one library function
over a read-only warehouse connection; ``show`` hands its result to ``trialhouse.render``
with the view that lays it out. ``trialhouse.cmd_analysis`` and ``trialhouse.cmd_stats``
are built from these. Library code is imported inside the functions (start-up stays
click-only).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trialhouse.app import Choice, listed, option
from trialhouse.csv_cells import raw_option


def csv_option(command):
    """``--csv`` (the parameter ``csv_out``) and ``--raw`` (``trialhouse.csv_cells``)."""
    return option("--csv", "csv_out", is_flag=True, help="CSV rows on stdout.")(raw_option(command))


_FILTER_KEYS = ("run", "since", "until", "label", "holdout", "config", "model", "harness",
                "source", "benchmark", "universe", "cost_coverage", "include_unvalidated",
                "allow_evaluator_change", "pool_conditions")


def filter_options(by: bool = True, cost: bool = False):
    """The selection every analysis command takes: --run, --config, --model, --harness,
    --source, --benchmark, --universe, --since, --until, --label, --holdout, (``by``) --by
    and (``cost``, the commands that report cost) --cost-coverage. The command receives
    them as keyword arguments; ``filters`` turns them into ``analysis.filters.Filters``."""
    opts = [
        option("--run", multiple=True, help="Run id (repeatable)."),
        option("--config", multiple=True,
               help="Configuration: variant name, config id or id prefix (repeatable)."),
        option("--model", multiple=True, help="Model name (repeatable)."),
        option("--harness", multiple=True, help="Harness name (repeatable)."),
        option("--source", multiple=True,
               help="Source format: trialhouse, runs-jsonl, inspect, harbor, terminal-bench, "
                    "swebench (repeatable)."),
        option("--benchmark", multiple=True, help="Case benchmark label (repeatable)."),
        option("--universe", multiple=True,
               help="Task universe: a benchmark label, manifest id or run id (repeatable; "
                    "summarize lists them)."),
        option("--since", help="From this ISO date/time (UTC)."),
        option("--until", help="Before this ISO date/time."),
        option("--label", multiple=True, help="Case label key=value (repeatable, all must match)."),
        option("--holdout", type=Choice(("include", "exclude", "only")), default="include",
               help="Holdout tasks: include | exclude | only."),
        option("--include-unvalidated", is_flag=True,
               help="Also count cases whose controls failed or disagreed (unscored; "
                    "left out by default, and labelled when counted)."),
    ]
    if cost:
        opts.append(option("--cost-coverage", type=Choice(("all", "complete")), default="all",
                           help="complete: only trials with a known cost (says how many remain)."))
    if by:
        opts.append(option("--by", multiple=True, help="Slice by task_class | repository | "
                                                       "difficulty | language | familiarity "
                                                       "(summarize: also condition.<key>)."))

    def decorate(f):
        for o in reversed(opts):
            f = o(f)
        return f

    return decorate


def filters(sel: dict[str, Any]) -> Any:
    """Pop the selection options from a command's keyword arguments into Filters."""
    from analysis.filters import Filters

    v = {k: sel.pop(k, None) for k in _FILTER_KEYS}
    return Filters.parse(runs=listed(v["run"] or ()), since=v["since"], until=v["until"],
                         labels=listed(v["label"] or ()), holdout=v["holdout"] or "include",
                         configs=v["config"], models=v["model"], harnesses=v["harness"],
                         sources=v["source"], benchmarks=v["benchmark"],
                         universes=v["universe"], cost_coverage=v["cost_coverage"] or "all",
                         include_unvalidated=bool(v["include_unvalidated"]),
                         allow_evaluator_change=bool(v["allow_evaluator_change"]),
                         pool_conditions=bool(v["pool_conditions"]))


@contextmanager
def _connect(warehouse: Path) -> Iterator[Any]:
    """A read-only warehouse connection, closed whatever happens."""
    from warehouse import db

    con = db.open(warehouse, read_only=True)
    try:
        yield con
    finally:
        con.close()


def ask(warehouse: Path, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(con, *args, **kwargs)`` over a read-only connection to ``warehouse``."""
    with _connect(warehouse) as con:
        return fn(con, *args, **kwargs)


def show(result: Any, view: str, fmt: str, selection: Any) -> None:
    """Print a question's result as ``fmt`` through ``trialhouse.views.<view>`` (or
    ``trialhouse.views_stats.<view>``); JSON leads
    with the selection (``filters``) it answered."""
    from trialhouse import views, views_stats
    from trialhouse.render import emit

    layout = getattr(views, view, None) or getattr(views_stats, view)
    emit(result, layout, fmt, head={"filters": selection.as_dict()})
