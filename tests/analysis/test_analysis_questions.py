"""Each analysis question on small hand-built warehouses with known answers (edge cases)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from analysis import compare, consistency, failures, familiarity, latency, matrix, pareto, stats
from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.summary import summarize

A, R = "accepted", "target_failed"


def test_summary_counts_incomplete_infra_invalid_and_cost(wh, grid):
    trials = grid({"base": {"t1": [A, R, "infra_error"], "t2": [A, "invalid", A]}})
    trials.append({"config_id": "base", "case_id": "t1", "rep": 4, "outcome": None})
    con = wh(trials)
    row = summarize(con).rows[0]
    assert (row["trials"], row["incomplete"], row["valid"], row["solved"]) == (6, 1, 4, 3)
    assert (row["infra"], row["invalid"]) == (1, 1)
    assert row["rate"] == 0.75 and row["tasks"] == 2
    assert row["task_mean"] == pytest.approx((1 / 2 + 2 / 2) / 2)
    assert row["cost_usd"] == pytest.approx(0.06)  # all complete trials, failed ones included
    assert row["cost_per_accepted"] == pytest.approx(0.02)


def test_zero_accepted_gives_infinite_cost_per_accepted_and_json_inf(wh, grid):
    con = wh(grid({"c": {"t1": [R, R], "t2": [R]}}))
    s = summarize(con)
    assert s.rows[0]["cost_per_accepted"] == float("inf")
    dumped = json.dumps(s.as_dict(), allow_nan=False)
    # cost_per_solved: the old name, kept beside the new one (docs/analysis.md)
    assert '"cost_per_accepted": "inf", "cost_per_solved": "inf"' in dumped


def test_unknown_cost_on_one_trial_makes_totals_unknown(wh, grid):
    trials = grid({"c": {"t1": [A, R, A]}})
    trials[1]["cost_usd"] = None
    row = summarize(wh(trials)).rows[0]
    assert row["cost_usd"] is None and row["cost_per_accepted"] is None
    assert row["cost_known"] == 2 and row["cost_coverage"] == pytest.approx(2 / 3)
    assert row["cost_p50"] == pytest.approx(0.01)


def test_configuration_missing_tasks_is_restricted_to_common_tasks(wh, grid):
    con = wh(grid({"a": {"t1": [A], "t2": [A], "t3": [R]}, "b": {"t1": [R], "t2": [A]}}))
    s = summarize(con)
    rows = {r["config_id"]: r for r in s.rows}
    assert rows["a"]["valid"] == 2 and rows["b"]["valid"] == 2
    assert s.excluded_cases == [{"config_id": "a", "variant": "a", "model": "m", "harness": "h",
                                 "harness_version": "1", "universe": "r1",
                                 "case_ids": ["t3"]}]


def test_summary_task_interval_is_cut_at_the_possible_range(wh, grid):
    """Two tasks, one always solved and one never: the t interval runs far past [0, 1]; the
    summary (and so the terminal, the report, --json and the notebooks) gives [0, 1]."""
    con = wh(grid({"c": {"t0": [A, A], "t1": [R, R]}}))
    row = summarize(con).rows[0]
    half = stats.t_crit(1) * 0.5 ** 0.5 / 2 ** 0.5  # sd of (1, 0) over √2 tasks
    assert 0.5 - half < -1 and 0.5 + half > 2  # what the notebook printed before
    assert (row["task_mean"], row["task_ci_low"], row["task_ci_high"]) == (0.5, 0.0, 1.0)


def test_summary_task_interval_matches_statsmodels_and_slices(wh, grid):
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    spec = {f"t{i}": [A if u < 0.6 else R for u in rng.random(3)] for i in range(8)}
    con = wh(grid({"c": spec}), cases=[{"case_id": f"t{i}", "task_class": "x" if i < 4 else "y"}
                                       for i in range(8)])
    row = summarize(con).rows[0]
    y = np.array([[o == A for o in v] for v in spec.values()], dtype=float).ravel()
    g = np.repeat(np.arange(8), 3)
    res = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    lo, hi = res.conf_int()[0]
    assert (row["task_ci_low"], row["task_ci_high"]) == pytest.approx((max(0, lo), min(1, hi)))
    sliced = summarize(con, by="task_class")
    assert [r["task_class"] for r in sliced.rows] == ["x", "y"]
    assert sum(r["valid"] for r in sliced.rows) == 24
    assert summarize(con, Filters.parse(labels=["task_class=y"])).rows[0]["valid"] == 12


def test_filters_reject_bad_input():
    with pytest.raises(AnalysisError, match="key=value"):
        Filters.parse(labels=["oops"])
    with pytest.raises(AnalysisError, match="--since"):
        Filters.parse(since="yesterday")


def test_compare_counts_pairs_and_sign_test(wh, grid):
    base = {"t1": [A, A], "t2": [R, R], "t3": [A, R], "t4": [R, "infra_error"],
            "t5": [A, A], "t6": [R, R], "t7": [R, R]}
    cand = {"t1": [A, A], "t2": [A, A], "t3": [A, A], "t4": [A, A], "t5": [R, A],
            "t6": [A, R], "t7": [A, A]}
    con = wh(grid({"base": base, "cand": cand}))
    (c,) = compare.compare(con, baseline="base", candidates=["cand"])
    d = c.as_dict()
    assert d["pairs"] == {"pairs": 13, "candidate_only": 7, "baseline_only": 1, "both": 4,
                          "neither": 1, "excluded": 1, "incomplete": 0}
    st = d["sign_test"]
    assert (st["improvements"], st["regressions"], st["ties"]) == (5, 1, 1)
    assert st["p"] == pytest.approx(binomtest(5, 6, 0.5).pvalue)
    assert st["p_reachable"] is True
    assert d["cost"]["status"] == "ok"
    assert d["consistency"]["comparable"] is False  # t4 has 1 valid baseline trial


def test_compare_all_ties_small_n_and_unknown_cost(wh, grid):
    trials = grid({"b": {"t1": [A], "t2": [R]}, "c": {"t1": [A], "t2": [R]}})
    trials[0]["cost_usd"] = None
    (c,) = compare.compare(wh(trials), baseline="b", candidates=["c"])
    d = c.as_dict()
    assert d["sign_test"]["n"] == 0 and d["sign_test"]["p"] == 1.0
    assert d["sign_test"]["p_reachable"] is False
    assert any("unreachable" in w for w in d["warnings"])
    assert d["cost"]["status"] == "cost coverage incomplete"
    assert d["cost"]["mean_diff_usd"] is None


def test_compare_one_task_and_holm_over_candidates(wh, grid):
    spec = {"b": {"t1": [R, R]}, "c1": {"t1": [A, A]}, "c2": {"t1": [A, R]}}
    comps = compare.compare(wh(grid(spec)), baseline="b")
    assert [c.candidate.config_id for c in comps] == ["c1", "c2"]
    ps = [c.sign_test.p for c in comps]
    from statsmodels.stats.multitest import multipletests

    assert [c.sign_test.p_holm for c in comps] == pytest.approx(
        list(multipletests(ps, method="holm")[1]))
    assert comps[0].paired_difference.ci_low is None  # one task: no interval


def test_compare_resolves_names_and_refuses_unknown(wh, grid):
    con = wh(grid({"abc123": {"t1": [A]}, "abd999": {"t1": [R]}}))
    with pytest.raises(AnalysisError, match="ambiguous"):
        compare.compare(con, baseline="ab")
    with pytest.raises(AnalysisError, match="not found"):
        compare.compare(con, baseline="zzz")
    (c,) = compare.compare(con, baseline="abd")
    assert c.baseline.config_id == "abd999"


def test_compare_report_json(tmp_path):
    report = {"run_id": "r", "trials": [
        {"trial_id": f"x{i}", "case_id": f"t{i % 3}", "variant": v, "config_id": v,
         "repetition": 1, "holdout": i % 3 == 2, "outcome": o, "duration_s": 5.0,
         "usage": {"cost_usd": 0.5}}
        for i, (v, o) in enumerate([("base", R), ("base", A), ("base", A),
                                    ("new", A), ("new", A), ("new", R)])]}
    # trials 0..2 → base on t0,t1,t2; 3..5 → new on t0,t1,t2
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    (c,) = compare.compare_report(path)
    d = c.as_dict()
    assert d["baseline"]["config_id"] == "base"
    assert d["tasks"]["common"] == 2 and d["holdout"]["tasks"]["common"] == 1
    assert d["sign_test"]["improvements"] == 1 and d["holdout"]["sign_test"]["regressions"] == 1
    with pytest.raises(AnalysisError, match="trials"):
        (tmp_path / "bad.json").write_text("{}")
        compare.compare_report(tmp_path / "bad.json")


def test_consistency_pass_k_and_refusal(wh, grid):
    spec = {"five": {"t1": [A, A, A, R, R], "t2": [A] * 5},
            "three": {"t1": [A, A, A], "t2": [R, A, A]}}
    res = consistency.consistency(wh(grid(spec)))
    five = res.row("five")
    assert five["consistent"] == 1 and five["min_n"] == 5
    assert five["pass_hat_k"][1] == pytest.approx((0.3 + 1) / 2)
    assert five["pass_at_k"][1] == pytest.approx((0.9 + 1) / 2)
    assert len(five["pass_hat_k"]) == 5
    with pytest.raises(AnalysisError, match="not comparable"):
        consistency.check_comparable(res, "five", "three")


def test_pareto_front_and_dominators(wh, grid):
    trials = (grid({"cheap": {"t1": [A, R]}}, cost_usd=0.01)
              + grid({"good": {"t1": [A, A]}}, cost_usd=0.05)
              + grid({"bad": {"t1": [R, A]}}, cost_usd=0.2)
              + grid({"none": {"t1": [R, R]}}, cost_usd=0.01))
    res = pareto.pareto(wh(trials), convex=True)
    rows = {r["config_id"]: r for r in res.rows}
    assert rows["cheap"]["on_front"] and rows["good"]["on_front"]
    assert rows["bad"]["on_front"] is False
    assert set(rows["bad"]["dominated_by"]) == {"cheap", "good"}
    assert rows["none"]["x"] == float("inf") and rows["none"]["on_front"] is False


def test_matrix_refuses_two_configurations_in_one_cell(wh, grid):
    same_cell = wh(grid({"a": {"t1": [A]}, "b": {"t1": [R]}}))
    with pytest.raises(AnalysisError, match="several configurations"):
        matrix.matrix(same_cell)


def test_failures_latest_category_per_annotator_and_lost_spend(wh, grid):
    from datetime import UTC, datetime

    trials = grid({"c": {"t1": [A, R, R]}}, cost_usd=0.1)
    for i, t in enumerate(trials):
        t["trial_id"] = f"x{i}"
    early, late = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    judg = [
        {"trial_id": "x1", "kind": "failure_category", "category": "verification",
         "annotator": "ann", "ts": early},
        {"trial_id": "x1", "kind": "failure_category", "category": "implementation",
         "annotator": "ann", "ts": late},
        {"trial_id": "x2", "kind": "failure_category", "category": "implementation",
         "annotator": "ann", "ts": early},
        {"trial_id": "x0", "kind": "review_decision", "verdict": "reject", "annotator": "rev"},
    ]
    con = wh(trials, judgments=judg)
    df = failures.failures(con).table
    cat = df.filter(df["dimension"] == "category").to_dicts()
    assert [(r["value"], r["count"], r["total"]) for r in cat] == [("implementation", 2, 2)]
    assert cat[0]["lost_spend_usd"] == pytest.approx(0.2)
    out = df.filter(df["dimension"] == "outcome").to_dicts()
    assert [(r["value"], r["count"]) for r in out] == [("accepted", 1), ("target_failed", 2)]
    dis = failures.review_disagreements(con)
    assert [r["trial_id"] for r in dis.rows] == ["x0"]


def test_familiarity_gap_matches_statsmodels(wh):
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    trials, cases = [], []
    for i in range(30):
        repo = f"r{i % 6}"
        fam = "known" if i % 6 < 3 else "unknown"
        cases.append({"case_id": f"t{i}", "repository": repo, "familiarity": fam})
        for rep in (1, 2):
            ok = rng.random() < (0.7 if fam == "known" else 0.4)
            trials.append({"config_id": "c", "case_id": f"t{i}", "rep": rep,
                           "outcome": A if ok else R})
    row = familiarity.familiarity(wh(trials, cases=cases)).rows[0]
    y = np.array([t["outcome"] == A for t in trials], dtype=float)
    x = np.array([int(t["case_id"][1:]) % 6 < 3 for t in trials], dtype=float)
    g = np.array([int(t["case_id"][1:]) % 6 for t in trials])
    res = sm.OLS(y, sm.add_constant(x)).fit(cov_type="cluster", cov_kwds={"groups": g},
                                            use_t=True)
    assert row["gap"] == pytest.approx(res.params[1])
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(res.conf_int()[1]))
    assert row["g"] == 6 and row["small_g"] is True


def test_latency_quantiles_match_numpy(wh):
    durs = [5.0, 7.0, 11.0, 20.0, 3.5]
    trials = [{"config_id": "c", "case_id": f"t{i}", "outcome": A, "duration_s": d,
               "setup_s": 1.0, "ttfe": None if i else 2.0} for i, d in enumerate(durs)]
    row = latency.latency(wh(trials)).rows[0]
    for q, key in ((0.5, "total_p50"), (0.9, "total_p90"), (0.95, "total_p95")):
        assert row[key] == pytest.approx(float(np.quantile(durs, q)))
    assert row["first_edit_n"] == 1 and row["agent_n"] == 0


def test_analyses_run_on_runs_jsonl_import(tmp_path):
    """The same questions answer on a warehouse built from a foreign format."""
    from ingest.api import ingest_paths
    from warehouse import db

    lines = []
    for m in ("ma", "mb"):
        for h in ("h1", "h2"):
            for t in range(6):
                for r in (1, 2):
                    ok = (t + r + len(m + h)) % 3 != 0
                    lines.append({"model": m, "harness": h, "harness_version": "1",
                                  "task_id": f"t{t}", "trial": r,
                                  "status": "solved" if ok else "failed",
                                  "input_tokens": 1000, "output_tokens": 100, "steps": 4})
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(x) + "\n" for x in lines))
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({m: {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
                                  for m in ("ma", "mb")}))
    wh = tmp_path / "w" / "t.duckdb"
    ingest_paths([runs], wh, format="runs-jsonl", prices=prices)
    con = db.open(wh, read_only=True)
    s = summarize(con)
    assert len(s.rows) == 4 and all(r["cost_coverage"] == 1.0 for r in s.rows)
    assert len(compare.compare(con)) == 3
    assert consistency.consistency(con).height == 4
    assert any(r["on_front"] for r in pareto.pareto(con).rows)
    matrix.matrix(con)
    con.close()


def test_cli_json_and_one_line_errors(tmp_path):
    from tests.support.synthetic_warehouse import Spec, generate

    path = tmp_path / "s" / "t.duckdb"
    generate(path, Spec(models=2, harnesses=2, tasks=12, reps=2))
    root = Path(__file__).resolve().parents[2]
    cli = [sys.executable, "-m", "trialhouse"]
    out = subprocess.run([*cli, "pareto", "--json", "-w", str(path)], capture_output=True,
                         text=True, cwd=root, check=True).stdout
    rows = json.loads(out)["rows"]
    assert {"config_id", "model", "harness", "harness_version", "variant", "on_front"} <= set(
        rows[0])
    bad = subprocess.run([*cli, "compare", "--baseline", "nope", "-w", str(path)],
                         capture_output=True, text=True, cwd=root)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().startswith("trialhouse: configuration 'nope' not found")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_trial_facts_and_the_analyses_share_the_valid_trial_rule(wh, grid):
    """trial_facts (a stored view) and every analysis (warehouse/sql/trial_status.sql) agree on
    which trials are valid and solved, incomplete ones included."""
    from analysis.data import TRIALS

    trials = grid({"c": {"t1": [A, R, "infra_error", "invalid", "regression"]}})
    trials.append({"config_id": "c", "case_id": "t1", "rep": 6, "outcome": None})
    con = wh(trials)
    facts = con.execute("SELECT trial_id, valid, solved FROM trial_facts ORDER BY 1").fetchall()
    ours = con.execute(f"SELECT trial_id, valid, solved FROM {TRIALS} t ORDER BY 1").fetchall()
    assert [tuple(bool(v) for v in r[1:]) for r in facts] == [r[1:] for r in ours]
    assert [r[1:] for r in ours] == [(True, True), (True, False), (False, False), (False, False),
                                     (True, False), (False, False)]
