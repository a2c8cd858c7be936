"""Baselines (null, reference agents) are reference points: never candidates, never in a Holm
family, never the default baseline, never ineligible (analysis/eligibility.py)."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests

from analysis import compare
from analysis.eligibility import (
    Eligibility,
    RegressionCheck,
    blockers,
    default_baseline,
    eligibility_from_kinds,
)
from analysis.errors import AnalysisError
from analysis.headline import headline

A, R = "accepted", "target_failed"


def _trials(grid, spec: dict[str, tuple[str | None, dict[str, list[str]]]]) -> list[dict]:
    """{config: (agent_kind, {case: outcomes})} in manifest order (variant_order = position)."""
    out = []
    for cfg, (kind, cases) in spec.items():
        out += [dict(t, agent_kind=kind) for t in grid({cfg: cases})]
    return out


def _bench(grid) -> list[dict]:
    cases = [f"t{i}" for i in range(8)]
    return _trials(grid, {
        "null": ("null", {c: [R] for c in cases}),
        "oracle": ("reference", {c: [A] for c in cases}),
        "base": ("simulated", {c: [A if i % 2 else R] for i, c in enumerate(cases)}),
        "better": ("command", {c: [A] for c in cases}),
        "worse": ("command", {c: [R] for c in cases}),
    })


def test_default_baseline_is_the_first_non_baseline_variant_and_baselines_stay_out(wh, grid):
    res = compare.compare(wh(_bench(grid)))
    assert res.baseline.config_id == "base" and res.chosen == "default"
    assert [c.config_id for c in res.candidates] == ["better", "worse"]
    assert {b.config_id for b in res.excluded_baselines} == {"null", "oracle"}
    # Holm over the two candidates only: the oracle's and null's p-values never enter it.
    ps = [c.sign_test.p for c in res]
    assert ps == pytest.approx([binomtest(4, 4).pvalue, binomtest(0, 4).pvalue])
    assert [c.sign_test.p_holm for c in res] == pytest.approx(list(multipletests(ps, method="holm")[1]))
    assert res.as_dict()["holm_family"] == ["better", "worse"]


def test_a_baseline_may_be_the_baseline_but_never_a_candidate(wh, grid):
    con = wh(_bench(grid))
    against_null = compare.compare(con, baseline="null")
    assert [c.candidate.config_id for c in against_null] == ["base", "better", "worse"]
    with pytest.raises(AnalysisError, match="oracle is a baseline .*never a candidate"):
        compare.compare(con, baseline="base", candidates=["oracle"])


def test_only_baselines_means_no_candidate(wh, grid):
    trials = _trials(grid, {"null": ("null", {"t1": [R]}), "oracle": ("reference", {"t1": [A]})})
    with pytest.raises(AnalysisError, match="no candidate: every other configuration is a baseline"):
        compare.compare(wh(trials))


def test_default_baseline_rule_on_records():
    roles = eligibility_from_kinds({"n": "null", "r": "reference", "a": "simulated", "b": None})
    rows = [{"config_id": c, "variant_order": i, "run_started_at": None, "run_id": "r1"}
            for i, c in enumerate(["n", "r", "a", "b"])]
    assert default_baseline(rows, roles) == "a"
    assert default_baseline([dict(r, variant_order=None) for r in rows], roles) is None
    assert roles["b"].is_candidate and roles["n"].is_baseline and not roles["n"].is_candidate


def test_baselines_are_never_ineligible_and_a_regression_is_no_gate():
    """A candidate's invalid trials make it ineligible; its significant regression is
    reported apart (its trials are sound: it stays eligible, distinguishably worse)."""
    roles = {"n": Eligibility("n", "baseline", "null"), "c": Eligibility("c", "candidate")}
    names = {"n": {"config_id": "n", "variant": "null"}, "c": {"config_id": "c", "variant": "cand"}}
    checks = [RegressionCheck(names["n"], "c", 0, 18, 1e-5),  # the old "null regressed" bug
              RegressionCheck(names["c"], "n", 1, 7, 0.03),
              RegressionCheck(names["c"], "previous_period", 1, 7, 0.2)]
    found = blockers({"n": 1, "c": 2}, names, checks, roles)
    assert [(b.kind, b.config_id) for b in found.found] == [("invalid_trials", "c")]
    assert [(b.kind, b.config_id) for b in found.regressions] == [("severe_regression", "c")]
    assert found.regressions[0].p == 0.03 and "regressed on 7 task(s)" in found.regressions[0].message
    assert len(found.notes) == 1 and "null" in found.notes[0] and "never ineligible" in found.notes[0]


def test_headline_names_the_winner_with_the_numbers_of_the_comparison(wh, grid):
    res = compare.compare(wh(_bench(grid)))
    head = headline(res)
    assert "2 candidates against the baseline base (the first variant" in head.context
    assert "reference points, not candidates: null, oracle" in head.context
    assert head.intro.splitlines()[-1] == head.context
    better, worse = head.lines
    # base accepts t1, t3, t5, t7; better accepts all: +50 points, 4 improved / 0 regressed.
    assert better.effect == pytest.approx(0.5) and (better.improved, better.regressed) == (4, 0)
    assert better.p == pytest.approx(binomtest(4, 4).pvalue)
    assert better.sentence.startswith("better accepts 50.0 points more tasks than base")
    assert "not distinguishable: only 4 of 8 tasks differ, too few for the sign test" in better.sentence
    assert worse.sentence.startswith("worse accepts 50.0 points fewer tasks than base")
    # Every trial costs $0.01: base $0.08 / 4 accepted, better $0.08 / 8, worse accepts none.
    assert better.cost_change == "−50%" and better.sentence.endswith("cost per accepted −50%.")
    assert worse.cost_change is None
    assert worse.sentence.endswith("cost per accepted ∞ (none accepted) against $0.0200.")


def test_headline_says_distinguishable_only_when_the_holm_p_is_small(wh, grid):
    cases = [f"t{i}" for i in range(12)]
    trials = _trials(grid, {"base": ("simulated", {c: [R] for c in cases}),
                            "cand": ("simulated", {c: [A] for c in cases})})
    (line,) = headline(compare.compare(wh(trials))).lines
    assert line.distinguishable and line.p == pytest.approx(binomtest(12, 12).pvalue)
    assert "distinguishable with 12 tasks: a real improvement" in line.sentence
    assert ", Holm" not in line.sentence  # a family of one
