"""Dashboard rates on a real run: target-fix, regression-free and accepted rates and review
minutes per accepted result equal an independent computation from the run's own events and
the reviews file (statsmodels' Wilson, a numpy delta-method ratio interval), in ``summarize
--rates``, the report, and the stop rules (one definition of regression-free)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint


def th(*args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc

REVIEWS = """trial_id,reviewer,decision,reason_code,minutes
order-quantity-validation__reference__r1,alice,accept,,4
json-store-atomic-save__reference__r1,alice,accept,,6
json-store-atomic-save__reference__r1,bob,accept,,3.5
order-quantity-validation__sim-beta-minimal__r1,alice,accept,,10
order-quantity-validation__sim-beta-minimal__r1,bob,accept,,
json-store-atomic-save__sim-beta-minimal__r1,bob,reject,grader_too_lenient,12
json-store-atomic-save__sim-beta-minimal__r1,alice,accept,,5
order-quantity-validation__sim-weak__r1,alice,reject,,7
"""


@pytest.fixture(scope="module")
def reviewed(real_rollout, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The shared run's warehouse copied, with the reviews above imported."""
    import shutil

    base = tmp_path_factory.mktemp("dashboard")
    wh = base / "trialhouse.duckdb"
    shutil.copytree(real_rollout.wh.parent, base, dirs_exist_ok=True)
    lines = REVIEWS.splitlines()  # the trial ids are in both runs (the regrade's too): name the run
    (base / "reviews.csv").write_text("\n".join([lines[0] + ",run_id"]
                                                + [f"{line},{real_rollout.run_id}" for line in lines[1:]]) + "\n")
    th("review", "import", str(base / "reviews.csv"), "--rubric",
       str(real_rollout.corpus / "reviews" / "grid.yaml"), "-w", str(wh))
    out = json.loads(th("summarize", "--rates", "--json", "-w", str(wh), "--run", real_rollout.run_id).stdout)
    return {"wh": wh, "json": out, "rows": {r["variant"]: r for r in out["rows"]}}


def _expected_rates(events: list[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    """Per variant, (k, n) of each rate straight from the events: final gradings and finishes."""
    variant = {e["trial_id"]: e["variant"] for e in events if e["event"] == "trial_started"}
    outcome = {e["trial_id"]: e["outcome"] for e in events if e["event"] == "trial_finished"}
    final = defaultdict(list)
    for e in events:
        if e["event"] == "grading" and e.get("final") and e.get("trial_id"):
            final[e["trial_id"]].append(e)
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for tid, out in outcome.items():
        if out in ("infra_error", "invalid"):
            continue
        c = counts[variant[tid]]
        c["accepted"][0] += out == "accepted"
        c["accepted"][1] += 1
        target = [g for g in final[tid] if g["layer"] == "target"]
        if target:
            c["target_fix"][0] += all(g["verdict"] == "passed" for g in target)
            c["target_fix"][1] += 1
        before = [g for g in final[tid] if g["layer"] in ("regression", "repository")
                  and g["baseline"] == "passed"]
        if before:
            c["regression_free"][0] += not any(g["verdict"] == "failed" for g in before)
            c["regression_free"][1] += 1
    return {v: {k: (a, b) for k, (a, b) in c.items()} for v, c in counts.items()}


def test_rates_equal_an_independent_computation(real_rollout, reviewed) -> None:
    expected = _expected_rates(real_rollout.events)
    rows = reviewed["rows"]
    assert set(rows) == set(expected) == {"reference", "sim-beta-minimal", "sim-weak"}
    for variant, rates in expected.items():
        for rate, (k, n) in rates.items():
            row = rows[variant]
            assert (row[rate], row[f"{rate}_n"]) == (k, n), (variant, rate)
            low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert row[f"{rate}_rate"] == pytest.approx(k / n)
            assert (row[f"{rate}_low"], row[f"{rate}_high"]) == (pytest.approx(low), pytest.approx(high))
    weak = rows["sim-weak"]  # the corpus cut is chosen so the rates differ from each other
    assert weak["accepted"] < weak["target_fix"] and weak["regression_free"] < weak["regression_free_n"]


def test_review_minutes_per_accepted_with_a_task_clustered_interval(reviewed) -> None:
    per_case: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for line in REVIEWS.splitlines()[1:]:
        trial, _who, decision, _code, minutes = line.split(",")
        case, variant, _rep = trial.split("__")
        cell = per_case[variant][case]
        cell[0] += float(minutes or 0)
        cell[1] += decision == "accept"
    for variant, cases in per_case.items():
        m, a = np.array([c[0] for c in cases.values()]), np.array([c[1] for c in cases.values()])
        row = reviewed["rows"][variant]
        if a.sum() == 0:
            assert row["review_minutes_per_accepted"] is None
            continue
        r = m.sum() / a.sum()
        g = len(m)
        cov = np.cov(np.vstack([m, a]), ddof=1)  # the delta method for a ratio of means
        se = np.sqrt((cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (g * a.mean() ** 2))
        half = student_t.ppf(0.975, g - 1) * se
        assert row["review_minutes_per_accepted"] == pytest.approx(r)
        assert row["review_minutes_low"] == pytest.approx(max(0.0, r - half))
        assert row["review_minutes_high"] == pytest.approx(r + half)
        assert row["review_tasks"] == g
    beta = reviewed["rows"]["sim-beta-minimal"]
    assert (beta["reviewed"], beta["review_minutes_known"], beta["accepted_by_review"]) == (4, 3, 3)
    assert any("review minutes recorded for 3 of 4" in w for w in reviewed["json"]["warnings"])


def report_data(wh: Path, run_id: str) -> Any:
    """What the report lays out (``gather``), without drawing its charts."""
    from analysis.filters import Filters
    from analysis.report.gather import gather
    from warehouse import db

    with closing(db.open(wh, read_only=True)) as con:
        return gather(con, Filters(runs=(run_id,)), window={"since": None, "until": None})


def test_one_definition_for_the_stop_rule_the_report_and_the_terminal(real_rollout, reviewed,
                                                                       tmp_path: Path) -> None:
    from analysis.dashboard import dashboard
    from analysis.report import render
    from analysis.report.sections import dashboard as dashboard_section
    from analysis.rules_check import check_rules
    from analysis.stop_rules import load_rules
    from warehouse import db

    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - id: weak-regression-free\n    metric: regression_free_rate\n"
                     "    below: 0.95\n    window: {last: 2, unit: runs}\n    scope: {config: sim-weak}\n"
                     "    owner: Maria\n")
    with closing(db.open(reviewed["wh"], read_only=True)) as con:  # both runs: the regrade's trials
        fired = check_rules(con, load_rules(rules)).results[0]
        whole = {r["variant"]: r for r in dashboard(con).rows}
    assert (fired.k, fired.n) == (whole["sim-weak"]["regression_free"], whole["sim-weak"]["regression_free_n"])
    weak = reviewed["rows"]["sim-weak"]
    data = report_data(reviewed["wh"], real_rollout.run_id)
    doc = render.document(data, title="t", version="0", warehouse="w", generated_at="now", charts={},
                          skipped={})
    assert doc["dashboard"]["rows"] == reviewed["json"]["rows"]
    section = dashboard_section.section(data)
    assert section is not None and section.tables[0].columns[-1].name == "review min / accepted [95% CI]"
    table = th("summarize", "--rates", "-w", str(reviewed["wh"]), "--run", real_rollout.run_id).stdout
    k, n = weak["target_fix"], weak["target_fix_n"]
    assert f"{k}/{n} ({100 * k / n:.0f}%)" in table and "sim-weak" in table
