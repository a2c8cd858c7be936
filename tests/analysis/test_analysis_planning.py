"""The statistics no anchor ships: noise decomposition, the power planner, rank intervals
and paired bootstrap deltas, each against an independent computation (statsmodels,
scipy, a seeded simulation, or a hand-worked value)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from analysis import compare, noise, plan, ranks, resampling, variance
from analysis.errors import AnalysisError
from analysis.filters import Filters

A, R = "accepted", "target_failed"


def _outcomes(c: int, n: int) -> list[str]:
    return [A] * c + [R] * (n - c)


def _spec(counts: dict[str, list[tuple[int, int]]]) -> dict:
    return {cfg: {f"t{i:03d}": _outcomes(c, n) for i, (c, n) in enumerate(tasks)}
            for cfg, tasks in counts.items()}


# --------------------------------------------------------------------------- noise


def test_components_equal_the_one_way_anova_estimate():
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    rng = np.random.default_rng(11)
    n, tasks = 4, 30
    counts = [(int(rng.binomial(n, p)), n) for p in rng.beta(2, 2, tasks)]
    rows = [{"task": t, "y": y} for t, (c, m) in enumerate(counts)
            for y in [1] * c + [0] * (m - c)]
    table = anova_lm(smf.ols("y ~ C(task)", data=pd.DataFrame(rows)).fit())
    msb, msw = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    comp = variance.components(counts)
    assert comp["within"] == pytest.approx(msw)
    assert comp["between"] == pytest.approx(max(0.0, (msb - msw) / n))


def test_components_by_hand_with_unequal_repetitions():
    # tasks (c, n): (1, 2), (3, 3), (0, 1); w = 0.5, 0, and ω̄ = 0.25 for the single trial
    comp = variance.components([(1, 2), (3, 3), (0, 1)])
    p = [0.5, 1.0, 0.0]
    s2 = np.var(p, ddof=1)
    assert comp["within"] == pytest.approx(0.25)
    assert comp["between"] == pytest.approx(s2 - (0.5 / 2 + 0 / 3 + 0.25 / 1) / 3)


def test_the_se_with_more_repetitions_matches_a_simulation():
    """Components estimated from a 2-repetition pilot predict the spread of task means a
    10-repetition run of the same tasks' population would have (seeded Monte Carlo)."""
    rng = np.random.default_rng(2026)
    tasks = 400
    p_true = rng.beta(1.5, 1.5, tasks)
    pilot = [(int(rng.binomial(2, p)), 2) for p in p_true]
    comp = variance.components(pilot)
    predicted = variance.design_se(comp["between"], comp["within"], tasks, 10)
    sims = []
    for _ in range(400):
        p = rng.choice(p_true, tasks)  # a fresh sample of tasks from the same population
        sims.append(np.mean(rng.binomial(10, p) / 10))
    assert predicted == pytest.approx(np.std(sims, ddof=1), rel=0.12)


def test_noise_per_configuration_on_a_warehouse(wh, grid):
    rng = np.random.default_rng(5)
    noisy = [(int(rng.binomial(4, 0.5)), 4) for _ in range(20)]  # all repetition noise
    spread = [(4, 4)] * 10 + [(0, 4)] * 10  # all task-to-task spread
    con = wh(grid(_spec({"noisy": noisy, "spread": spread})))
    rows = {r["config_id"]: r for r in noise.noise(con).rows}
    assert rows["spread"]["within_var"] == 0 and rows["spread"]["between_share"] == 1.0
    assert "more repetitions barely help" in rows["spread"]["verdict"]
    assert rows["spread"]["se_at_reps"] == pytest.approx([rows["spread"]["se_floor"]] * 5)
    n = rows["noisy"]
    comp = variance.components(noisy)
    assert n["within_var"] == pytest.approx(comp["within"])
    assert n["se_at_reps"][0] == pytest.approx(
        math.sqrt((comp["between"] + comp["within"]) / 20))
    assert n["se_at_reps"] == sorted(n["se_at_reps"], reverse=True)
    one_rep = wh(grid(_spec({"x": [(1, 1), (0, 1), (1, 1)]})))
    (row,) = noise.noise(one_rep).rows
    assert row["within_var"] is None and "needs ≥ 2 repetitions" in row["verdict"]


# --------------------------------------------------------------------------- plan


def test_mde_is_statsmodels_paired_t_power_on_the_design_sd():
    from statsmodels.stats.power import TTestPower

    between, within = 0.02, 0.3
    for tasks, reps in ((20, 1), (50, 3), (200, 10)):
        sd = math.sqrt(between + within / reps)
        d = TTestPower().solve_power(nobs=tasks, alpha=0.05, power=0.8)
        assert variance.mde(between, within, tasks, reps) == pytest.approx(d * sd)
    # large T: the normal approximation (z_{α/2} + z_β)·SE, worked by hand
    se = variance.design_se(between, within, 5000, 2)
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert variance.mde(between, within, 5000, 2) == pytest.approx(z * se, rel=2e-3)


def test_paired_components_recover_the_population_in_a_seeded_simulation():
    rng = np.random.default_rng(7)
    tasks, reps = 6000, 3
    base = rng.uniform(0.3, 0.7, tasks)
    cand = base + rng.uniform(-0.15, 0.15, tasks)  # true per-task differences: τ² = 0.3²/12
    pilot = [(int(rng.binomial(reps, b)), reps, int(rng.binomial(reps, c)), reps)
             for b, c in zip(base, cand, strict=True)]
    comp = variance.paired_components(pilot)
    omega = np.mean(base * (1 - base) + cand * (1 - cand))
    assert comp["within"] == pytest.approx(omega, rel=0.02)
    # the estimate's own sampling error: sd(s²) ≈ s²·√(2/(T−1))
    sd_est = comp["observed_var"] * math.sqrt(2 / (tasks - 1))
    assert abs(comp["between"] - np.var(cand - base)) < 4 * sd_est


def test_planned_power_holds_in_a_seeded_simulation():
    """With the true components, a design whose true mean difference is the planned MDE is
    rejected by the paired t test in about the planned share of simulated comparisons."""
    rng = np.random.default_rng(8)
    tasks, reps = 40, 3
    base = rng.uniform(0.3, 0.7, 20000)
    spread = rng.uniform(-0.15, 0.15, 20000)
    between = np.var(spread)
    within = np.mean(base * (1 - base) + (base + spread) * (1 - base - spread))
    delta = variance.mde(between, within, tasks, reps)
    assert 0.05 < delta < 0.3
    hits, sims = 0, 2000
    for _ in range(sims):
        idx = rng.integers(0, len(base), tasks)
        b = rng.binomial(reps, base[idx]) / reps
        c = rng.binomial(reps, np.clip(base[idx] + spread[idx] + delta, 0, 1)) / reps
        hits += sps.ttest_rel(c, b).pvalue < 0.05
    assert hits / sims == pytest.approx(0.8, abs=0.04)


def test_repetitions_or_tasks_which_one_helps():
    spread = plan.plan_components(between=0.05, within=0.03, tasks=50, reps=3, target=0.05)
    assert spread.reps_needed is None  # the floor at ∞ repetitions is above 5 pp
    assert any("more repetitions barely help" in v for v in spread.verdict)
    assert any("no number of repetitions suffices" in v for v in spread.verdict)
    need = {n["reps"]: n["tasks"] for n in spread.tasks_needed}
    assert need[math.inf] == variance.tasks_needed(0.05, 0.03, 0.05, math.inf)
    assert variance.mde(0.05, 0.03, need[3], 3) <= 0.05 < variance.mde(0.05, 0.03, need[3] - 1, 3)
    noisy = plan.plan_components(between=0.001, within=0.4, tasks=50, reps=1, target=0.15)
    assert any("more repetitions help" in v for v in noisy.verdict)
    r = noisy.reps_needed
    assert r is not None and variance.mde(0.001, 0.4, 50, r) <= 0.15 < variance.mde(
        0.001, 0.4, 50, r - 1)


def test_plan_from_a_pilot_warehouse(wh, grid):
    rng = np.random.default_rng(3)
    p = rng.beta(2, 2, 30)
    base = [(int(rng.binomial(3, x)), 3) for x in p]
    cand = [(int(rng.binomial(3, min(1, x + 0.1))), 3) for x in p]
    con = wh(grid(_spec({"base": base, "cand": cand})))
    result = plan.plan(con, None, "base", "cand", target=0.1)
    comp = variance.paired_components([(b[0], b[1], c[0], c[1]) for b, c in zip(base, cand,
                                                                                 strict=True)])
    assert result.between == pytest.approx(comp["between"])
    assert result.within == pytest.approx(comp["within"])
    assert (result.tasks, result.reps) == (30, 3)
    assert result.pilot["universe"] == "r1"
    assert result.as_dict()["grid"][0] == {"tasks": 30, "reps": 1, "se": pytest.approx(
        variance.design_se(comp["between"], comp["within"], 30, 1)),
        "mde": pytest.approx(variance.mde(comp["between"], comp["within"], 30, 1))}
    mixed = wh(grid(_spec({"base": [(1, 1)] * 5, "cand": [(0, 2), (1, 2)] * 2 + [(1, 2)]})))
    with pytest.raises(AnalysisError, match="one repetition per task on one side .* give "
                                            "--between and --within"):
        plan.plan(mixed, None, "base", "cand")


def _mde_by_hand(sd: float, tasks: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The paired t test's minimum detectable difference from scipy's noncentral t (not
    statsmodels): the δ at which P(|T| > t_crit) = power, T ~ nct(T − 1, δ√T / sd)."""
    from scipy.optimize import brentq

    df, crit = tasks - 1, sps.t.ppf(1 - alpha / 2, tasks - 1)

    def gap(delta: float) -> float:
        nc = delta * math.sqrt(tasks) / sd
        lower = sps.nct.cdf(-crit, df, nc)  # scipy returns NaN for a vanishing lower tail
        return sps.nct.sf(crit, df, nc) + (0.0 if math.isnan(lower) else lower) - power

    return brentq(gap, 1e-9, 8 * sd / math.sqrt(tasks))  # noncentrality 8: power ≈ 1


def test_plan_from_a_one_repetition_pilot(wh, grid):
    """One trial per task and side (every public leaderboard): the MDE at one repetition
    is the paired t test's on the single-trial differences, no split needed; more
    repetitions get the range the unknown split allows."""
    rng = np.random.default_rng(5)
    p = rng.beta(2, 2, 40)
    base = [(int(rng.random() < x), 1) for x in p]
    cand = [(int(rng.random() < min(1, x + 0.15)), 1) for x in p]
    con = wh(grid(_spec({"base": base, "cand": cand})))
    result = plan.plan(con, None, "base", "cand", target=0.2)
    d = np.array([c[0] - b[0] for b, c in zip(base, cand, strict=True)], dtype=float)
    sd = float(np.std(d, ddof=1))
    assert result.single_var == pytest.approx(sd ** 2)
    assert (result.between, result.within, result.tasks, result.reps) == (None, None, 40, 1)
    assert result.mde == pytest.approx(_mde_by_hand(sd, 40), rel=1e-4)
    grid_ = {(g["tasks"], g["reps"]): g for g in result.grid}
    assert grid_[(160, 1)]["mde"] == pytest.approx(_mde_by_hand(sd, 160), rel=1e-4)
    lo, hi = grid_[(40, 3)]["mde_bounds"]
    assert (lo, hi) == (pytest.approx(_mde_by_hand(sd / math.sqrt(3), 40), rel=1e-4),
                        pytest.approx(result.mde))
    assert grid_[(40, 3)]["mde"] is None
    need = result.tasks_needed[0]["tasks"]
    assert _mde_by_hand(sd, need) <= 0.2 < _mde_by_hand(sd, need - 1)
    assert any("≥ 2 repetitions of both configurations" in v for v in result.verdict)
    doc = result.as_dict()
    assert doc["components"] == {"between": None, "within": None, "between_share": None,
                                 "single_trial": pytest.approx(sd ** 2)}
    three = plan.plan(con, None, "base", "cand", reps=3)
    assert three.mde is None and f"between {100 * lo:.1f} pp and {100 * hi:.1f} pp" in \
        " ".join(three.verdict)


def test_plan_names_itself_when_the_pilot_spans_task_universes(wh_runs, grid):
    """plan pairs configurations through compare; its refusal names plan, not compare."""
    runs = [(run, grid(_spec({f"{run}-base": [(1, 2), (2, 2)], f"{run}-cand": [(0, 2), (1, 2)]})),
             [{"case_id": f"t{i:03d}", "benchmark": bench} for i in range(2)])
            for run, bench in (("r1", "B1"), ("r2", "B2"))]
    with pytest.raises(AnalysisError, match=r"^plan: the selection holds 2 task universes"):
        plan.plan(wh_runs(runs), None, None, None)


@pytest.mark.parametrize("kwargs,message", [
    ({"between": -1, "within": 0.1, "tasks": 10}, "variances: give values ≥ 0"),
    ({"between": 0.1, "within": 0.1, "tasks": 1}, "at least 2 tasks"),
    ({"between": 0.1, "within": 0.1, "tasks": 10, "alpha": 1.5}, "strictly between 0 and 1"),
    ({"between": 0.1, "within": 0.1, "tasks": 10, "target": 5}, r"in \(0, 1\]"),
])
def test_plan_refuses_impossible_designs(kwargs, message):
    with pytest.raises(AnalysisError, match=message):
        plan.plan_components(**kwargs)


# --------------------------------------------------------------------------- ranks


def test_rank_intervals_are_exact_when_separated_and_wide_when_tied():
    tasks = 40
    sep = [[1.0, 0.5, 0.0] for _ in range(tasks)]
    out = resampling.rank_intervals(sep, seed=1, resamples=500)
    assert out["rank"] == [1, 2, 3] and out["low"] == [1, 2, 3] and out["high"] == [1, 2, 3]
    rng = np.random.default_rng(0)
    same = rng.integers(0, 2, tasks).astype(float)
    tied = resampling.rank_intervals([[x, x] for x in same], seed=1, resamples=500)
    assert tied["rank"] == [1, 1] and tied["low"] == [1, 1] and tied["high"] == [1, 1]
    noisy = [[float(a), float(b)] for a, b in zip(rng.integers(0, 2, tasks),
                                                 rng.integers(0, 2, tasks), strict=True)]
    r1 = resampling.rank_intervals(noisy, seed=9, resamples=800)
    assert r1 == resampling.rank_intervals(noisy, seed=9, resamples=800)  # seeded
    assert r1["low"] == [1, 1] and r1["high"] == [2, 2]  # a coin flip each: statistically tied


def test_rank_intervals_agree_with_scipy_bootstrap():
    rng = np.random.default_rng(4)
    rates = rng.random((60, 3)) * np.array([0.6, 0.5, 0.45])
    mine = resampling.rank_intervals(rates.tolist(), seed=3, resamples=4000)

    def rank_of(j):
        def stat(*cols, axis=-1):
            means = np.stack([c.mean(axis=axis) for c in cols])
            return (1 + (means > means[j]).sum(axis=0)).astype(float)
        return stat

    for j in range(3):
        ref = sps.bootstrap(tuple(rates.T), rank_of(j), paired=True, method="percentile",
                            n_resamples=4000, random_state=np.random.default_rng(8))
        assert abs(mine["low"][j] - ref.confidence_interval.low) <= 1
        assert abs(mine["high"][j] - ref.confidence_interval.high) <= 1


def test_leaderboard_ranks_candidates_and_lists_baselines(wh, grid):
    trials = grid(_spec({"good": [(2, 2)] * 15, "bad": [(0, 2)] * 15,
                         "mid": [(1, 2)] * 15}))
    trials += [dict(t, agent_kind="reference") for t in grid(_spec({"oracle": [(2, 2)] * 15}))]
    r = ranks.ranks(wh(trials), seed=1, resamples=300)
    rows = {x["config_id"]: x for x in r.rows}
    assert [x["config_id"] for x in r.rows] == ["good", "mid", "bad", "oracle"]
    assert (rows["good"]["rank"], rows["good"]["rank_low"], rows["good"]["rank_high"]) == (1, 1, 1)
    assert rows["good"]["tied_with"] == []
    assert rows["oracle"]["role"] == "baseline" and rows["oracle"]["rank"] is None


# --------------------------------------------------------------------------- deltas


def test_paired_bootstrap_deltas_agree_with_scipy_and_are_seeded(wh, grid):
    rng = np.random.default_rng(12)
    trials = []
    for i in range(50):
        for cfg, base in (("b", 10.0), ("c", 12.0)):
            trials.append({"config_id": cfg, "case_id": f"t{i}", "rep": 1, "outcome": A,
                           "duration_s": float(base + rng.normal(0, 3)),
                           "cost_usd": float(abs(rng.normal(0.2, 0.05))),
                           "input_tokens": int(rng.integers(1000, 5000)), "output_tokens": 100,
                           "steps": int(rng.integers(5, 30))})
    con = wh(trials)
    first = compare.compare(con, baseline="b", seed=42)[0].main.deltas
    again = compare.compare(con, baseline="b", seed=42)[0].main.deltas
    assert first == again
    by = {(t["config_id"], t["case_id"]): t for t in trials}
    d = np.array([by[("c", f"t{i}")]["duration_s"] - by[("b", f"t{i}")]["duration_s"]
                  for i in range(50)])
    ref = sps.bootstrap((d,), np.mean, method="percentile", n_resamples=20000,
                        random_state=np.random.default_rng(1)).confidence_interval
    dur = first.duration_s
    assert dur.pairs == 50 and dur.mean_diff == pytest.approx(d.mean())
    assert dur.median_diff == pytest.approx(np.median(d))
    width = ref.high - ref.low
    assert abs(dur.ci_low - ref.low) < 0.1 * width and abs(dur.ci_high - ref.high) < 0.1 * width
    steps = np.array([by[("c", f"t{i}")]["steps"] - by[("b", f"t{i}")]["steps"] for i in range(50)])
    assert first.steps.mean_diff == pytest.approx(steps.mean())
    assert first.cost_usd.status == "ok" and first.tokens.pairs == 50


def test_deltas_need_both_sides_known_and_cost_coverage(wh, grid):
    trials = (grid({"b": {"t1": [A], "t2": [A], "t3": [A]}}, steps=4, cost_usd=0.1)
              + grid({"c": {"t1": [A], "t2": [A], "t3": [R]}}, steps=None, cost_usd=None))
    deltas = compare.compare(wh(trials), baseline="b")[0].main.deltas
    assert deltas.steps.pairs == 0 and deltas.steps.mean_diff is None
    assert deltas.cost_usd.status == "cost coverage incomplete" and deltas.cost_usd.mean_diff is None
    assert deltas.duration_s.pairs == 2  # both accepted on t1 and t2 only


def test_cluster_bootstrap_resamples_tasks_not_pairs():
    # Two tasks, each with many identical pairs: resampling pairs would give a narrow
    # interval; resampling tasks can only give the two task means (or their mix).
    sums = [[10 * 1.0, 10 * 3.0]]
    counts = [[10, 10]]
    ((lo, hi),) = resampling.ratio_intervals(sums, counts, seed=0, resamples=2000)
    assert (lo, hi) == (1.0, 3.0)


def test_plan_cli_needs_both_components_or_a_pilot(tmp_path, capsys):
    from trialhouse.cli import main

    def run(*args):
        with pytest.raises(SystemExit) as exc:
            main(["plan", "-w", str(tmp_path / "none.duckdb"), *args])
        return exc.value.code, capsys.readouterr()

    code, cap = run("--between", "0.1")
    assert code == 2 and "give both --between and --within" in cap.err
    code, cap = run("--between", "0.1", "--within", "0.2")
    assert code == 2 and "need --tasks" in cap.err
    code, cap = run("--between", "0.01", "--within", "0.2", "--tasks", "40", "--reps", "2",
                    "--target", "0.1", "--json")
    assert code == 0
    import json

    doc = json.loads(cap.out)
    assert doc["mde"] == pytest.approx(variance.mde(0.01, 0.2, 40, 2))
    assert doc["source"] == "given" and doc["tasks_needed"][0]["reps"] == 1
    _ = Filters  # the CLI builds the same Filters for a pilot
