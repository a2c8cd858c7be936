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
import os
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


def build(tmp_path, trials, steps):
    """A read-only warehouse of run r1: ``trials`` as (trial_id, variant, repetition, outcome,
    patch paths or None), each with one build stage starting at T0, and the ``steps`` rows."""
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
    return path


@pytest.fixture
def warehouse(tmp_path):
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
    return build(tmp_path, trials, steps)


@pytest.fixture
def con(warehouse):
    c = db.open(warehouse, read_only=True)
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


def test_summary_puts_accepted_beside_the_others_per_configuration(con):
    res = tr.summary(con)
    rows = {(r["variant"], r["metric"], r["category"]): r for r in res.rows}
    # cand: cand-1 (first edit at 7 s) and cand-2 (no trajectory: unknown), both accepted
    t = rows[("cand", "time_to_first_edit_s", None)]
    assert (t["stages"], t["n"], t["unknown"], t["median"], t["p90"]) == (2, 1, 1, 7.0, 7.0)
    assert (t["accepted_n"], t["accepted_median"], t["other_n"], t["other_median"]) == (1, 7.0, 0, None)
    b = rows[("base", "time_to_first_edit_s", None)]  # base-1, not accepted, first edit at 2 s
    assert (b["accepted_n"], b["other_n"], b["other_median"], b["other_p90"]) == (0, 1, 2.0, 2.0)
    assert rows[("cand", "repeated_share", None)]["median"] == 1 / 6
    passed = rows[("cand", "final_check", "passed_after_last_edit")]
    assert (passed["n"], passed["unknown"], passed["share"], passed["accepted_share"], passed["other_share"]) == \
        (1, 1, 0.5, 0.5, None)
    assert rows[("cand", "final_check", "unknown")]["share"] == 0.5
    failed = rows[("base", "final_check", "failed_after_last_edit")]
    assert (failed["share"], failed["accepted_share"], failed["other_share"]) == (1.0, None, 1.0)
    assert {r["metric"] for r in res.rows} == {*tr.NUMERIC, "final_check"} and res.warnings == []
    assert tr.summary(con).as_dict()["rows"][0].keys() == set(res.columns)


def test_summary_quantiles_match_numpy(tmp_path):
    import numpy as np

    # five accepted stages whose single edit ends at 1, 2, 3, 4 and 10 s; two others at 5 and 8 s
    ends = {"a1": 1, "a2": 2, "a3": 3, "a4": 4, "a5": 10, "o1": 5, "o2": 8}
    trials = [(t, "cand", i, "accepted" if t[0] == "a" else "target_failed", ["src/a.py"])
              for i, t in enumerate(ends, 1)]
    steps = [step(t, 0, "tool", "edit", (e - 1, e), paths=["src/a.py"]) for t, e in ends.items()]
    c = db.open(build(tmp_path, trials, steps), read_only=True)
    try:
        row = next(r for r in tr.summary(c).rows if r["metric"] == "time_to_first_edit_s")
    finally:
        c.close()
    acc, other = [1, 2, 3, 4, 10], [5, 8]
    assert row["accepted_median"] == np.median(acc) and row["accepted_p90"] == pytest.approx(np.percentile(acc, 90))
    assert row["other_median"] == np.median(other) and row["other_p90"] == pytest.approx(np.percentile(other, 90))
    assert row["p90"] == pytest.approx(np.percentile(acc + other, 90)) and row["n"] == 7


def test_summary_without_steps_warns_and_no_trial_is_an_error(tmp_path, con):
    from analysis.errors import AnalysisError

    c = db.open(build(tmp_path / "empty", [("t1", "cand", 1, "accepted", ["a.py"])], []), read_only=True)
    try:
        res = tr.summary(c)
    finally:
        c.close()
    assert res.warnings and "no trajectory steps" in res.warnings[0]
    assert all(r["n"] == 0 for r in res.rows if r["metric"] != "final_check")
    with pytest.raises(AnalysisError, match="--run 'other': no run of that name"):
        tr.summary(con, Filters(runs=("other",)))


def test_trajectory_command_table_json_and_csv(warehouse):
    import subprocess
    import sys

    def cli(*args):
        proc = subprocess.run([sys.executable, "-m", "trialhouse", "trajectory", "-w", str(warehouse), *args],
                              capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    doc = json.loads(cli("--json"))
    assert doc["filters"]["holdout"] == "include"
    row = next(r for r in doc["rows"] if r["variant"] == "cand" and r["metric"] == "time_to_first_edit_s")
    assert (row["median"], row["unknown"]) == (7.0, 1)
    table = cli()
    line = next(ln for ln in table.splitlines() if "cand" in ln and "time_to_first_edit_s" in ln)
    assert "7 / 7 (n=1)" in line and "not quality scores" in table
    assert "final_check: passed_after_last_edit" in table
    header, *records = cli("--csv").splitlines()
    assert header.split(",")[:6] == ["config_id", "variant", "model", "harness", "harness_version", "stage"]
    assert len(records) == len(doc["rows"])
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "trajectory", "-w", str(warehouse), "--run", "nope"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "--run 'nope': no run" in proc.stderr and "Traceback" not in proc.stderr
