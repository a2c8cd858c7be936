"""A report computes each analysis once (issue 27): every section reads the gathered answer.

Calls are counted on the real functions' code while a real report is written on the fixture
warehouse (a profiler hook, so a call counts however the caller imported the function), and
the report is compared with what the same questions answer when asked one by one.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _counting(functions: dict[str, Callable[..., Any]], work: Callable[[], Any]) -> Counter:
    """How often each function's code ran while ``work`` ran."""
    codes = {f.__code__: name for name, f in functions.items()}
    calls: Counter = Counter()

    def hook(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            calls[codes[frame.f_code]] += 1

    sys.setprofile(hook)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_a_report_computes_each_analysis_once(fixture_warehouse: Path, tmp_path: Path) -> None:
    from analysis import (
        checks,
        compare,
        consistency,
        eligibility,
        failures,
        familiarity,
        flags,
        latency,
        matrix,
        pareto,
        period,
        review,
        sanity,
        summary,
        trajectory,
        unscored,
    )
    from analysis.report import write_report

    once = {
        "summarize": summary.summarize, "eligibility gates": eligibility.gates,
        "trial counts (one pass)": checks.counts, "trial counts (staged)": checks.staged_counts,
        "sanity": sanity.sanity, "unscored": unscored.unscored, "compare": compare.compare,
        "period": period.period_changes, "consistency": consistency.consistency,
        "matrix": matrix.matrix, "failures": failures.failures,
        "familiarity": familiarity.familiarity, "latency": latency.latency,
        "flags": flags.flags, "review": review.judged_and_reviewed,
    }
    never = {"pareto (asks summarize again)": pareto.pareto,
             "trajectory (no step in this warehouse)": trajectory.summary}
    out = tmp_path / "report"
    calls = _counting({**once, **never}, lambda: write_report(
        fixture_warehouse, out, since="2026-11-23", until="2026-11-30", previous_period=True))

    scans = calls.pop("trial counts (one pass)", 0) + calls.pop("trial counts (staged)", 0)
    assert scans == 1, f"the selection's trials were counted {scans} times"
    assert {name: calls[name] for name in once if name in calls} == {
        name: 1 for name in once if not name.startswith("trial counts")}
    assert not any(calls[name] for name in never)
    # Before (main at 2527ab9): summarize 3 times, gates 6, sanity 2, unscored 3.

    # The report's numbers are the same questions' answers, asked one by one.
    from analysis.eligibility import assess
    from analysis.filters import Filters
    from warehouse import db

    doc = json.loads((out / "report.json").read_text(encoding="utf-8"))
    con = db.open(fixture_warehouse, read_only=True)
    try:
        sel = Filters.parse(since="2026-11-23", until="2026-11-30")
        alone = summary.summarize(con, sel).as_dict()
        roles = assess(con, sel)
        front = pareto.pareto(con, sel, x="cost_per_trial").as_dict()["rows"]
        sanity_alone = [w.as_dict() for w in sanity.sanity(con, sel)]
    finally:
        con.close()
    assert json.loads(json.dumps(alone, default=str)) == doc["summary"]
    assert doc["controls"]["eligibility"] == [roles[c].as_dict() for c in sorted(roles)]
    assert doc["pareto"]["cost_per_trial"] == json.loads(json.dumps(front, default=str))
    assert doc["controls"]["sanity"] == sanity_alone
