"""Trajectory metrics over warehouse rows (analysis.trajectory) on a hand-built warehouse.

Three stages, values worked out by hand in the comments:

* ``cand`` r1, accepted (stage starts at t=0): read src/a.py [1,2], pytest fails [2,4], model
  turn [4,6] (100 in, 10 out, 50 cache read), edit src/a.py [6,7], pytest passes [7,9],
  the same pytest again [9,10], read docs/x.md [10,11]; the patch touches src/a.py.
* ``base`` r1, target_failed: edit src/b.py [1,2], pytest fails [2,3]; the patch is empty.
* ``cand`` r2, accepted, a stage without any step row: every metric unknown (null).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from analysis import trajectory as tr
from analysis.filters import Filters
from warehouse import db
from warehouse.schema import table_from_rows

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
B = "b1"


def at(s: float | None) -> datetime | None:
    return None if s is None else T0 + timedelta(seconds=s)


def step(trial: str, index: int, kind: str, action=None, t=(None, None), command=None, exit_code=None,
         ok=True, paths=(), tokens=(None, None, None, None)) -> dict:
    return {"run_id": "r1", "trial_id": trial, "attempt": 1, "stage": "build", "step_index": index, "kind": kind,
            "source": "test", "tool": "Bash" if action == "run" else action, "action": action,
            "paths_json": json.dumps(list(paths)), "command": command, "exit_code": exit_code, "ok": ok,
            "started_at": at(t[0]), "ended_at": at(t[1]), "input_tokens": tokens[0], "output_tokens": tokens[1],
            "cache_read_tokens": tokens[2], "cache_write_tokens": tokens[3], "ingest_batch_id": B}


@pytest.fixture
def con(tmp_path):
    trials = [("cand-1", "cand", 1, "accepted", ["src/a.py"]), ("base-1", "base", 1, "target_failed", []),
              ("cand-2", "cand", 2, "accepted", None)]
    steps = [
        step("cand-1", 0, "tool", "read", (1, 2), paths=["src/a.py"]),
        step("cand-1", 1, "tool", "run", (2, 4), "pytest", 1, ok=False),
        step("cand-1", 2, "model", t=(4, 6), tokens=(100, 10, 50, None)),
        step("cand-1", 3, "tool", "edit", (6, 7), paths=["src/a.py"]),
        step("cand-1", 4, "tool", "run", (7, 9), "pytest", 0),
        step("cand-1", 5, "tool", "run", (9, 10), "pytest", 0),
        step("cand-1", 6, "tool", "read", (10, 11), paths=["docs/x.md"]),
        step("base-1", 0, "tool", "edit", (1, 2), paths=["src/b.py"]),
        step("base-1", 1, "tool", "run", (2, 3), "pytest", 1, ok=False),
    ]
    tables = {
        "runs": table_from_rows("runs", [{"run_id": "r1", "source_format": "trialhouse", "started_at": T0,
                                          "ingest_batch_id": B}]),
        "configs": table_from_rows("configs", [
            {"run_id": "r1", "config_id": v, "variant": v, "model": "m", "harness": "claude-code",
             "harness_version": "2.1.332", "simulated": False, "source_format": "trialhouse", "variant_order": i,
             "ingest_batch_id": B} for i, v in enumerate(("base", "cand"))]),
        "cases": table_from_rows("cases", [{"run_id": "r1", "case_id": "c1", "holdout": False,
                                            "ingest_batch_id": B}]),
        "trials": table_from_rows("trials", [
            {"run_id": "r1", "trial_id": tid, "source_format": "trialhouse", "config_id": v, "variant": v,
             "model": "m", "harness": "claude-code", "harness_version": "2.1.332", "case_id": "c1",
             "repetition": rep, "outcome": outcome, "complete": True, "simulated": False,
             "patch_paths_json": None if paths is None else json.dumps(paths), "ingest_batch_id": B}
            for tid, v, rep, outcome, paths in trials]),
        "stages": table_from_rows("stages", [
            {"run_id": "r1", "trial_id": tid, "attempt": 1, "stage": "build", "started_at": T0, "ingest_batch_id": B}
            for tid, *_ in trials]),
        "steps": table_from_rows("steps", steps),
    }
    path = tmp_path / "wh" / "t.duckdb"
    with db.write_lock(path):
        db.replace_run(path, "r1", tables)
        db.open(path).close()
    c = db.open(path, read_only=True)
    yield c
    c.close()


def by_trial(frame, *cols):
    return {r["trial_id"]: tuple(r[c] for c in cols) for r in frame.iter_rows(named=True)}


def test_repeated_calls(con):
    # cand-1: 6 tool calls; after the edit (3) pytest runs at 4 and again at 5 unchanged: 1 repeat
    # (pytest at 1 and at 4 are not repeats: the edit in between can change the answer)
    assert by_trial(tr.repeated_calls(con), "repeats", "tool_calls", "share") == {
        "cand-1": (1, 6, 1 / 6), "base-1": (0, 2, 0.0), "cand-2": (None, None, None)}


def test_failed_check_to_edit(con):
    # cand-1: failed pytest ends at 4, the edit starts at 6: 2 s; base-1: its failure is never answered
    assert by_trial(tr.failed_check_to_edit(con), "recoveries", "median_s", "unanswered", "untimed") == {
        "cand-1": (1, 2.0, 0, 0), "base-1": (0, None, 1, 0), "cand-2": (None, None, None, None)}


def test_outside_reads(con):
    # cand-1 read src/a.py and docs/x.md; the patch touches subsystem "src": 1 of 2 outside;
    # base-1's patch is empty (nothing to be outside of): null
    assert by_trial(tr.outside_reads(con), "outside", "read", "share", "subsystems") == {
        "cand-1": (1, 2, 0.5, "src"), "base-1": (None, None, None, None), "cand-2": (None, None, None, None)}


def test_final_check_time_to_first_edit_time_split_and_tokens(con):
    assert by_trial(tr.final_check(con), "final_check") == {
        "cand-1": ("passed_after_last_edit",), "base-1": ("failed_after_last_edit",), "cand-2": (None,)}
    # first edit ends at 7 (cand-1) and 2 (base-1) after the stage start
    assert by_trial(tr.time_to_first_edit(con), "seconds") == {"cand-1": (7.0,), "base-1": (2.0,), "cand-2": (None,)}
    # cand-1: model 2 s; tools 1 + 2 + 1 + 2 + 1 + 1 = 8 s; share 2 / 10
    assert by_trial(tr.model_vs_tool_time(con), "model_s", "tool_s", "model_share") == {
        "cand-1": (2.0, 8.0, 0.2), "base-1": (0.0, 2.0, 0.0), "cand-2": (None, None, None)}
    # one turn: 100 + 10 + 50 (cache write unreported) = 160; base-1 has no model turn: null
    assert by_trial(tr.tokens_per_step(con), "mean_tokens", "counted") == {
        "cand-1": (160.0, 1), "base-1": (None, 0), "cand-2": (None, None)}


def test_every_row_carries_the_configuration_and_outcome(con):
    frame = tr.repeated_calls(con)
    assert set(frame.columns) >= {*tr.KEYS, "attempt", "stage", "accepted"}
    assert by_trial(frame, "variant", "accepted") == {"cand-1": ("cand", True), "base-1": ("base", False),
                                                     "cand-2": ("cand", True)}
    assert tr.repeated_calls(con, Filters(runs=("other",))).height == 0


def test_by_configuration_sets_accepted_beside_the_rest(con):
    frame = tr.by_configuration(con)
    rows = {(r["variant"], r["metric"], r["category"], r["accepted"]): r for r in frame.iter_rows(named=True)}
    ttfe = rows[("cand", "time_to_first_edit_s", None, True)]
    assert (ttfe["n"], ttfe["unknown"], ttfe["median"]) == (1, 1, 7.0)  # cand-2 has no trajectory: unknown
    assert rows[("base", "time_to_first_edit_s", None, False)]["median"] == 2.0
    assert rows[("cand", "final_check", "passed_after_last_edit", True)]["value"] == 0.5  # 1 of cand's 2 stages
    assert rows[("cand", "final_check", None, True)]["value"] == 0.5  # the other: unknown
    assert rows[("base", "final_check", "failed_after_last_edit", False)]["value"] == 1.0
    assert {r["metric"] for r in frame.iter_rows(named=True)} == {*tr.NUMERIC, "final_check"}
