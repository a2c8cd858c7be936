"""summarize and consistency: their two ways to count tasks (task_rollup or the trials) and pooling.

The rollup path is the fast default; counting from trials is what --since/--until use.
Both must give the same summary on warehouses that exercise every branch: tasks outside
the common set, several runs of one benchmark, incomplete trials, unlabelled slices.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from analysis.filters import Filters
from analysis.summary import summarize
from warehouse import db

A, R = "accepted", "target_failed"


def _labels(case_ids, benchmark="B", task_class=None):
    return [{"case_id": c, "benchmark": benchmark,
             "task_class": task_class(c) if task_class else None} for c in case_ids]


@pytest.fixture
def two_runs(wh_runs, grid):
    """Run r1: configs a, b on t1–t3 (b lacks t3); run r2: config a again on t1, t4, and
    an incomplete trial; t4 is labelled, the others are not."""
    r1 = grid({"a": {"t1": [A, R], "t2": [A, A], "t3": [R]},
               "b": {"t1": [R, R], "t2": [A, R]}})
    r2 = grid({"a": {"t1": [A], "t4": [A]}, "b": {"t4": [R]}})
    r2.append({"config_id": "a", "case_id": "t2", "rep": 9, "outcome": None})
    klass = {"t4": "bugfix"}.get
    return wh_runs([("r1", r1, _labels(["t1", "t2", "t3"], task_class=klass)),
                    ("r2", r2, _labels(["t1", "t2", "t4"], task_class=klass))])


@pytest.mark.parametrize("by", [None, "task_class"])
@pytest.mark.parametrize("filters", [Filters(), Filters.parse(runs=["r1"]),
                                     Filters.parse(labels=["task_class=bugfix"])])
def test_rollup_and_trial_counts_give_the_same_summary(two_runs, by, filters, close):
    fast = summarize(two_runs, filters, by=by).as_dict()
    slow = summarize(two_runs, filters, by=by, from_trials=True).as_dict()
    close(fast, slow, rel_tol=1e-12, abs_tol=1e-15)  # task means may add in another order


def test_runs_of_one_benchmark_pool_their_tasks(two_runs):
    s = summarize(two_runs)
    rows = {r["config_id"]: r for r in s.rows}
    # Common tasks of universe B: t1, t2, t4 (b never finished t3). a pools r1 and r2:
    # t1 = 2/3, t2 = 2/2, t4 = 1/1; b: t1 = 0/2, t2 = 1/2, t4 = 0/1.
    assert rows["a"]["tasks"] == 3 and rows["b"]["tasks"] == 3
    assert rows["a"]["task_mean"] == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert rows["b"]["task_mean"] == pytest.approx((0 + 1 / 2 + 0) / 3)
    assert (rows["a"]["valid"], rows["a"]["solved"], rows["a"]["incomplete"]) == (6, 5, 1)
    assert s.excluded_cases == [{"config_id": "a", "variant": "a", "model": "m", "harness": "h",
                                 "harness_version": "1", "universe": "B",
                                 "case_ids": ["t3"]}]


def test_an_unlabelled_slice_keeps_its_task_statistics(two_runs):
    rows = {(r["config_id"], r["task_class"]): r for r in summarize(two_runs, by="task_class").rows}
    unlabelled = rows[("a", None)]  # t1 and t2, no task_class
    assert unlabelled["tasks"] == 2
    assert unlabelled["task_mean"] == pytest.approx((2 / 3 + 1) / 2)
    assert rows[("a", "bugfix")]["tasks"] == 1


def test_since_counts_from_the_trials(two_runs):
    s = summarize(two_runs, Filters.parse(since="2020-01-01"))
    assert {r["config_id"]: r["tasks"] for r in s.rows} == {"a": 3, "b": 3}


def test_a_configuration_missing_from_configs_is_named_from_its_trials(wh_runs, grid):
    con = wh_runs([("r1", grid({"a": {"t1": [A]}, "b": {"t1": [R]}}), None)])
    path = Path(con.execute("PRAGMA database_list").fetchall()[0][2])
    con.close()
    configs = db.read_partition(path, "configs", "r1")  # drop b's configs row
    only_a = configs.filter(pc.equal(configs["config_id"], "a"))
    only_a = only_a.append_column("run_id", pa.array(["r1"] * only_a.num_rows))
    with db.write_lock(path):
        db.replace_run(path, "r1", {"configs": only_a})
    con = db.open(path, read_only=True)
    rows = {r["config_id"]: r for r in summarize(con).rows}
    con.close()
    assert (rows["b"]["variant"], rows["b"]["model"], rows["b"]["harness"]) == ("b", "m", "h")
    assert rows["a"]["variant"] == "a"


def test_median_wall_time_is_over_all_complete_trials(wh, grid):
    import numpy as np

    trials = grid({"c": {"t1": [A, R, "infra_error", A]}})
    for t, d in zip(trials, [10.0, 20.0, 500.0, 40.0], strict=True):
        t["duration_s"] = d
    row = summarize(wh(trials)).rows[0]
    assert row["med_duration_s"] == pytest.approx(np.median([10.0, 20.0, 500.0, 40.0]))
    assert row["med_duration_s"] == row["latency_p50"]


def _trial_passes(monkeypatch) -> list[bool]:
    """Record each scan of the trial rows for medians (the path config_rollup replaces)."""
    from analysis import summary

    calls: list[bool] = []
    real = summary._holistic_sql

    def spy(*args, **kwargs):
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(summary, "_holistic_sql", spy)
    return calls


def test_whole_runs_take_their_medians_from_config_rollup(tmp_path, monkeypatch, close):
    from tests.support.synthetic_warehouse import Spec, generate

    path = tmp_path / "w.duckdb"
    generate(path, Spec(models=2, harnesses=2, tasks=12, reps=3, incomplete=3, unknown_cost=4,
                        run_id="r1"))
    generate(path, Spec(models=1, harnesses=1, tasks=5, reps=2, seed=7, run_id="r2"))
    con = db.open(path, read_only=True)
    calls = _trial_passes(monkeypatch)
    slow = summarize(con, Filters.parse(runs=["r1"]), from_trials=True).as_dict()
    assert calls == [True]
    fast = summarize(con, Filters.parse(runs=["r1"])).as_dict()
    assert calls == [True]  # one run, every task common: no scan of the trial rows
    close(fast, slow, rel_tol=1e-12, abs_tol=1e-15)
    rows = fast["rows"]
    assert len(rows) == 4 and all(r["med_steps"] is not None for r in rows)
    assert any(r["cost_usd"] is None and r["cost_p50"] is not None for r in rows)  # unknown cost
    # r2 repeats a configuration of r1, so its medians pool two runs: only the trials know them.
    pooled = summarize(con).as_dict()
    assert calls == [True, True]
    close(pooled, summarize(con, from_trials=True).as_dict(), rel_tol=1e-12, abs_tol=1e-15)
    summarize(con, Filters.parse(runs=["r1"], labels=["difficulty=hard"]))
    summarize(con, Filters.parse(runs=["r1"]), by="repository")
    assert len(calls) == 5  # a label filter or a slice selects trials within the run


@pytest.mark.parametrize("by", [None, "task_class"])
def test_consistency_counts_the_same_from_the_rollup_and_the_trials(two_runs, by, close):
    from analysis.consistency import consistency

    close(consistency(two_runs, by=by).rows, consistency(two_runs, by=by, from_trials=True).rows,
          rel_tol=1e-12, abs_tol=1e-15)
    rows = {r["config_id"]: r for r in consistency(two_runs).rows}
    # Common tasks with a valid trial for a and b: t1, t2, t4. a: t1 2/3, t2 2/2, t4 1/1.
    assert rows["a"]["tasks"] == 3 and rows["a"]["consistent"] == 2
    assert rows["a"]["excluded_tasks"] == 1  # t3
