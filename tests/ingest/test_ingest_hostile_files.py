"""Hostile foreign files cannot reach outside their folder or exhaust memory (issue 29, item 5;
docs/security.md, "Foreign files").

Each shape is built small in the test (``tests/fuzz/hostile_files.py``: sparse files with
``truncate``, bombs of a few KB, symlinks to a canary outside the folder), ingested through the
real CLI in a subprocess whose peak RSS a small parent measures, and must be quarantined or
refused with one clear line, under 500 MB, with the canary neither stored nor read (its access
time unchanged). ``make fuzz`` runs the same shapes with random sizes and places.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
from pathlib import Path

import duckdb
import pytest

_path = Path(__file__).resolve().parents[1] / "fuzz" / "hostile_files.py"
_spec = importlib.util.spec_from_file_location("hostile_files", _path)
hostile = importlib.util.module_from_spec(_spec)
sys.modules["hostile_files"] = hostile
_spec.loader.exec_module(hostile)

HARBOR_TRIALS = 8  # the fixture job's trials
SWEBENCH_TRIALS = 20  # the fixture submission's instances


def _atime_moves(tmp_path: Path) -> bool:
    """Whether reading a file moves its access time here (the canary check relies on it)."""
    probe = tmp_path / "probe"
    probe.write_text("x")
    os.utime(probe, (1_000_000, 2_000_000))
    probe.read_text()
    return probe.stat().st_atime != 1_000_000


def _ingest(tmp_path: Path, shape: str, seed: int = 0):
    case = hostile.SHAPES[shape](tmp_path, random.Random(seed))
    wh = tmp_path / "wh" / "w.duckdb"
    got, wrong = hostile.judge(case, wh)
    if case.canary is not None:
        assert _atime_moves(tmp_path), "reading a file does not move its access time here: the canary check is blind"
    assert wrong == [], "\n".join(wrong)
    return case, got, wh


def _count(wh: Path, sql: str):
    con = duckdb.connect(str(wh), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_harbor_trial_folder_that_is_a_symlink_out_is_quarantined_unread(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_trial_folder_symlink")
    assert got.rc == 2 and "quarantined" in got.err
    [(reason,)] = _count(wh, "SELECT reason FROM quarantine")
    assert "evil__" in reason and "leads outside the folder" in reason
    assert _count(wh, "SELECT count(*) FROM trials") == [(HARBOR_TRIALS,)]
    assert _count(wh, "SELECT count(*) FROM quarantine WHERE raw_text IS NOT NULL") == [(0,)]


def test_a_harbor_result_that_is_a_symlink_out_is_quarantined_unread(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_result_symlink")
    assert _count(wh, "SELECT count(*) FROM trials") == [(HARBOR_TRIALS - 1,)]
    assert _count(wh, "SELECT count(*), count(raw_text) FROM quarantine") == [(1, 0)]


def test_a_harbor_job_that_is_a_symlink_out_of_a_jobs_folder_is_quarantined_unread(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_job_symlink")
    [(reason, raw)] = _count(wh, "SELECT reason, raw_text FROM quarantine")
    assert "evil__" in reason and "leads outside the folder" in reason and raw is None
    assert _count(wh, "SELECT count(*) FROM trials") == [(HARBOR_TRIALS,)]  # the real job beside it


def test_a_sparse_harbor_result_is_refused_by_its_size(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_sparse_result")
    [(reason, raw)] = _count(wh, "SELECT reason, raw_text FROM quarantine")
    assert "bytes, more than the 256 MiB a JSON document may have; not read" in reason
    assert len(raw) == 2000  # the excerpt is the first 2,000 bytes, read as that many
    assert _count(wh, "SELECT count(*) FROM trials") == [(HARBOR_TRIALS - 1,)]


def test_a_duplicate_harbor_trial_id_is_quarantined_not_a_traceback(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_duplicate_id")
    [(reason,)] = _count(wh, "SELECT reason FROM quarantine")
    assert "zz-copy__" in reason and "duplicate trial id" in reason
    assert _count(wh, "SELECT count(*), count(DISTINCT trial_id) FROM trials") == [(HARBOR_TRIALS, HARBOR_TRIALS)]


def test_a_fifo_for_a_reward_file_is_refused_without_blocking(tmp_path):
    case, got, wh = _ingest(tmp_path, "harbor_fifo_result")
    [(reason,)] = _count(wh, "SELECT reason FROM quarantine")
    assert "reward.txt: not a regular file" in reason


@pytest.mark.parametrize("seed", [0, 1])  # a relative ../ id, then an absolute one
def test_a_swebench_instance_id_that_is_a_path_is_quarantined_and_decides_nothing(tmp_path, seed):
    case, got, wh = _ingest(tmp_path, "swebench_path_id", seed)
    [(reason,)] = _count(wh, "SELECT reason FROM quarantine")
    assert reason.startswith("instance id ") and "not a trial" in reason
    assert _count(wh, "SELECT count(*) FROM trials WHERE case_id LIKE '%outside%'") == [(0,)]
    assert _count(wh, "SELECT count(*) FROM trials") == [(SWEBENCH_TRIALS,)]


def test_a_swebench_logs_folder_that_is_a_symlink_out_decides_nothing(tmp_path):
    case, got, wh = _ingest(tmp_path, "swebench_logs_symlink")
    [(reason, raw)] = _count(wh, "SELECT reason, raw_text FROM quarantine")
    assert "report.json: leads outside the folder" in reason and raw is None
    assert _count(wh, "SELECT count(*) FROM trials") == [(SWEBENCH_TRIALS,)]


def test_a_swebench_harness_report_that_is_a_symlink_out_is_quarantined_unread(tmp_path):
    case, got, wh = _ingest(tmp_path, "swebench_report_symlink")
    assert _count(wh, "SELECT case_id, outcome FROM trials") == [("x__y-1", "target_failed")]
    assert _count(wh, "SELECT count(*), count(raw_text) FROM quarantine") == [(1, 0)]


@pytest.mark.parametrize("seed", [0, 1])  # a .json log, then an .eval
def test_an_inspect_log_that_is_a_symlink_out_is_quarantined_unread(tmp_path, seed):
    case, got, wh = _ingest(tmp_path, "inspect_log_symlink", seed)
    [(reason, raw)] = _count(wh, "SELECT reason, raw_text FROM quarantine")
    assert "leads outside the folder" in reason and raw is None
    assert _count(wh, "SELECT count(*) > 0 FROM trials") == [(True,)]  # the real log beside it imports


def test_sparse_swebench_predictions_are_read_a_bounded_line_at_a_time(tmp_path):
    case, got, wh = _ingest(tmp_path, "swebench_sparse_preds")
    [(line, reason, raw)] = _count(wh, "SELECT line, reason, raw_text FROM quarantine")
    assert line == SWEBENCH_TRIALS + 1 and "longer than the 64 MiB a prediction line may have" in reason
    assert len(raw) == 2000


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    case, got, wh = _ingest(tmp_path, "swebench_yaml_bomb")
    assert got.rc == 2 and "metadata.yaml: a YAML document that expands" in got.err


def test_a_sparse_inspect_json_log_is_refused_in_one_line(tmp_path):
    case, got, wh = _ingest(tmp_path, "inspect_sparse_json")
    assert got.rc == 2 and "inspect log convert --to eval" in got.err


@pytest.mark.parametrize("seed", range(6))
def test_zstd_and_deflate_bombs_are_refused_not_inflated(tmp_path, seed):
    case, got, wh = _ingest(tmp_path, "inspect_bomb", seed)
    assert got.maxrss_mb < 400  # nothing near the bomb's 1 GiB


def test_an_eval_with_a_huge_member_list_is_refused_before_it_is_opened(tmp_path):
    _ingest(tmp_path, "inspect_central_directory")


def test_a_runs_jsonl_line_longer_than_a_block_is_skipped_as_it_is_read(tmp_path):
    case, got, wh = _ingest(tmp_path, "runs_jsonl_sparse")
    reasons = [r for (r,) in _count(wh, "SELECT reason FROM quarantine ORDER BY line")]
    assert "longer than the 1 MiB a runs-jsonl line may have; not parsed" in reasons[0]
    assert "duplicate" in reasons[1]  # the good line after the NULs is read (and repeats line 1)


@pytest.mark.parametrize("seed", [1, 7])  # a quote left open, a sparse line (the rest: test_ingest_review_csv.py)
def test_hostile_review_csv_records_are_quarantined_with_their_line(tmp_path, seed):
    """The review-file shapes of ``make fuzz`` (a huge field, a sparse line, a bare CR, not
    UTF-8, a quote left open), each judged as the foreign files are."""
    case, got, wh = _ingest(tmp_path, "review_csv", seed)
    assert got.rc == 2 and got.maxrss_mb < hostile.RSS_LIMIT_MB


def test_a_million_configurations_are_refused_early_and_summarize_says_why(tmp_path):
    case = hostile.runs_jsonl_configs(tmp_path, random.Random(0), n=1_000_000)
    wh = tmp_path / "wh" / "w.duckdb"
    got, wrong = hostile.judge(case, wh)
    assert wrong == [], "\n".join(wrong)
    assert "more than 10,000 distinct configurations" in got.err and "by line 10,001" in got.err


def test_configurations_with_no_common_task_get_a_clear_refusal_not_no_complete_trials(tmp_path):
    """The root cause of "no complete trials" after the million configurations: each ran its own
    task, so no task is common to them and summarize had no row, and said nothing was there."""
    path = tmp_path / "disjoint.jsonl"
    path.write_text("".join(json.dumps({"model": f"m{i}", "harness": "h", "task_id": f"t{i}", "trial": 0,
                                        "status": "solved"}) + "\n" for i in range(3000)))
    wh = tmp_path / "wh" / "w.duckdb"
    assert hostile.run_measured([str(hostile.TRIALHOUSE), "ingest", str(path), "-w", str(wh)]).rc == 0
    got = hostile.run_measured([str(hostile.TRIALHOUSE), "summarize", "-w", str(wh)])
    assert got.rc == 2 and "no complete trials" not in got.err
    assert "3,000 complete trial(s) in 3,000 configuration(s) match, but no task is common" in got.err


def test_ten_thousand_configurations_load_and_summarize_answers(tmp_path):
    """At the bound the file loads (a stated memory bound: docs/formats.md) and summarize
    gives every configuration its row."""
    case = hostile.runs_jsonl_configs(tmp_path, random.Random(0), n=10_000, tasks=1)
    wh = tmp_path / "wh" / "w.duckdb"
    got = hostile.run_measured([str(hostile.TRIALHOUSE), "ingest", str(case.source), "-w", str(wh)])
    assert got.rc == 0 and got.maxrss_mb < 500
    got = hostile.run_measured([str(hostile.TRIALHOUSE), "summarize", "-w", str(wh), "--json"])
    rows = json.loads(got.out)["rows"]
    assert got.rc == 0 and len(rows) == 10_000 and {r["trials"] for r in rows} == {1}
