"""matrix: the designs people run (one model × harnesses, models × one harness, the grid),
incomplete grids, ties, and an interaction test that is valid or absent.

Every statistic is checked against scipy/statsmodels or worked by hand.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import binomtest, ttest_1samp
from statsmodels.stats.multitest import multipletests

from analysis import matrix
from analysis.errors import AnalysisError

A, R = "accepted", "target_failed"


def _trials(spec: dict[tuple[str, str], dict[str, list[str]]]) -> list[dict]:
    """{(model, harness): {case: [outcome per rep]}} -> trial dicts (one config per cell)."""
    out = []
    for (model, harness), cases in spec.items():
        for case, outcomes in cases.items():
            for rep, o in enumerate(outcomes, 1):
                out.append({"config_id": f"{model}+{harness}", "model": model,
                            "harness": harness, "case_id": case, "rep": rep, "outcome": o})
    return out


def _cells(rates: dict[tuple[str, str], list[tuple[int, int]]]) -> dict:
    """{(model, harness): [(accepted, valid) per task]} -> the _trials spec."""
    return {cell: {f"t{i}": [A] * c + [R] * (n - c) for i, (c, n) in enumerate(tasks)}
            for cell, tasks in rates.items()}


def test_one_model_under_three_harnesses_gives_harness_effects(wh):
    rates = {("m", "h1"): [(0, 2), (1, 2), (0, 2), (1, 2), (0, 2), (2, 2), (0, 2), (1, 2)],
             ("m", "h2"): [(2, 2), (2, 2), (1, 2), (2, 2), (1, 2), (2, 2), (2, 2), (2, 2)],
             ("m", "h3"): [(0, 2), (1, 2), (0, 2), (1, 2), (0, 2), (2, 2), (0, 2), (1, 2)]}
    m = matrix.matrix(wh(_trials(_cells(rates))))
    assert m.design == "harnesses" and m.models == ["m"] and m.harnesses == ["h1", "h2", "h3"]
    assert not m.model_effects and len(m.harness_effects) == 3
    e = {(x["harness_a"], x["harness_b"]): x for x in m.harness_effects}
    d = np.array([c2 / 2 - c1 / 2 for (c1, _), (c2, _) in zip(rates[("m", "h1")],
                                                            rates[("m", "h2")], strict=True)])
    h12 = e[("h1", "h2")]
    ref = ttest_1samp(d, 0).confidence_interval()
    assert h12["mean_diff"] == pytest.approx(d.mean())
    assert (h12["ci_low"], h12["ci_high"]) == pytest.approx((ref.low, ref.high))
    assert h12["sign_test"]["improvements"] == 7 and h12["sign_test"]["regressions"] == 0
    assert h12["sign_test"]["p"] == pytest.approx(binomtest(7, 7).pvalue)
    ps = [x["sign_test"]["p"] for x in m.harness_effects]
    assert [x["sign_test"]["p_holm"] for x in m.harness_effects] == pytest.approx(
        list(multipletests(ps, method="holm")[1]))
    # h1 and h3 have identical rates: a tie, never an order
    assert m.ranking_groups == {"m": [["h2"], ["h1", "h3"]]}
    assert "h2 > h1 = h3" in m.verdict and "h1 > h3" not in m.verdict
    assert e[("h1", "h3")]["sign_test"]["n"] == 0
    assert m.interaction["estimable"] is False and m.logit is None


def test_models_under_one_harness_gives_model_effects(wh, close):
    rates = {("ma", "h"): [(1, 1)] * 6 + [(0, 1)] * 2, ("mb", "h"): [(0, 1)] * 6 + [(1, 1)] * 2}
    con = wh(_trials(_cells(rates)))
    m = matrix.matrix(con)
    assert m.design == "models" and not m.harness_effects
    (e,) = m.model_effects
    assert (e["model_a"], e["model_b"]) == ("ma", "mb")
    assert (e["sign_test"]["improvements"], e["sign_test"]["regressions"]) == (2, 6)
    assert e["sign_test"]["p"] == pytest.approx(binomtest(2, 8).pvalue)
    assert m.rankings == {"h": ["ma", "mb"]} and "ma > mb" in m.verdict
    close(m.as_dict(), matrix.matrix(con).as_dict(), rel_tol=0, abs_tol=0)


def test_an_all_pass_grid_is_ties_and_no_interaction_finding(wh):
    """The issue's warehouse: 2 × 2, every trial solved. Ties are ties, and separation is
    said plainly instead of a chi2 of thousands; the same numbers on every run."""
    rates = {(mo, h): [(3, 3)] * 12 for mo in ("ma", "mb") for h in ("h1", "h2")}
    con = wh(_trials(_cells(rates)))
    first = matrix.matrix(con)
    assert first.design == "full" and first.ranking_changes is False
    assert first.ranking_groups == {"h1": [["ma", "mb"]], "h2": [["ma", "mb"]]}
    assert "ma > mb" not in first.verdict and "h1: ma = mb" in first.verdict
    it = first.interaction
    (c,) = it["contrasts"]
    assert c["mean"] == 0 and c["n"] == 0 and it["p"] == 1.0 and not it["p_reachable"]
    assert "no interaction in these data" in it["note"]
    assert it["chi2"] is None and first.logit is not None
    assert first.logit["estimable"] is False and "separation" in first.logit["note"]
    assert "differs between models" not in first.verdict
    assert json.dumps(first.as_dict(), allow_nan=False) == json.dumps(
        matrix.matrix(con).as_dict(), allow_nan=False)


def test_a_degenerate_cell_keeps_the_task_level_test_and_drops_the_logit(wh):
    rng = np.random.default_rng(7)
    rates = {("ma", "h1"): [(int(rng.integers(0, 3)), 2) for _ in range(14)],
             ("ma", "h2"): [(int(rng.integers(0, 3)), 2) for _ in range(14)],
             ("mb", "h1"): [(int(rng.integers(0, 3)), 2) for _ in range(14)],
             ("mb", "h2"): [(0, 2)] * 14}  # all fail
    m = matrix.matrix(wh(_trials(_cells(rates))))
    p = {k: np.array([c / n for c, n in v]) for k, v in rates.items()}
    contrast = p[("mb", "h2")] - p[("mb", "h1")] - p[("ma", "h2")] + p[("ma", "h1")]
    (c,) = m.interaction["contrasts"]
    ref = ttest_1samp(contrast, 0).confidence_interval()
    assert c["mean"] == pytest.approx(contrast.mean())
    assert (c["ci_low"], c["ci_high"]) == pytest.approx((ref.low, ref.high))
    pos, neg = int((contrast > 0).sum()), int((contrast < 0).sum())
    assert (c["positive"], c["negative"]) == (pos, neg)
    assert m.interaction["p"] == pytest.approx(binomtest(min(pos, neg), pos + neg).pvalue)
    assert m.logit["estimable"] is False and "mb × h2 (all fail)" in m.logit["note"]


def test_interaction_contrasts_of_a_2x3_grid_are_holm_adjusted(wh):
    rng = np.random.default_rng(3)
    cells = [(mo, h) for mo in ("ma", "mb") for h in ("h1", "h2", "h3")]
    rates = {k: [(int(rng.integers(0, 4)), 3) for _ in range(20)] for k in cells}
    m = matrix.matrix(wh(_trials(_cells(rates))))
    cs = m.interaction["contrasts"]
    assert [(c["model"], c["harness"]) for c in cs] == [("mb", "h2"), ("mb", "h3")]
    raw = []
    for c in cs:
        diff = [(b - a - d + e) for (a, _), (b, _), (d, _), (e, _) in zip(
            rates[("mb", "h1")], rates[("mb", c["harness"])], rates[("ma", c["harness"])],
            rates[("ma", "h1")], strict=True)]
        pos, neg = sum(x > 0 for x in diff), sum(x < 0 for x in diff)
        raw.append(binomtest(min(pos, neg), pos + neg).pvalue if pos + neg else 1.0)
    assert [c["p"] for c in cs] == pytest.approx(raw)
    holm = list(multipletests(raw, method="holm")[1])
    assert [c["p_holm"] for c in cs] == pytest.approx(holm)
    assert m.interaction["p"] == pytest.approx(min(holm))


def test_the_logistic_interaction_matches_a_statsmodels_formula_fit(tmp_path):
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from tests.support.synthetic_warehouse import Spec, generate
    from warehouse import db

    path = tmp_path / "syn" / "t.duckdb"
    generate(path, Spec(models=2, harnesses=2, tasks=60, reps=3, seed=1))
    con = db.open(path, read_only=True)
    try:
        m = matrix.matrix(con)
        rows = con.execute("""
            SELECT case_id, model, harness, count(*) FILTER (WHERE outcome = 'accepted') AS c,
                   count(*) AS n
            FROM trials WHERE outcome NOT IN ('infra_error', 'invalid') AND complete
            GROUP BY ALL ORDER BY ALL""").df()
    finally:
        con.close()
    rows["fail"] = rows["n"] - rows["c"]
    res = smf.glm("c + fail ~ C(model) * C(harness)", data=rows,
                  family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": rows["case_id"].astype("category").cat.codes})
    name = [n for n in res.params.index if ":" in n][0]
    wald = res.params[name] ** 2 / res.cov_params().loc[name, name]
    assert m.logit["estimable"] and m.logit["chi2"] == pytest.approx(wald, rel=1e-6)
    # The generator's interaction (harness-1 helps model-a, hurts model-b) is detected by
    # the task-level test too, and model-a stays ahead under both harnesses.
    assert m.interaction["p"] < 0.05 and m.ranking_changes is False
    assert m.verdict.startswith("No harness reverses")


def test_an_incomplete_grid_is_analysed_on_its_largest_complete_sub_grid(wh):
    full = [(1, 2), (2, 2), (0, 2), (1, 2)]
    rates = {(mo, h): full for mo in ("ma", "mb", "mc") for h in ("h1", "h2", "h3")}
    del rates[("mc", "h3")]  # mc never ran under h3
    m = matrix.matrix(wh(_trials(_cells(rates))))
    # 3 × 2 (6 cells) or 2 × 3 (6 cells); equal tasks, equal balance: the sorted-first
    # subset wins, deterministically. Either way the dropped cells are named.
    assert len(m.models) * len(m.harnesses) == 6 and m.design == "full"
    dropped = {(d["model"], d["harness"]): d["reason"] for d in m.dropped_cells}
    assert ("mc", "h3") in dropped and dropped[("mc", "h3")] == "not run"
    assert any("left out to keep the grid complete" == r for r in dropped.values())
    assert any("incomplete grid" in w and "mc × h3 (not run)" in w for w in m.warnings)


def test_a_dropped_cell_missing_a_common_task_does_not_break_the_sub_grid(wh):
    """The Terminal-Bench leaderboard shape: one model under many harnesses plus other
    models under one harness each; a cell left out of the sub-grid lacks a task the
    sub-grid shares (all its trials there were infra errors)."""
    full = [(1, 2), (2, 2), (0, 2), (1, 2), (2, 2)]
    rates = {("m", h): full for h in ("h1", "h2", "h3")}
    rates[("other", "h1")] = full[:3]  # no valid trial on t3, t4
    m = matrix.matrix(wh(_trials(_cells(rates))))
    assert m.design == "harnesses" and m.models == ["m"] and m.common_tasks == 5
    assert {(d["model"], d["harness"]) for d in m.dropped_cells} >= {("other", "h1")}


def test_a_grid_is_never_one_cell_and_never_spans_universes(wh, wh_runs):
    one = wh(_trials({("m", "h"): {"t1": [A]}}))
    with pytest.raises(AnalysisError, match="only one model × harness cell .* two models or "
                                            "two harnesses"):
        matrix.matrix(one)
    two = wh_runs([
        ("r1", _trials(_cells({("ma", "h"): [(1, 1)], ("mb", "h"): [(0, 1)]})),
         [{"case_id": "t0", "benchmark": "B1"}]),
        ("r2", _trials(_cells({("mc", "h"): [(1, 1)], ("md", "h"): [(0, 1)]})),
         [{"case_id": "t0", "benchmark": "B2"}])])
    with pytest.raises(AnalysisError, match="2 task universes .* --universe NAME"):
        matrix.matrix(two)
    from analysis.filters import Filters

    only = matrix.matrix(two, Filters.parse(universes=["B2"]))
    assert only.models == ["mc", "md"] and only.universe == "B2"
