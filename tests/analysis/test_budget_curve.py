"""The example's budget sweep and visible check, end to end: a real run of the simulated agent
at three budgets (runner → events → ingest → warehouse), whose acceptance rises with the
budget, and ``budget-curve`` / ``visibility`` checked against independent computations
(statsmodels' Wilson interval, scipy's exact binomial test, Holm from statsmodels) made from
the run's own ``report.json`` and ``events.jsonl``, never from the warehouse."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from contract.call_events import TrajectoryStep
from contract.run_events import RunStarted
from contract.trial_events import Grading
from runner.eventlog import read_events

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = [0.1, 0.2, 0.4]
POINTS = [f"sim-alpha-budget-usd{b:g}" for b in BUDGETS]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict:
    from ingest.api import ingest_paths
    from runner.example import write_example
    from runner.run import run_trials

    root = tmp_path_factory.mktemp("sweep")
    write_example(root / "corpus")
    res = run_trials(root / "corpus" / "sweep.json", root / "run", progress=False, jobs=2)
    wh = root / "w.duckdb"
    ingest_paths([root / "run"], wh)
    return {"report": json.loads(res.report_path.read_text()), "events": read_events(res.events_path),
            "warehouse": wh, "run_id": res.run_id}


def _curve(sweep: dict):
    from analysis.budget_curve import budget_curve
    from analysis.filters import Filters
    from warehouse import db

    con = db.open(sweep["warehouse"], read_only=True)
    try:
        return budget_curve(con, Filters(runs=(sweep["run_id"],)))
    finally:
        con.close()


def _trials(sweep: dict) -> dict[str, list[dict]]:
    by: dict[str, list[dict]] = defaultdict(list)
    for t in sweep["report"]["trials"]:
        by[t["variant"]].append(t)
    return by


def test_acceptance_rises_with_the_budget_and_never_falls_on_the_same_draw(sweep):
    by = _trials(sweep)
    accepted = {v: sum(t["outcome"] == "accepted" for t in by[v]) for v in POINTS}
    assert [len(by[v]) for v in POINTS] == [12, 12, 12]
    assert accepted[POINTS[0]] < accepted[POINTS[1]] <= accepted[POINTS[2]]
    # the tightest budget is spent before the hard cases finish; the loosest never is
    exhausted = {v: sum(t["outcome"] == "budget_exhausted" for t in by[v]) for v in POINTS}
    assert exhausted[POINTS[0]] > 0 == exhausted[POINTS[2]]
    # the points share their draws: a (case, repetition) accepted at a budget stays accepted above it
    won = {v: {(t["case_id"], t["repetition"]) for t in by[v] if t["outcome"] == "accepted"} for v in POINTS}
    assert won[POINTS[0]] <= won[POINTS[1]] <= won[POINTS[2]]
    # and every trial kept to its own spend limit, or was stopped for passing it
    for v, cap in zip(POINTS, BUDGETS, strict=True):
        for t in by[v]:
            assert (t["usage"]["cost_usd"] <= cap) == (t["outcome"] != "budget_exhausted"), t["trial_id"]


def test_the_run_header_tags_one_sweep_of_three_configurations(sweep):
    head = next(e for e in sweep["events"] if isinstance(e, RunStarted))
    points = [(v.variant, v.sweep, v.sweep_budget, v.sweep_value, v.max_cost_usd) for v in head.variants]
    assert points == [(p, "sim-alpha-budget", "max_cost_usd", b, b) for p, b in zip(POINTS, BUDGETS, strict=True)]
    assert len({v.config_id for v in head.variants}) == 3


def test_budget_curve_equals_an_independent_computation(sweep):
    from scipy.stats import binomtest
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    curve = _curve(sweep)
    by = _trials(sweep)
    assert [r["variant"] for r in curve.rows] == POINTS and [r["budget"] for r in curve.rows] == BUDGETS
    for row, v in zip(curve.rows, POINTS, strict=True):
        trials = by[v]
        valid = [t for t in trials if t["outcome"] not in ("infra_error", "invalid")]
        k = sum(t["outcome"] == "accepted" for t in valid)
        lo, hi = proportion_confint(k, len(valid), alpha=0.05, method="wilson")
        cost = sum(t["usage"]["cost_usd"] for t in trials)
        assert (row["valid"], row["accepted"]) == (len(valid), k)
        assert row["ci_low"] == pytest.approx(lo, abs=1e-12) and row["ci_high"] == pytest.approx(hi, abs=1e-12)
        assert row["cost_per_accepted"] == pytest.approx(cost / k, rel=1e-12)
        assert row["budget_exhausted"] == sum(t["outcome"] == "budget_exhausted" for t in trials)
    ps = []
    for step, (low, high) in zip(curve.steps, zip(POINTS, POINTS[1:], strict=False), strict=True):
        rate = {}
        for v in (low, high):
            per_case: dict[str, list[bool]] = defaultdict(list)
            for t in by[v]:
                per_case[t["case_id"]].append(t["outcome"] == "accepted")
            rate[v] = {c: sum(x) / len(x) for c, x in per_case.items()}
        better = sum(rate[high][c] > rate[low][c] for c in rate[low])
        worse = sum(rate[high][c] < rate[low][c] for c in rate[low])
        p = binomtest(better, better + worse, 0.5).pvalue if better + worse else 1.0
        ps.append(p)
        assert (step["improvements"], step["regressions"], step["ties"]) == (better, worse, 6 - better - worse)
        assert step["p"] == pytest.approx(p, abs=1e-12)
        pairs = {(t["case_id"], t["repetition"]): t["outcome"] == "accepted" for t in by[low]}
        gained = sum(t["outcome"] == "accepted" and not pairs[(t["case_id"], t["repetition"])] for t in by[high])
        assert (step["pairs"], step["gained"], step["lost"]) == (12, gained, 0)
    holm = multipletests(ps, method="holm")[1]
    assert [s["p_holm"] for s in curve.steps] == pytest.approx(list(holm), abs=1e-12)


def test_the_commands_print_what_the_library_answers(sweep):
    wh = str(sweep["warehouse"])
    done = _cli("budget-curve", "--warehouse", wh, "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    curve = _curve(sweep).as_dict()
    assert doc["rows"] == curve["rows"] and doc["steps"] == curve["steps"]
    table = _cli("budget-curve", "--warehouse", wh)
    assert "Budget curve" in table.stdout and "$0.1000 → $0.2000" in table.stdout
    vis = _cli("visibility", "--warehouse", wh, "--json")
    assert vis.returncode == 0, vis.stderr
    assert [r["variant"] for r in json.loads(vis.stdout)["rows"]] == POINTS


def test_visible_and_hidden_results_equal_an_independent_count(sweep):
    from analysis.visibility import visibility
    from warehouse import db

    head = next(e for e in sweep["events"] if isinstance(e, RunStarted))
    visible = {(c.case_id, k.criterion_id) for c in head.cases for k in c.criteria if k.visible}
    assert visible == {("transfer-insufficient-funds", "raises-on-overdraft")}
    final: dict[str, dict[str, str]] = defaultdict(dict)
    for e in sweep["events"]:
        if isinstance(e, Grading) and e.final and e.trial_id.startswith("transfer-insufficient-funds__"):
            final[e.trial_id][e.criterion_id] = e.verdict
    con = db.open(sweep["warehouse"], read_only=True)
    try:
        rows = {r["variant"]: r for r in visibility(con).rows}
    finally:
        con.close()
    for v in POINTS:
        mine = [g for tid, g in final.items() if f"__{v}__" in tid]
        vis_ok = [g["raises-on-overdraft"] == "passed" for g in mine]
        hid_ok = [all(x == "passed" for k, x in g.items() if k != "raises-on-overdraft") for g in mine]
        r = rows[v]
        assert (r["trials"], r["visible_pass"], r["hidden_pass"]) == (len(mine), sum(vis_ok), sum(hid_ok))
        assert r["visible_only"] == sum(a and not b for a, b in zip(vis_ok, hid_ok, strict=True))
    # the tightest budget leaves the overdraft half done: visible passes, a hidden check fails
    assert rows[POINTS[0]]["visible_only"] > 0 and rows[POINTS[0]]["gap"] > 0


def test_the_simulated_agent_runs_the_visible_check_in_qa(sweep):
    runs = [e for e in sweep["events"] if isinstance(e, TrajectoryStep) and e.tool == "run_check"]
    qa = {e.trial_id for e in runs if e.stage == "qa"}
    assert qa == {f"transfer-insufficient-funds__{v}__r{r}" for v in POINTS for r in (1, 2)}
    assert all(e.command == 'python3 "$TRIALHOUSE_CHECKS/run_check.py"' for e in runs)


def test_no_sweep_and_no_visible_check_are_errors_that_say_what_they_are(wh):
    from analysis.budget_curve import NO_SWEEP, budget_curve
    from analysis.errors import AnalysisError
    from analysis.visibility import visibility

    con = wh([{"variant": "a", "case_id": "c1"}, {"variant": "b", "case_id": "c1"}])
    with pytest.raises(AnalysisError, match=NO_SWEEP):
        budget_curve(con)
    with pytest.raises(AnalysisError, match="no visible check in the selection"):
        visibility(con)


def test_the_report_shows_both_sections(sweep, tmp_path):
    out = tmp_path / "report"
    done = _cli("report", "--warehouse", str(sweep["warehouse"]), "--output", str(out))
    assert done.returncode == 0, done.stderr
    md = (out / "report.md").read_text()
    assert "## Quality at several budgets" in md and "## Visible and hidden checks" in md
    curve = _curve(sweep)
    assert f"| sim-alpha-budget | $0.1000 | {POINTS[0]} SIMULATED | {curve.rows[0]['accepted']}/12" in md
