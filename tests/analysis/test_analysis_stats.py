"""Pure statistics against scipy/statsmodels, exact enumeration and STATISTICS.md examples."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from analysis import stats


def test_wilson_worked_example_9_of_10():
    lo, hi = stats.wilson(9, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.5958, 0.9821)


@pytest.mark.parametrize("k,n", [(0, 1), (0, 7), (3, 7), (7, 7), (1, 2), (50, 137), (999, 1000)])
def test_wilson_matches_statsmodels(k, n):
    lo, hi = stats.wilson(k, n)
    slo, shi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert lo == pytest.approx(slo, abs=1e-12)
    assert hi == pytest.approx(shi, abs=1e-12)


def test_wilson_no_trials_is_unknown():
    assert stats.wilson(0, 0) == (None, None)


def test_t_crit_matches_scipy():
    for df in [*range(1, 60), 99, 500, 2999, 16_665, 200_000]:
        assert stats.t_crit(df) == pytest.approx(student_t.ppf(0.975, df), rel=1e-10)
    for df in (1, 7, 40_000):
        for level in (0.5, 0.9, 0.99, 0.999):
            assert stats.t_crit(df, level) == pytest.approx(
                student_t.ppf((1 + level) / 2, df), rel=1e-10)


@pytest.mark.parametrize("w,l_", [(0, 0), (1, 0), (5, 0), (6, 0), (3, 3), (10, 2), (2, 17),
                                  (40, 25)])
def test_sign_test_matches_binomtest(w, l_):
    res = stats.sign_test(w, l_)
    n = w + l_
    if n == 0:
        assert res["p"] == 1.0
        return
    assert res["p"] == pytest.approx(binomtest(w, n, 0.5).pvalue, rel=1e-12)
    m = min(w, l_)
    pmf = [math.comb(n, i) / 2**n for i in range(n + 1)]
    mid = 2 * (sum(pmf[: m + 1]) - pmf[m] / 2)
    assert res["mid_p"] == pytest.approx(min(1.0, mid), rel=1e-12)


def test_sign_test_reachability_boundary():
    # N = 5: the most extreme split gives p = 2/32 = 0.0625 > 0.05; N = 6 gives 0.03125.
    assert stats.sign_test(5, 0)["p_reachable"] is False
    assert stats.sign_test(6, 0)["p_reachable"] is True
    assert stats.sign_test(6, 0)["p"] == pytest.approx(0.03125)


@given(st.integers(0, 60), st.integers(0, 60))
@settings(max_examples=200, deadline=None)
def test_sign_test_properties(w, l_):
    a, b = stats.sign_test(w, l_), stats.sign_test(l_, w)
    assert 0.0 <= a["p"] <= 1.0 and 0.0 <= a["mid_p"] <= 1.0
    assert a["p"] == b["p"] and a["mid_p"] == b["mid_p"]
    assert a["mid_p"] <= a["p"]


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    for _ in range(20):
        p = list(rng.uniform(0, 0.2, rng.integers(1, 8)))
        assert stats.holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))


def test_direction_uses_exact_fractions():
    assert stats.direction(1, 3, 2, 6) == "tie"  # 1/3 == 2/6
    assert stats.direction(2, 3, 3, 5) == "improvement"
    assert stats.direction(0, 1, 1, 2) == "regression"


def test_pass_k_worked_example():
    hat, at = stats.pass_curves([(5, 3)])
    assert hat[1] == pytest.approx(0.3) and at[1] == pytest.approx(0.9)
    assert stats.pass_hat_k([(5, 3)], 2) == Fraction(3, 10)
    assert stats.pass_at_k([(5, 3)], 2) == Fraction(9, 10)


def _enumerate(n: int, c: int, k: int) -> tuple[Fraction, Fraction]:
    """Share of k-subsets of the n trials that are all successes / contain one."""
    trials = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    allp = sum(all(trials[i] for i in s) for s in subsets)
    anyp = sum(any(trials[i] for i in s) for s in subsets)
    return Fraction(allp, len(subsets)), Fraction(anyp, len(subsets))


def test_pass_k_against_enumeration_with_unequal_reps():
    tasks = [(5, 3), (3, 3), (4, 0), (6, 2), (3, 1)]
    hat, at = stats.pass_curves(tasks)
    assert len(hat) == 3  # k ≤ min n = 3
    for k in range(1, 4):
        e_hat = sum(_enumerate(n, c, k)[0] for n, c in tasks) / len(tasks)
        e_at = sum(_enumerate(n, c, k)[1] for n, c in tasks) / len(tasks)
        assert hat[k - 1] == float(e_hat) and at[k - 1] == float(e_at)


def test_task_mean_ci_equals_statsmodels_cluster_with_equal_n():
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(12), 4)
    y = (rng.random(groups.size) < 0.6).astype(float)
    res = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                         use_t=True)
    rates = [y[groups == g].mean() for g in range(12)]
    mine = stats.task_mean_ci(rates)
    assert mine["mean"] == pytest.approx(res.params[0])
    assert mine["se"] == pytest.approx(res.bse[0], rel=1e-10)
    lo, hi = res.conf_int()[0]
    assert (mine["ci_low"], mine["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)


def test_task_mean_ci_equals_weighted_cluster_with_unequal_n():
    import statsmodels.api as sm

    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 6, 15)
    groups = np.repeat(np.arange(15), sizes)
    y = (rng.random(groups.size) < 0.5).astype(float)
    w = 1 / sizes[groups]
    res = sm.WLS(y, np.ones_like(y), weights=w).fit(cov_type="cluster",
                                                    cov_kwds={"groups": groups})
    rates = [y[groups == g].mean() for g in range(15)]
    mine = stats.task_mean_ci(rates)
    assert mine["mean"] == pytest.approx(res.params[0])
    assert mine["se"] == pytest.approx(res.bse[0], rel=1e-9)


def test_task_mean_ci_is_the_same_in_any_order():
    """A plain float sum of these rates differs in the last bit with the order (the report's
    summary once differed from summarize's that way); the mean is exactly rounded instead."""
    import itertools
    import math

    rates = [1 / 3, 2 / 3, 1 / 7, 0.1, 0.9, 5 / 6, 1 / 9]
    naive = {sum(p) / len(p) for p in itertools.permutations(rates)}
    assert len(naive) > 1  # the attack: order changes a naive mean
    got = {(c["mean"], c["ci_low"], c["ci_high"])
           for c in map(stats.task_mean_ci, itertools.permutations(rates))}
    assert len(got) == 1
    assert got.pop()[0] == math.fsum(rates) / len(rates)


def test_task_mean_ci_one_task_has_no_interval():
    assert stats.task_mean_ci([0.5])["ci_low"] is None


def test_cluster_diff_matches_statsmodels():
    import statsmodels.api as sm

    rng = np.random.default_rng(5)
    repo = rng.integers(0, 9, 300)
    x = (repo % 2 == 0).astype(float)
    y = (rng.random(300) < 0.4 + 0.2 * x).astype(float)
    res = sm.OLS(y, sm.add_constant(x)).fit(cov_type="cluster", cov_kwds={"groups": repo},
                                            use_t=True)
    mine = stats.cluster_diff(y, x, repo)
    assert mine["b"] == pytest.approx(res.params[1])
    assert mine["se"] == pytest.approx(res.bse[1], rel=1e-9)
    assert (mine["ci_low"], mine["ci_high"]) == pytest.approx(tuple(res.conf_int()[1]), rel=1e-9)


def test_paired_difference_against_scipy():
    from scipy.stats import pearsonr, ttest_rel

    rng = np.random.default_rng(2)
    a, b = rng.random(20), rng.random(20)
    d = stats.paired_difference(list(a), list(b))
    t = ttest_rel(a, b)
    assert d["mean_diff"] / d["se"] == pytest.approx(t.statistic)
    assert d["correlation"] == pytest.approx(pearsonr(a, b)[0])


points = st.lists(st.tuples(st.integers(0, 20).map(float), st.integers(0, 10).map(lambda v: v / 10)),
                  min_size=1, max_size=12)


@given(points)
@settings(max_examples=200, deadline=None)
def test_pareto_front_non_empty_and_mutually_non_dominated(pts):
    dom = stats.pareto_front(pts)
    front = [i for i, d in enumerate(dom) if not d]
    assert front
    for i in front:
        for j in front:
            assert not stats.dominates(pts[i], pts[j])
    for i, d in enumerate(dom):  # every dominator really dominates
        assert all(stats.dominates(pts[j], pts[i]) for j in d)


@given(points, st.data())
@settings(max_examples=200, deadline=None)
def test_adding_a_dominated_point_never_changes_the_front(pts, data):
    dom = stats.pareto_front(pts)
    base = data.draw(st.sampled_from(pts))
    extra = (base[0] + data.draw(st.integers(1, 5)), base[1] - data.draw(st.integers(0, 3)) / 10)
    new = stats.pareto_front([*pts, extra])
    assert [not d for d in new[:-1]] == [not d for d in dom]
    assert new[-1]  # the added point is dominated


def test_convex_front_drops_points_under_the_chord():
    pts = [(1.0, 0.2), (2.0, 0.3), (3.0, 0.8), (4.0, 0.85)]
    front = [i for i, d in enumerate(stats.pareto_front(pts)) if not d]
    assert front == [0, 1, 2, 3]
    assert stats.convex_front(pts, front) == {0, 2, 3}


def test_quantile_matches_numpy():
    v = [3.0, 1.0, 7.5, 2.2, 9.0, 4.4]
    for q in (0.5, 0.9, 0.95):
        assert stats.quantile(v, q) == pytest.approx(float(np.quantile(v, q)))
