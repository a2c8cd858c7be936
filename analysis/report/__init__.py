"""The comparison report: one offline HTML page, the same findings as Markdown, every number as JSON.

``write_report`` opens the warehouse, gathers every analysis answer once
(:mod:`analysis.report.gather`), lays them out as sections (:mod:`analysis.report.sections`,
one module each), draws the charts (:mod:`analysis.report.charts`), renders HTML, Markdown
and JSON (:mod:`analysis.report.render`) and writes them with each chart as PNG and SVG
(:mod:`analysis.report.output`). It computes no statistic of its own; the headline and the
comparison are the ``compare`` command's, numbers equal by construction.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analysis.canary import Canaries
from analysis.errors import AnalysisError
from analysis.report.output import ReportPaths, TrialPages

__all__ = ["ReportPaths", "TrialPages", "write_report"]


def _window(since: Any, until: Any, previous_period: bool
            ) -> tuple[datetime | None, datetime | None, tuple[datetime, datetime] | None]:
    from analysis.filters import parse_time
    from analysis.period import previous_window

    since_t, until_t = parse_time(since, "since"), parse_time(until, "until")
    if previous_period and since_t is None:
        raise AnalysisError("--previous-period needs --since (and --until, default now): it "
                            "compares the window with the one of the same length before it")
    if since_t is not None and until_t is None and previous_period:
        until_t = datetime.now(UTC)
    prev = None
    if since_t is not None and until_t is not None:
        prev = previous_window(since_t, until_t)  # rejects an empty or inverted window early
    return since_t, until_t, prev if previous_period else None


def _scope(filters: Any, run_ids: list[str]) -> str:
    from analysis import formatting as fmt

    parts = []
    if filters.since or filters.until:
        a = fmt.when(filters.since) if filters.since else "the beginning"
        b = fmt.when(filters.until) if filters.until else "now"
        parts.append(f"trials started from {a} until {b} (exclusive)")
    parts.append(f"runs: {', '.join(run_ids)}" if len(run_ids) <= 4 else f"{len(run_ids)} runs")
    return "; ".join(parts)


def write_report(warehouse: Path | str, output: Path | str, *,
                 runs: list[str] | tuple[str, ...] | None = None, since: Any = None,
                 until: Any = None, baseline: str | None = None,
                 candidates: list[str] | None = None, previous_period: bool = False,
                 title: str | None = None,
                 selectors: dict[str, Any] | None = None, include_unvalidated: bool = False,
                 allow_evaluator_change: bool = False,
                 trial_pages: TrialPages | None = None,
                 rules: Path | str | None = None, pool_conditions: bool = False,
                 accept_drift: str | None = None,
                 record_drift: Callable[[dict[str, Any]], Any] | None = None) -> ReportPaths:
    """Write report.html, report.md, report.json and charts/*.png|svg into ``output``.

    ``baseline``/``candidates`` resolve exactly as ``compare``'s (default baseline: the
    manifest's first variant that is not a baseline; candidates: every non-baseline).
    ``selectors`` (``config``, ``model``, ``harness``, ``source``, ``benchmark``,
    ``universe``: lists of names) narrow the selection as the analysis commands do.
    ``include_unvalidated`` counts unscored cases (labelled); ``allow_evaluator_change``
    lets the comparison and the period pair a case across evaluator fingerprints.
    ``trial_pages`` links each trial id to its page in a trial viewer (``(run id, trial
    id) → href``, see ``viewer.site.trial_href``); without it a trial links to its evidence.
    ``rules``: a stop-rules file, evaluated at the window's end (else now); fired rules open
    the report with their owners (docs/rollout.md). ``pool_conditions`` pairs configurations
    under different named conditions. ``accept_drift``: the reason canary drift in the period
    comparison is acknowledged, handed to ``record_drift`` as a ``drift_decisions`` row
    (``analysis.canary.drift_decision``) before the report is gathered again; without it a
    drift blocks the period's verdicts and ``ReportPaths.blocked`` says why.
    """
    from analysis.filters import Filters
    from analysis.report import output as out

    warehouse, directory = Path(warehouse), Path(output)
    since_t, until_t, prev = _window(since, until, previous_period)
    sel: dict[str, Any] = {f"{k}s" if k != "harness" else "harnesses": tuple(v)
                           for k, v in (selectors or {}).items()}
    sel.update(include_unvalidated=include_unvalidated,
               allow_evaluator_change=allow_evaluator_change, pool_conditions=pool_conditions)
    filters = Filters(runs=tuple(runs or ()), since=since_t, until=until_t, **sel)
    window = {"since": since_t.isoformat() if since_t else None,
              "until": until_t.isoformat() if until_t else None,
              "previous_since": prev[0].isoformat() if prev else None,
              "previous_until": prev[1].isoformat() if prev else None}
    previous = Filters(runs=filters.runs, since=prev[0], until=prev[1], **sel) if prev else None
    out.check(directory)
    declared = None
    if rules is not None:
        from analysis.stop_rules import load_rules

        declared = load_rules(rules)
    if accept_drift is not None and (previous is None or record_drift is None):
        raise AnalysisError("--accept-drift acknowledges canary drift between two periods: give "
                            "--since (and --until) with --previous-period")

    data = _gathered(warehouse, accept_drift, record_drift, filters=filters, window=window,
                     baseline=baseline, candidates=candidates, previous=previous,
                     rules=declared, rules_at=until_t)
    paths = _write(data, directory, title or "trialhouse comparison report", str(warehouse),
                   trial_pages)
    if data.period is not None and data.period.blocked and data.period.canaries is not None:
        paths.blocked = data.period.canaries.headline()
    return paths


def _gathered(warehouse: Path, accept_drift: str | None,
              record_drift: Callable[[dict[str, Any]], Any] | None, filters: Any,
              **question: Any) -> Any:
    """``gather`` on a read-only connection; with ``accept_drift``, the acknowledgement is
    recorded (``record_drift``) and the report gathered again, without the block."""
    from analysis.report.gather import gather
    from warehouse import db as wdb

    def ask() -> Any:
        with closing(wdb.open(warehouse, read_only=True)) as con:
            return gather(con, filters, **question)

    data = ask()
    if accept_drift is not None and record_drift is not None:
        from analysis.canary import drift_decision

        record_drift(drift_decision(data.period.canaries or Canaries(), accept_drift,
                                    question["window"]))
        data = ask()  # the verdicts, the blockers and the headline without the block
    return data


def _write(data: Any, directory: Path, title: str, warehouse: str,
           trial_pages: TrialPages | None = None) -> ReportPaths:
    """Sections, charts and the three renderings of gathered data, written to ``directory``."""
    import json
    from importlib.metadata import version

    from analysis.report import charts, render, sections
    from analysis.report import output as out

    out.prepare(directory)
    page = sections.build(data)
    drawn = charts.build(data)
    for s in page:  # a chart with no data is not drawn; the section says why
        missing = [c for c in s.charts if c not in drawn.specs]
        s.charts = [c for c in s.charts if c in drawn.specs]
        if missing and not s.absent:
            s.warnings.append("Not drawn: " + "; ".join(
                f"{c} ({drawn.skipped.get(c, 'no data')})" for c in missing) + ".")
    out.localize_links(page, directory, trial_pages)
    specs = {name: chart.to_dict() for name, chart in drawn.specs.items()}
    paths = {name: out.save_chart(spec, directory / "charts" / name)
             for name, spec in specs.items()}
    trialhouse_version = version("trialhouse")
    context = {"title": title, "scope": _scope(data.filters, data.run_ids),
               "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "version": trialhouse_version, "simulated": bool(data.simulated),
               "sections": page, "chart_files": {n: f"charts/{n}.png" for n in paths}}
    result = ReportPaths(directory, directory / "report.html", directory / "report.md",
                         directory / "report.json", paths)
    result.html.write_text(render.html(context, specs), encoding="utf-8")
    result.markdown.write_text(render.markdown(context), encoding="utf-8")
    doc = render.document(
        data, title=title, version=trialhouse_version, warehouse=warehouse,
        generated_at=datetime.now(UTC).isoformat(), skipped=drawn.skipped,
        charts={n: {k: str(v.relative_to(directory)) for k, v in p.items()}
                for n, p in paths.items()})
    result.json.write_text(json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n",
                           encoding="utf-8")
    return result
