"""mini-swe-agent run directories as trials with steps (FORMATS.md §7), on a directory laid out
from real mini-swe-agent 2.4.6 trajectories (gen_mini_fixtures.py) with a SWE-bench run report."""

from __future__ import annotations

import json
import shutil

import pytest

from ingest.errors import IngestError
from ingest.formats import detect_format, load
from ingest.formats.mini_swe_agent import outcome_for, patch_paths

from .conftest import FIXTURES, check_tables, labels

RUN = FIXTURES / "mini_swe_agent" / "run1"


def _usage(iid: str) -> tuple[int, int, int]:
    """Uncached input, output and cache reads summed over the raw responses, independently."""
    doc = json.loads((RUN / iid / f"{iid}.traj.json").read_text())
    total = out = cached = 0
    for m in doc["messages"]:
        if m["role"] == "assistant":
            u = m["extra"]["response"]["usage"]
            c = (u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
            total, out, cached = total + u["prompt_tokens"] - c, out + u["completion_tokens"], cached + c
    return total, out, cached


def test_detects_a_run_directory_before_its_swebench_report_and_a_trajectory_file():
    assert detect_format(RUN) == "mini-swe-agent"
    assert detect_format(RUN / "calc__calc-1" / "calc__calc-1.traj.json") == "mini-swe-agent"
    assert detect_format(RUN / "th-scripted-1.run1.json") == "swebench"  # the report alone stays SWE-bench


def test_outcomes_combine_the_exit_status_with_the_grade():
    [b] = load(RUN, "mini-swe-agent")
    check_tables(b)
    t = {r["trial_id"]: r for r in b.rows["trials"]}
    assert {k: (r["outcome"], r["reason"]) for k, r in t.items()} == {
        "calc__calc-1": ("accepted", None), "calc__calc-2": ("target_failed", None),
        "calc__calc-3": ("budget_exhausted", "LimitsExceeded"), "calc__calc-4": ("infra_error", "InternalServerError")}
    assert "calc__calc-5" not in t and any("no SWE-bench grade" in n and "calc__calc-5" in n for n in b.notes)
    one = t["calc__calc-1"]
    assert (one["model"], one["harness"], one["harness_version"], one["repetition"]) == \
        ("openai/th-scripted-1", "mini-swe-agent", "2.4.6", 1)
    assert (one["input_tokens"], one["output_tokens"], one["cache_read_tokens"]) == _usage("calc__calc-1")
    assert one["cost_usd"] is None and labels(one)["cost_unpriced"] is True  # 0.0 next to 5 API calls
    assert json.loads(one["patch_paths_json"]) == ["calc.py"] and one["steps"] == 5
    four = t["calc__calc-4"]  # the first call failed: no usage at all, unknown (never 0)
    assert (four["input_tokens"], four["output_tokens"], four["duration_s"]) == (None, None, None)


def test_trajectories_become_steps_with_workspace_relative_paths():
    [b] = load(RUN, "mini-swe-agent")
    steps = [s for s in b.rows["steps"] if s["trial_id"] == "calc__calc-1"]
    assert [s["step_index"] for s in steps] == list(range(10))
    assert [s["kind"] if s["kind"] == "model" else s["action"] for s in steps] == \
        ["model", "read", "model", "run", "model", "edit", "model", "run", "model", "other"]
    assert steps[1]["paths_json"] == '["calc.py"]' and steps[3]["exit_code"] == 1 and steps[3]["ok"] is False
    assert steps[9]["exit_code"] is None  # the submit marker is never executed
    assert {s["source"] for s in b.rows["steps"]} == {"mini-trajectory"}
    stages = {s["trial_id"]: s for s in b.rows["stages"]}
    assert "calc__calc-4" not in stages  # no trajectory: no stage, the metrics stay unknown
    assert (stages["calc__calc-1"]["trajectory_steps"], stages["calc__calc-1"]["started_at"]) == (10, None)


def test_steps_reach_the_warehouse_and_the_trajectory_metrics(tmp_path):
    from analysis import trajectory as tr
    from ingest.api import ingest_paths
    from warehouse import db

    wh = tmp_path / "w.duckdb"
    ingest_paths([RUN], wh)
    con = db.open(wh, read_only=True)
    try:
        assert con.sql("SELECT count(*) FROM steps").fetchall() == [(24,)]
        checks = {r["trial_id"]: r["final_check"] for r in tr.final_check(con).iter_rows(named=True)}
        ttfe = {r["trial_id"]: r["seconds"] for r in tr.time_to_first_edit(con).iter_rows(named=True)}
    finally:
        con.close()
    assert checks == {"calc__calc-1": "passed_after_last_edit", "calc__calc-2": "passed_after_last_edit",
                      "calc__calc-3": "no_edit"}
    assert set(ttfe.values()) == {None}  # mini's trajectory has no stage start: unknown


@pytest.mark.parametrize(("status", "patch", "grade", "expected"), [
    ("Submitted", "p", ("accepted", None, {}), "accepted"),
    ("Submitted", "", None, "target_failed"),  # an empty patch cannot pass: no grade needed
    ("Submitted", "p", None, None),  # needs the grade
    ("LimitsExceeded", "p", ("accepted", None, {}), "accepted"),
    ("TimeExceeded", "p", ("target_failed", None, {}), "budget_exhausted"),
    ("LimitsExceeded", "p", None, None),
    ("RepeatedFormatError", "", None, "target_failed"),
    ("APIConnectionError", "", None, "infra_error"),
    ("APIConnectionError", "p", ("target_failed", None, {}), "target_failed"),
])
def test_outcome_rules(status, patch, grade, expected):
    got = outcome_for(status, patch, grade)
    assert (got[0] if got else None) == expected


def test_patch_paths():
    assert patch_paths("diff --git a/x/y.py b/x/y.py\n+1\ndiff --git a/z b/z\n") == ["x/y.py", "z"]
    assert patch_paths("") == [] and patch_paths(None) == []


def test_bad_directories_say_what_to_do(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match="no mini-swe-agent trajectories"):
        load(tmp_path / "empty", "mini-swe-agent")
    bad = tmp_path / "bad"
    shutil.copytree(RUN, bad)
    (bad / "preds.json").write_text("[1, 2]")
    with pytest.raises(IngestError, match=r"preds.json: expected"):
        load(bad, "mini-swe-agent")
    ungraded = tmp_path / "ungraded"
    shutil.copytree(RUN / "calc__calc-5", ungraded / "calc__calc-5")
    with pytest.raises(IngestError, match="no graded mini-swe-agent instance"):
        load(ungraded, "mini-swe-agent")


def test_a_newer_trajectory_shape_gives_fewer_fields_not_an_error(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    f = run / "calc__calc-1" / "calc__calc-1.traj.json"
    doc = json.loads(f.read_text())
    for m in doc["messages"]:
        m.pop("extra", None)  # e.g. 1.x: no extra at all
        m["new_field"] = {"x": 1}
    f.write_text(json.dumps(doc))
    [b] = load(run, "mini-swe-agent")
    one = next(r for r in b.rows["trials"] if r["trial_id"] == "calc__calc-1")
    assert one["outcome"] == "accepted" and one["input_tokens"] is None and one["duration_s"] is None
    steps = [s for s in b.rows["steps"] if s["trial_id"] == "calc__calc-1"]
    assert [s["kind"] for s in steps] == ["model"] * 5 and all(s["input_tokens"] is None for s in steps)
