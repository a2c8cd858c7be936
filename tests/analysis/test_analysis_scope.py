"""Scoping: task universes, selectors, one task set across questions, no zero-pair
comparisons, cost coverage, and labels however they arrived."""

from __future__ import annotations

import json

import pytest

from analysis import compare, consistency, familiarity, pareto, scope, summary
from analysis.errors import AnalysisError
from analysis.filters import Filters

A, R, INFRA = "accepted", "target_failed", "infra_error"


@pytest.fixture
def two_benchmarks(wh_runs, grid):
    """Benchmark B1 (run r1): configs a, b on t1–t4, b has only infra errors on t4, and a
    alone ran t5. Benchmark B2 (run r2): configs c, d on t1–t2 (the same case ids, other
    tasks)."""
    r1 = grid({"a": {"t1": [A, A], "t2": [A, R], "t3": [R, R], "t4": [A, A], "t5": [A]},
               "b": {"t1": [A, R], "t2": [R, R], "t3": [A, A], "t4": [INFRA, INFRA]}})
    r2 = grid({"c": {"t1": [A], "t2": [R]}, "d": {"t1": [R], "t2": [R]}})
    cases1 = [{"case_id": t, "benchmark": "B1"} for t in ("t1", "t2", "t3", "t4", "t5")]
    cases2 = [{"case_id": t, "benchmark": "B2"} for t in ("t1", "t2")]
    return wh_runs([("r1", r1, cases1), ("r2", r2, cases2)])


def test_universes_are_listed_with_their_configurations(two_benchmarks):
    found = scope.universes(two_benchmarks)
    assert [(u.name, u.kind, u.runs, u.config_ids, u.tasks) for u in found] == [
        ("B1", "benchmark", ("r1",), ("a", "b"), 5), ("B2", "benchmark", ("r2",), ("c", "d"), 2)]


def test_summarize_and_consistency_use_one_task_set(two_benchmarks):
    s = summary.summarize(two_benchmarks)
    c = consistency.consistency(two_benchmarks)
    assert [u.as_dict() for u in s.universes] == [u.as_dict() for u in c.universes]
    assert [(u.name, u.tasks, u.common) for u in s.universes] == [("B1", 5, 4), ("B2", 2, 2)]
    rows_s = {(r["config_id"], r["universe"]): r["tasks"] for r in s.rows}
    rows_c = {(r["config_id"], r["universe"]): r["tasks"] for r in c.rows}
    assert rows_s == rows_c == {("a", "B1"): 4, ("b", "B1"): 3, ("c", "B2"): 2, ("d", "B2"): 2}
    assert {r["config_id"]: r["excluded_tasks"] for r in c.rows} == {"a": 1, "b": 1, "c": 0,
                                                                     "d": 0}
    # b's task without a valid trial is named, not silently dropped
    assert any("b" in w and "1 common task(s) without a valid trial" in w and "t4" in w
               for w in c.warnings)


def test_a_configuration_in_two_universes_has_a_row_in_each(wh_runs, grid):
    r1 = grid({"a": {"t1": [A], "t2": [A]}, "b": {"t1": [R], "t2": [A]}})
    r2 = grid({"a": {"t9": [R]}})
    con = wh_runs([("r1", r1, [{"case_id": t, "benchmark": "B1"} for t in ("t1", "t2")]),
                   ("r2", r2, [{"case_id": "t9", "benchmark": "B2"}])])
    s = summary.summarize(con)
    assert {(r["config_id"], r["universe"]): (r["valid"], r["solved"]) for r in s.rows} == {
        ("a", "B1"): (2, 2), ("b", "B1"): (2, 1), ("a", "B2"): (1, 0)}
    fast = summary.summarize(con).as_dict()
    slow = summary.summarize(con, from_trials=True).as_dict()
    assert fast == slow


def test_compare_across_universes_asks_for_one(two_benchmarks):
    with pytest.raises(AnalysisError, match=r"compare: the selection holds 2 task universes "
                                            r"\(B1 .*; B2 .*\).*--universe NAME"):
        compare.compare(two_benchmarks)
    named = compare.compare(two_benchmarks, baseline="c")
    assert named.universe == "B2" and [c.candidate.config_id for c in named] == ["d"]
    assert any("within task universe B2 (the baseline's)" in n for n in named.notes)
    chosen = compare.compare(two_benchmarks, Filters.parse(universes=["B1"]))
    assert chosen.baseline.config_id == "a" and chosen.universe == "B1"


def test_a_named_candidate_of_another_universe_is_refused(two_benchmarks):
    with pytest.raises(AnalysisError, match="'c' shares no task with 'a': they are in "
                                            "different task universes"):
        compare.compare(two_benchmarks, baseline="a", candidates=["c"])


def test_compare_never_prints_zero_pair_tables(wh, grid):
    con = wh(grid({"a": {"t1": [A], "t2": [R]}, "b": {"t1": [R]}, "c": {"t9": [A]}}))
    cs = compare.compare(con, baseline="a")
    assert [c.candidate.config_id for c in cs] == ["b"]
    assert cs.candidates == [cs[0].candidate]  # the Holm family holds no zero-pair candidate
    assert any("1 candidate(s) share no task with the baseline" in n for n in cs.notes)
    with pytest.raises(AnalysisError, match="c share.s. no task with the baseline a: nothing "
                                            "to pair; check --run/--universe/--label"):
        compare.compare(con, baseline="a", candidates=["c"])
    alone = wh(grid({"a": {"t1": [A]}, "c": {"t9": [A]}}))
    with pytest.raises(AnalysisError, match="no candidate shares a task with the baseline a: "
                                            "0 pairs"):
        compare.compare(alone, baseline="a")


def test_pareto_places_configurations_only_against_their_own_universe(two_benchmarks):
    p = pareto.pareto(two_benchmarks, x="cost_per_trial")
    by_u: dict[str, set[str]] = {}
    for r in p.rows:
        by_u.setdefault(r["universe"], set()).add(r["config_id"])
        assert all(d in by_u[r["universe"]] | {"a", "b"} if r["universe"] == "B1"
                   else d in {"c", "d"} for d in r["dominated_by"])
    assert by_u == {"B1": {"a", "b"}, "B2": {"c", "d"}}
    assert any("2 task universes: one front each" in w for w in p.warnings)


@pytest.mark.parametrize("kwargs,message", [
    ({"configs": ["zzz"]}, "configuration 'zzz' not found in the selected trials; known: a, b"),
    ({"sources": ["inspcet"]}, "--source 'inspcet': no source of that name in the warehouse; "
                               "known: test"),
    ({"benchmarks": ["B3"]}, "--benchmark 'B3': no benchmark of that name in the warehouse; "
                             "known: B1, B2"),
    ({"universes": ["B9"]}, "--universe 'B9': no task universe in this selection of that "
                            "name in the warehouse; known: B1, B2"),
    ({"models": ["gpt"]}, "--model 'gpt': no model among the selected trials of that name"),
])
def test_unknown_selectors_name_what_exists(two_benchmarks, kwargs, message):
    with pytest.raises(AnalysisError, match=message.replace("(", r"\(").replace(")", r"\)")):
        summary.summarize(two_benchmarks, Filters.parse(**kwargs))


def test_selectors_narrow_every_question(two_benchmarks):
    only_b1 = Filters.parse(benchmarks=["B1"])
    assert {r["config_id"] for r in summary.summarize(two_benchmarks, only_b1).rows} == {"a", "b"}
    one = Filters.parse(configs=["c", "d"])
    assert {r["config_id"] for r in consistency.consistency(two_benchmarks, one).rows} == {"c", "d"}
    by_model = Filters.parse(models=["m"], configs=["a"])  # intersection of the two
    assert [r["config_id"] for r in summary.summarize(two_benchmarks, by_model).rows] == ["a"]
    src = Filters.parse(sources=["test"], universes=["B2"])
    assert compare.compare(two_benchmarks, src).universe == "B2"


def test_cost_coverage_complete_keeps_known_cost_and_says_how_many(wh, grid):
    trials = grid({"a": {"t1": [A, R], "t2": [A]}, "b": {"t1": [R, A], "t2": [R]}},
                  cost_usd=0.5)
    trials[1]["cost_usd"] = None  # a, t1, rep 2: unknown cost
    con = wh(trials)
    every = pareto.pareto(con)
    assert {r["config_id"]: r["on_front"] for r in every.rows}["a"] is None  # cost unknown
    known = Filters.parse(cost_coverage="complete")
    p = pareto.pareto(con, known)
    rows = {r["config_id"]: r for r in p.rows}
    assert rows["a"]["valid"] == 2 and rows["a"]["x"] == pytest.approx(1.0 / 2)
    assert rows["a"]["on_front"] is not None
    assert any("5 of 6 complete trials have a known cost and remain" in w for w in p.warnings)
    s = summary.summarize(con, known)
    assert all(r["cost_coverage"] == 1.0 for r in s.rows)
    assert any("5 of 6" in w for w in s.warnings)
    none = wh(grid({"a": {"t1": [A]}}, cost_usd=None))
    with pytest.raises(AnalysisError, match="none of the 1 selected trials has a known cost"):
        summary.summarize(none, known)


def test_pareto_over_median_steps(wh, grid):
    con = wh(grid({"fast": {"t1": [A, A]}}, steps=3) + grid({"slow": {"t1": [A, R]}}, steps=9)
             + grid({"dunno": {"t1": [A, A]}}, steps=None))
    p = pareto.pareto(con, x="median_steps")
    rows = {r["config_id"]: r for r in p.rows}
    assert rows["fast"]["x"] == 3 and rows["fast"]["on_front"] is True
    assert rows["slow"]["dominated_by"] == ["fast"]
    assert rows["dunno"]["on_front"] is None  # steps unknown: not placed, never 0
    assert any("not placed: median steps unknown" in w for w in p.warnings)


def test_familiarity_reads_labels_however_they_arrived(wh, grid):
    from warehouse.schema import table_from_rows  # noqa: F401 -- the schema the rows follow

    trials = grid({"a": {"t1": [A, A], "t2": [R, A], "t3": [R, R]}})
    for t in trials:  # a runs-jsonl line's extra field is kept with the trial
        fam = {"t1": "known", "t2": "known", "t3": "unknown"}[t["case_id"]]
        t["labels_json"] = json.dumps({"extra": {"familiarity": fam}})
    cases = [{"case_id": "t1", "repository": "r/one"}, {"case_id": "t2", "repository": "r/two"},
             {"case_id": "t3", "repository": "r/three", "labels_json": json.dumps(
                 {"familiarity": "unknown"})}]
    (row,) = familiarity.familiarity(wh(trials, cases=cases)).rows
    assert (row["known_solved"], row["known_valid"]) == (3, 4)
    assert (row["unknown_solved"], row["unknown_valid"]) == (0, 2)
    with pytest.raises(AnalysisError, match="supply the labels: a labels file at ingest "
                                            r"\(trialhouse ingest PATH --labels"):
        familiarity.familiarity(wh(grid({"a": {"t1": [A]}})))
