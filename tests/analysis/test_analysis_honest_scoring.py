"""Issue 13, the analysis side: eligibility gates no ranking can average away, unscored cases
left out (and counted) everywhere, the task key (case, evaluator fingerprint), and the
seed's sanity checks. Real Parquet + DuckDB warehouses built from explicit rows."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from analysis import compare, pareto, summary
from analysis.eligibility import assess, eligibility_report
from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.headline import headline
from analysis.sanity import sanity

A, R = "accepted", "target_failed"
CASES = [f"t{i}" for i in range(8)]


def _grid(spec: dict[str, tuple[str | None, dict[str, list[str]]]], **extra) -> list[dict]:
    out = []
    for cfg, (kind, cases) in spec.items():
        for case, outcomes in cases.items():
            for rep, o in enumerate(outcomes, 1):
                out.append({"config_id": cfg, "case_id": case, "rep": rep, "outcome": o,
                            "agent_kind": kind, "trial_id": f"{cfg}-{case}-{rep}", **extra})
    return out


def _bench(leaker_leaks: bool = True) -> list[dict]:
    """null floor, a base, and 'leaker': accepts every task (it dominates everything), but
    one of its trials leaked a run secret."""
    trials = _grid({
        "null": ("null", {c: [R] for c in CASES}),
        "base": ("command", {c: [A if i % 2 else R] for i, c in enumerate(CASES)}),
        "leaker": ("command", {c: [A] for c in CASES}),
        "honest": ("command", {c: [A if i % 4 else R] for i, c in enumerate(CASES)}),
    })
    for t in trials:
        t["cost_usd"] = 0.001 if t["config_id"] == "leaker" else 0.01
        if leaker_leaks and t["trial_id"] == "leaker-t3-1":
            t["secrets_leaked"] = 1
    return trials


# --- 1. eligibility -----------------------------------------------------------------------


def test_a_leaking_configuration_is_ineligible_off_the_front_and_flagged_in_compare(wh):
    con = wh(_bench())
    roles = assess(con)
    assert roles["leaker"].reasons == ("1 trial(s) leaked a run secret into their evidence",)
    assert not roles["leaker"].eligible and roles["honest"].eligible and roles["base"].eligible
    # Cheapest and best rate: it would dominate every other point. Ineligible: off the front.
    front = {r["config_id"]: r for r in pareto.pareto(con, x="cost_per_trial").rows}
    assert front["leaker"]["role"] == "ineligible" and front["leaker"]["on_front"] is False
    assert front["leaker"]["ineligible"] == list(roles["leaker"].reasons)
    assert front["base"]["on_front"] or front["honest"]["on_front"]
    assert "leaker" not in [d for r in front.values() for d in r["dominated_by"]]
    res = compare.compare(con, baseline="base")
    assert res.ineligible == {"leaker": list(roles["leaker"].reasons)}
    line = {ln.candidate.config_id: ln for ln in headline(res).lines}
    assert "INELIGIBLE, not a candidate to ship" in line["leaker"].sentence
    assert "INELIGIBLE" not in line["honest"].sentence
    # The sign test is untouched: eligibility gates a pick, it does not change statistics.
    (leak,) = [c for c in res if c.candidate.config_id == "leaker"]
    assert leak.sign_test.p == pytest.approx(binomtest(4, 4).pvalue)


def test_without_the_leak_the_same_configuration_is_eligible_and_on_the_front(wh):
    con = wh(_bench(leaker_leaks=False))
    assert assess(con)["leaker"].eligible
    front = {r["config_id"]: r for r in pareto.pareto(con, x="cost_per_trial").rows}
    assert front["leaker"]["on_front"] and front["leaker"]["role"] == "agent"


def test_invalid_trials_and_tampered_runs_make_candidates_ineligible_never_baselines(_warehouses):
    trials = _bench(leaker_leaks=False)
    for t in trials:
        if t["trial_id"] in ("honest-t0-1", "null-t1-1"):
            t["outcome"] = "invalid"
    con = _warehouses([
        {"run_id": "r1", "trials": trials},
        {"run_id": "r2", "started": None, "run": {"integrity": "tampered or damaged: 1 line(s) refused"},
         "trials": _grid({"other": ("command", {c: [A] for c in CASES})})},
    ])
    roles = assess(con)
    assert roles["honest"].reasons[0].startswith("1 invalid trial(s)")
    assert roles["other"].reasons == ("run integrity broken (events tampered or damaged): r2",)
    # The null baseline's invalid trial is a note, never a reason: a floor is never a blocker.
    assert roles["null"].eligible and roles["null"].notes[0].startswith("1 invalid trial(s)")
    rows = {r["config_id"]: r for r in eligibility_report(con).rows}
    assert rows["null"]["role"] == "baseline" and rows["null"]["eligible"]
    assert rows["other"]["tampered_runs"] == ["r2"] and not rows["other"]["eligible"]


def _criteria_tables(broken_in: set[str], severity: str) -> dict[str, list[dict]]:
    """Criterion 'existing-tests' on every case; it passed on the initial commit and failed
    in the trials named in ``broken_in``."""
    crit = [{"case_id": c, "criterion_id": "existing-tests", "layer": "regression",
             "kind": "command", "severity": severity} for c in CASES]
    grad = []
    for t in _bench(leaker_leaks=False):
        grad.append({"trial_id": t["trial_id"], "case_id": t["case_id"], "attempt": 1,
                     "final": True, "criterion_id": "existing-tests", "layer": "regression",
                     "verdict": "failed" if t["trial_id"] in broken_in else "passed",
                     "baseline": "passed"})
    return {"criteria": crit, "gradings": grad}


def test_a_blocker_regression_disqualifies_a_major_one_does_not(wh):
    broken = {"honest-t2-1", "honest-t5-1"}
    con = wh(_bench(leaker_leaks=False), extra_tables=_criteria_tables(broken, "blocker"))
    assert assess(con)["honest"].reasons == (
        "blocker regression: criterion existing-tests (severity blocker) passed on the initial "
        "commit and failed in 2 trial(s)",)
    major = wh(_bench(leaker_leaks=False), extra_tables=_criteria_tables(broken, "major"))
    assert assess(major)["honest"].eligible


def test_summarize_lists_eligibility_with_reasons_in_json(wh):
    s = summary.summarize(wh(_bench()))
    doc = s.as_dict()
    by_id = {e["config_id"]: e for e in doc["eligibility"]}
    assert by_id["leaker"]["eligible"] is False and by_id["null"]["role"] == "baseline"
    assert s.ineligible == {"leaker": ["1 trial(s) leaked a run secret into their evidence"]}
    assert any(w.startswith("INELIGIBLE leaker") for w in s.warnings)


# --- 2. unscored cases --------------------------------------------------------------------


def _unscored_run() -> dict:
    """t7's controls failed (scored = false); the run recorded its trials anyway."""
    trials = _grid({"base": ("command", {c: [R] for c in CASES}),
                    "cand": ("command", {c: [A if c == "t7" else R] for c in CASES})})
    cases = [{"case_id": c, "scored": c != "t7",
              "unscored_reason": "target already passes at the initial commit" if c == "t7"
              else None} for c in CASES]
    return {"trials": trials, "cases": cases,
            "extra_tables": {"skipped_trials": [{"trial_id": "cand-t7-2", "case_id": "t7",
                                                 "reason": "controls failed"}]}}


def test_unscored_cases_are_left_out_by_default_counted_with_reasons_and_can_be_included(
        _warehouses):
    con = _warehouses([_unscored_run()])
    s = summary.summarize(con)
    rows = {r["config_id"]: r for r in s.rows}
    assert rows["cand"]["solved"] == 0 and rows["cand"]["tasks"] == 7
    assert s.unscored == {"count": 1, "included": False, "cases": [{
        "run_id": "r1", "case_id": "t7", "reason": "target already passes at the initial commit",
        "trials": 2, "skipped_trials": 1}]}
    assert s.warnings[0].startswith("1 unscored case(s) left out")
    both = summary.summarize(con, Filters(include_unvalidated=True))
    rows = {r["config_id"]: r for r in both.rows}
    assert rows["cand"]["solved"] == 1 and rows["cand"]["tasks"] == 8
    assert both.warnings[0].startswith("UNVALIDATED INCLUDED")
    res = compare.compare(con, baseline="base")
    assert res[0].tasks.common == 7 and any("unscored case(s) left out" in n for n in res.notes)


# --- 3. the task key: (case, evaluator fingerprint) ---------------------------------------


def _two_evaluators(fp_second: str) -> list[dict]:
    """The same manifest run twice; between the runs the grader of t0..t3 changed."""
    first = _grid({"base": ("command", {c: [R] for c in CASES}),
                   "cand": ("command", {c: [R] for c in CASES})})
    second = _grid({"base": ("command", {c: [R] for c in CASES}),
                    "cand": ("command", {c: [A] for c in CASES})})
    for t in second:
        t["trial_id"] += "-second"

    def cases(fp: str) -> list[dict]:
        return [{"case_id": c, "fingerprint": fp if i < 4 else "same", "scored": True}
                for i, c in enumerate(CASES)]

    common = {"run": {"manifest_id": "m"}}
    return [{"run_id": "r1", "trials": first, "cases": cases("grader-v1"), **common},
            {"run_id": "r2", "trials": second, "cases": cases(fp_second), **common}]


def test_two_evaluators_of_one_case_are_two_tasks_never_pooled(_warehouses):
    con = _warehouses(_two_evaluators("grader-v2-looser"))
    s = summary.summarize(con)
    # 4 unchanged cases + 4 changed cases × 2 versions = 12 tasks, not 8.
    assert {r["tasks"] for r in s.rows} == {12}
    assert [v["case_id"] for v in s.task_versions] == ["t0", "t1", "t2", "t3"]
    assert s.task_versions[0]["fingerprints"] == ["grader-v1", "grader-v2-lo"]  # 12 characters
    assert any("evaluator changed for 4 case(s)" in w for w in s.warnings)
    same = summary.summarize(_warehouses(_two_evaluators("grader-v1")))
    assert {r["tasks"] for r in same.rows} == {8} and same.task_versions == []


def test_compare_refuses_a_changed_evaluator_unless_allowed_and_then_says_so(_warehouses):
    con = _warehouses(_two_evaluators("grader-v2-looser"))
    with pytest.raises(AnalysisError, match=r"evaluator changed for 4 case\(s\).*"
                                            r"--allow-evaluator-change"):
        compare.compare(con, baseline="base")
    res = compare.compare(con, Filters(allow_evaluator_change=True), baseline="base")
    assert res.notes[0].startswith("EVALUATOR CHANGED (--allow-evaluator-change): 4 case(s)")
    # One run alone has one evaluator: nothing to refuse.
    assert compare.compare(con, Filters(runs=("r2",)), baseline="base")[0].tasks.common == 8


# --- 4. sanity checks ---------------------------------------------------------------------


def test_sanity_checks_name_unequal_runs_empty_successes_and_infra_share(wh):
    trials = _grid({"null": ("null", {c: [R] for c in CASES}),
                    "oracle": ("reference", {c: [A] for c in CASES}),
                    "a": ("command", {c: [A, A] if c == "t0" else [A] for c in CASES}),
                    "b": ("command", {c: ["infra_error" if c in ("t1", "t2") else R]
                                      for c in CASES})})
    for t in trials:
        if t["config_id"] == "oracle" or t["trial_id"] == "a-t3-1":
            t["steps"] = 0  # the oracle makes no calls by design: not a warning
    con = wh(trials)
    found = {(w.check, w.config_id): w for w in sanity(con, Filters())}
    assert set(found) == {("unequal_runs", None), ("empty_success", "a"), ("infra_share", "b")}
    assert found[("unequal_runs", None)].count == 1
    assert "t0" in found[("unequal_runs", None)].message
    assert found[("empty_success", "a")].count == 1
    assert found[("infra_share", "b")].count == 2  # 2 of 8 = 25% > 10%
    doc = summary.summarize(con).as_dict()
    assert {(w["check"], w["config_id"]) for w in doc["sanity"]} == set(found)


def test_the_staged_counts_and_checks_equal_one_pass_over_the_trials(_warehouses):
    """Summarize takes the gate and sanity counts from its task cells plus the few trials
    that leaked or look empty; a question without cells makes one pass over the trials.
    Two runs pooled in one universe (cells added up per task), a slice, an unscored case,
    a tampered run and a blocker regression: both ways give the same gates and warnings."""
    from analysis import checks, tasks
    from analysis.eligibility import gates
    from analysis.scope import resolve

    first = _bench()
    for t in first:
        if t["trial_id"] in ("honest-t1-1", "base-t2-1"):
            t["outcome"] = "invalid"
        if t["trial_id"] == "honest-t3-1":
            t["steps"] = 0
    second = _grid({"base": ("command", {c: [A, "infra_error"] for c in CASES}),
                    "honest": ("command", {c: [A] for c in CASES[:6]})})
    bench = [{"case_id": c, "benchmark": "pooled", "task_class": "bugfix" if c < "t4" else "feature"}
             for c in CASES]
    con = _warehouses([
        {"run_id": "r1", "trials": first, "cases": [*bench[:7], {**bench[7], "scored": False}],
         "extra_tables": _criteria_tables({"honest-t2-1"}, "blocker")},
        {"run_id": "r2", "trials": second, "cases": bench,
         "run": {"integrity": "tampered or damaged: 1 line(s) refused"}},
    ])
    for sel in (Filters(), Filters(include_unvalidated=True), Filters(runs=("r1",))):
        sel = resolve(con, sel)
        for by in ([], ["task_class"]):
            with tasks.staged(con, sel, by) as st:
                staged = checks.staged_counts(con, sel, st)
                found = sanity(con, sel, staged=True, counts=staged,
                               one_cell=st.one_run and not by)
            assert staged == checks.counts(con, sel)
            assert found == sanity(con, sel)
        assert gates(con, sel, staged) == gates(con, sel)
    alone = gates(con, resolve(con, Filters()))
    assert alone["honest"].blocker_regressions == (("existing-tests", 1),)
    assert alone["base"].tampered_runs == ("r2",) and alone["base"].invalid == 1
    warned = {(w.check, w.config_id) for w in sanity(con, resolve(con, Filters()))}
    assert {("unequal_runs", None), ("empty_success", "honest"), ("infra_share", "base")} <= warned


# --- the CLI: one thin command, one-line errors -------------------------------------------


def _cli(*args: str):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIALHOUSE_")}
    env.update(NO_COLOR="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "trialhouse", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=300)


def test_cli_eligibility_compare_refusal_and_include_unvalidated(tmp_path, write_run):
    import json

    db = tmp_path / "w" / "t.duckdb"
    for run in _two_evaluators("grader-v2-looser"):
        write_run(db, **run)
    leak = _bench()
    write_run(db, leak, run_id="r9", cases=[{"case_id": c, "scored": c != "t7",
                                              "unscored_reason": "controls failed"}
                                             for c in CASES])
    out = _cli("eligibility", "-w", db, "--run", "r9", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["config_id"]: r for r in json.loads(out.stdout)["rows"]}
    assert rows["leaker"]["eligible"] is False and rows["null"]["role"] == "baseline"
    table = _cli("eligibility", "-w", db, "--run", "r9")
    assert "INELIGIBLE" in table.stdout and "1 unscored case(s) left out" in table.stdout
    refused = _cli("compare", "-w", db, "--run", "r1", "--run", "r2", "--baseline", "base")
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "evaluator changed for 4 case(s)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    allowed = _cli("compare", "-w", db, "--run", "r1", "--run", "r2", "--baseline", "base",
                   "--allow-evaluator-change", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["notes"][0].startswith("EVALUATOR CHANGED")
    summ = json.loads(_cli("summarize", "-w", db, "--run", "r9", "--json",
                           "--include-unvalidated").stdout)
    assert summ["unscored"]["included"] is True and summ["filters"]["include_unvalidated"]


def test_period_over_period_refuses_a_changed_evaluator_unless_allowed(_warehouses):
    from datetime import UTC, datetime

    from analysis.eligibility import eligibility
    from analysis.period import period_changes

    first, second = _two_evaluators("grader-v2-looser")
    second["started"] = datetime(2026, 2, 8, tzinfo=UTC)  # a week after the first run
    con = _warehouses([first, second])
    prev = Filters(since=datetime(2026, 2, 1, tzinfo=UTC), until=datetime(2026, 2, 8, tzinfo=UTC))
    cur = Filters(since=datetime(2026, 2, 8, tzinfo=UTC), until=datetime(2026, 2, 15, tzinfo=UTC))
    roles = eligibility(con, ["base", "cand"])
    with pytest.raises(AnalysisError, match=r"evaluator changed for 4 case\(s\)"):
        period_changes(con, cur, prev, roles, {})
    allowed = period_changes(con, Filters(since=cur.since, until=cur.until,
                                          allow_evaluator_change=True), prev, roles, {})
    assert allowed.notes[0].startswith("EVALUATOR CHANGED")
    # "cand" went from 0/8 to 8/8: with the evaluator labelled, the change is still shown.
    row = {r.config.config_id: r for r in allowed.rows}["cand"]
    assert (row.previous_solved, row.current_solved) == (0, 8)


def test_the_leaderboard_never_ranks_an_ineligible_configuration(wh):
    from analysis.ranks import ranks

    rows = {r["config_id"]: r for r in ranks(wh(_bench()), resamples=200).rows}
    assert rows["leaker"]["role"] == "ineligible" and rows["leaker"]["rank"] is None
    assert rows["null"]["role"] == "baseline" and rows["null"]["rank"] is None
    assert {rows["base"]["rank"], rows["honest"]["rank"]} <= {1, 2}
