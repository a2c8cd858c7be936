"""The headline's decision (analysis/decision.py, docs/reports.md "The decision"): the best
eligible configuration with its acceptance, interval and cost per accepted, the runner-up, or
"no configuration is distinguishably better than the baseline" with the descriptive leader;
ineligible configurations named. Every number is recomputed here from the warehouse rows
with SQL, scipy and statsmodels, not read back from the analysis."""

from __future__ import annotations

import math
import re

import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from analysis import compare
from analysis.headline import headline

A, R = "accepted", "target_failed"
TASKS = [f"t{i:02d}" for i in range(12)]
COST = {"base": 0.02, "good": 0.05, "steady": 0.01, "mid": 0.03, "near": 0.02, "far": 0.04,
        "leaker": 0.001}

# Per-task acceptance (two repetitions each: 1 = both, .5 = one, 0 = none).
BASE = [1, 1, 1, .5, .5, .5, 0, 0, 0, 0, 0, 0]
GOOD = [1] * 12  # 9 improved, 3 tied: distinguishable
STEADY = [1] * 6 + [.5] * 6  # 9 improved, 3 tied: distinguishable, lower rate than good
MID = [0, 0] + [1] * 10  # 9 improved, 2 regressed: p = 0.065, not distinguishable; rate > steady
NEAR = [1, 1, .5, 1, .5, .5, .5, .5, 0, 0, 0, 0]  # 3 improved, 1 regressed
FAR = [0, 1, 1, 1, 1, .5, .5, .5, .5, 0, 0, 0]  # 6 improved, 1 regressed: p = 0.125


def _outcomes(rate: float) -> list[str]:
    return {1: [A, A], .5: [A, R], 0: [R, R]}[rate]


def _trials(spec: dict[str, list[float]], **per_config) -> list[dict]:
    out = []
    for cfg, rates in spec.items():
        for task, rate in zip(TASKS, rates, strict=True):
            for rep, outcome in enumerate(_outcomes(rate), 1):
                out.append({"config_id": cfg, "case_id": task, "rep": rep, "outcome": outcome,
                            "agent_kind": "command", "cost_usd": COST[cfg],
                            "trial_id": f"{cfg}-{task}-{rep}", **per_config.get(cfg, {})})
    return out


def _independent(con, cfg: str, base: str = "base") -> dict:
    """Acceptance over the compared tasks (both sides valid), its task-clustered t interval,
    and cost per accepted, straight from the trials view."""
    rows = con.sql("""
        SELECT case_id, count(*) FILTER (WHERE outcome = 'accepted'), count(*), sum(cost_usd)
        FROM trials WHERE config_id = ? AND complete AND outcome NOT IN ('infra_error', 'invalid')
          AND case_id IN (SELECT case_id FROM trials WHERE config_id = ?
                          AND outcome NOT IN ('infra_error', 'invalid'))
        GROUP BY case_id ORDER BY case_id""", params=[cfg, base]).fetchall()
    rates = [k / n for _, k, n, _ in rows]
    mean = sum(rates) / len(rates)
    sem = sps.tstd(rates) / math.sqrt(len(rates)) if len(set(rates)) > 1 else 0.0
    lo, hi = (mean, mean) if sem == 0 else sps.t.interval(0.95, len(rates) - 1, mean, sem)
    accepted = sum(k for _, k, _, _ in rows)
    cost = sum(c for *_, c in rows)
    return {"tasks": len(rows), "rate": mean, "lo": lo, "hi": hi,
            "per_accepted": cost / accepted if accepted else math.inf}


def _holm(spec: dict[str, list[float]], base: list[float]) -> dict[str, tuple[float, int, int]]:
    """Holm-adjusted sign-test p per candidate (scipy's exact binomial test), with counts."""
    counts = {c: (sum(x > b for x, b in zip(r, base, strict=True)),
                  sum(x < b for x, b in zip(r, base, strict=True))) for c, r in spec.items()}
    ps = [sps.binomtest(up, up + down).pvalue for up, down in counts.values()]
    adj = multipletests(ps, method="holm")[1]
    return {c: (p, *counts[c]) for c, p in zip(counts, adj, strict=True)}


def _numbers_in(sentence: str, s: dict) -> None:
    lo, hi = max(s["lo"], 0.0), min(s["hi"], 1.0)
    assert f"{100 * s['rate']:.1f}% " in sentence
    assert f"(95% CI {100 * lo:.1f}–{100 * hi:.1f}%)" in sentence
    assert f"${s['per_accepted']:,.4f} per accepted (cost known for 100% of trials)" in sentence


def test_the_best_is_the_highest_distinguishably_better_and_the_runner_up_follows(wh):
    spec = {"good": GOOD, "steady": STEADY, "mid": MID}
    con = wh(_trials({"base": BASE, **spec}))
    holm = _holm(spec, BASE)
    assert holm["good"][0] < 0.05 and holm["steady"][0] < 0.05 < holm["mid"][0]
    d = headline(compare.compare(con)).decision
    assert d.verdict == "best" and d.best is not None and d.runner_up is not None
    # mid accepts more than steady but is not distinguishable: steady is the runner-up.
    assert d.best.config.config_id == "good" and d.runner_up.config.config_id == "steady"
    for got, cfg in ((d.best, "good"), (d.runner_up, "steady"), (d.baseline, "base")):
        want = _independent(con, cfg)
        assert got is not None and got.tasks == want["tasks"] == 12
        assert (got.rate, got.ci_low, got.ci_high) == pytest.approx(
            (want["rate"], want["lo"], want["hi"]), abs=1e-12)
        assert got.cost_per_accepted == pytest.approx(want["per_accepted"])
        assert got.cost_coverage == 1.0
    first, rest = d.sentence.split("; runner-up: ")
    assert first.startswith("Best: good, accepting 100.0% of 12 compared tasks")
    assert first.endswith(f"distinguishably better than the baseline base "
                          f"({100 * _independent(con, 'base')['rate']:.1f}%)")
    _numbers_in(first, _independent(con, "good"))
    assert rest.startswith("steady, 75.0% (95% CI")
    assert rest.endswith("distinguishably better than the baseline.")
    _numbers_in(rest, _independent(con, "steady"))
    assert d.ineligible == [] and d.ineligible_sentence is None


def test_when_none_is_distinguishably_better_it_says_so_and_names_the_leader(wh):
    spec = {"near": NEAR, "far": FAR}
    con = wh(_trials({"base": BASE, **spec}))
    assert all(p >= 0.05 for p, _, _ in _holm(spec, BASE).values())
    head = headline(compare.compare(con))
    d = head.decision
    assert d.verdict == "none_better" and d.best is None and d.runner_up is None
    rates = {c: _independent(con, c)["rate"] for c in spec}
    leader = max(rates, key=lambda c: rates[c])
    assert d.leader is not None and d.leader.config.config_id == leader == "far"
    sentence, second = d.sentence.split(". The highest-accepting candidate is ")
    assert sentence.startswith("No configuration is distinguishably better than the baseline "
                               "base, which accepts ")
    _numbers_in(sentence, _independent(con, "base"))
    assert second.startswith("far: ") and second.endswith("not distinguishable from the baseline.")
    _numbers_in(second, _independent(con, "far"))
    assert head.intro.splitlines()[0] == d.sentence


def test_an_ineligible_configuration_is_named_and_never_picked(wh):
    spec = {"leaker": GOOD, "steady": STEADY}
    trials = _trials({"base": BASE, **spec})
    for t in trials:
        if t["trial_id"] == "leaker-t05-1":
            t["secrets_leaked"] = 1
    con = wh(trials)
    res = compare.compare(con)
    head = headline(res)
    d = head.decision
    # The leaker accepts every task (the highest rate, distinguishably better): ineligible.
    assert _holm(spec, BASE)["leaker"][0] < 0.05
    assert d.verdict == "best" and d.best is not None and d.best.config.config_id == "steady"
    assert d.runner_up is None and d.sentence.endswith("; no other eligible candidate.")
    _numbers_in(d.sentence, _independent(con, "steady"))
    assert [s.config.config_id for s in d.ineligible] == ["leaker"]
    assert d.ineligible_sentence == ("INELIGIBLE, never picked whatever the rate: leaker (1 "
                                     "trial(s) leaked a run secret into their evidence).")
    assert head.intro.splitlines()[:2] == [d.sentence, d.ineligible_sentence]
    line = {ln.candidate.config_id: ln.sentence for ln in head.lines}
    assert line["leaker"].endswith("INELIGIBLE, not a candidate to ship.")
    assert "INELIGIBLE" not in line["steady"]
    assert head.as_dict()["decision"]["ineligible"][0]["reasons"] == [
        "1 trial(s) leaked a run secret into their evidence"]


def test_no_pick_when_every_candidate_is_ineligible_and_a_flawed_baseline_is_said(wh):
    leak = {"secrets_leaked": 1}
    alone = wh(_trials({"base": BASE, "leaker": GOOD}, leaker=leak))
    d = headline(compare.compare(alone)).decision
    assert d.verdict == "no_eligible" and d.best is None and d.leader is None
    assert d.sentence == ("No configuration can be picked: every candidate compared with the "
                          "baseline base is ineligible.")
    # An ineligible baseline: the pick stands, said against "itself ineligible", and named.
    bad_base = wh(_trials({"base": BASE, "good": GOOD}, base=leak))
    head = headline(compare.compare(bad_base))
    d = head.decision
    assert d.verdict == "best" and d.best is not None and d.best.config.config_id == "good"
    assert "distinguishably better than the baseline base, itself ineligible (" in d.sentence
    assert d.ineligible_sentence is not None and d.ineligible_sentence.startswith(
        "INELIGIBLE, never picked whatever the rate: base (the baseline: 24 trial(s) leaked")
    assert [s.config.config_id for s in d.ineligible] == ["base"]


def test_simulated_is_said_once_per_name_in_the_headline(wh):
    sim = {"simulated": True}
    con = wh(_trials({"base": BASE, "good": GOOD, "mid": MID}, base=sim, good=sim, mid=sim))
    head = headline(compare.compare(con))
    text = "\n".join([head.intro, *[ln.sentence for ln in head.lines]])
    for name in ("base", "good", "mid"):
        assert text.count(f"{name} SIMULATED") == 1, name
        first = re.search(rf"\b{name}\b", text)
        assert first is not None and text.index(f"{name} SIMULATED") == first.start(), name
