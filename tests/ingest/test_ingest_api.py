"""ingest_paths end to end over real files, Parquet partitions and DuckDB views."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import warehouse
from contract.events import dump_event
from contract.stage_events import Usage
from ingest.api import IngestQuarantined, ingest_paths
from warehouse.schema import TABLES

REPO = Path(__file__).resolve().parents[2]


def _frames(wh: Path) -> dict[str, pl.DataFrame]:
    con = warehouse.open(wh, read_only=True)
    try:
        out = {}
        for name in TABLES:
            if name == "ingest_batches":
                continue
            df = con.sql(f"SELECT * FROM {name}").pl().drop("ingest_batch_id")
            out[name] = df.sort(df.columns, nulls_last=True)
        return out
    finally:
        con.close()


def _count(wh: Path, sql: str):
    con = warehouse.open(wh, read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


def test_reingest_unchanged_input_changes_nothing(tmp_path, gen, wh):
    run = tmp_path / "run-1"
    gen.write_jsonl(run / "events.jsonl", gen.run_events())
    first = ingest_paths([run], wh)
    before = _frames(wh)
    batches = _count(wh, "SELECT ingest_batch_id FROM ingest_batches")
    again = ingest_paths([run], wh)
    assert again.batches[0].unchanged and again.batches[0].rows == first.batches[0].rows
    after = _frames(wh)
    for name in before:
        assert_frame_equal(before[name], after[name])
    assert _count(wh, "SELECT ingest_batch_id FROM ingest_batches") == batches
    assert _count(wh, "SELECT count(*) FROM trials") == [(8,)]
    assert _count(wh, "SELECT count(*) FROM events") == [(len(gen.run_events()),)]


def test_partial_then_final_equals_final_only(tmp_path, gen, wh):
    evs = gen.run_events()
    cut = len(evs) - 15  # mid-trial, no run_finished yet
    run = tmp_path / "run-1"
    torn = dump_event(evs[cut]).encode()[:40]
    gen.write_jsonl(run / "events.jsonl", evs[:cut], torn=torn)
    partial = ingest_paths([run], wh)
    assert partial.quarantined == 0
    assert _count(wh, "SELECT status FROM runs") == [("running",)]
    assert _count(wh, "SELECT count(*) FROM trials WHERE NOT complete AND outcome IS NULL") == [(1,)]
    gen.write_jsonl(run / "events.jsonl", evs)  # the run finishes (torn line completed)
    ingest_paths([run], wh)
    only = tmp_path / "only" / "w.duckdb"
    ingest_paths([run], only)
    a, b = _frames(wh), _frames(only)
    for name in a:
        assert_frame_equal(a[name], b[name], check_row_order=True)
    assert _count(wh, "SELECT status FROM runs") == [("completed",)]
    assert _count(wh, "SELECT count(*) FROM ingest_batches") == [(2,)]


def test_incomplete_trial_is_not_failed_and_resume_uses_last_start(tmp_path, gen, wh):
    s = gen.Seq("run-r")
    evs = [gen.run_started(s, variants=("base",), cases=("c1",), repetitions=1)]
    evs += gen.trial_events(s, "t1", "c1", "base", 1, outcome=None)  # interrupted
    evs += gen.trial_events(s, "t2", "c1", "base", 1, outcome=None)  # never finishes
    evs += gen.trial_events(s, "t1", "c1", "base", 1, outcome="accepted")  # resumed
    run = tmp_path / "run-r"
    gen.write_jsonl(run / "events.jsonl", evs)
    res = ingest_paths([run], wh)
    rows = _count(wh, "SELECT trial_id, complete, outcome FROM trials ORDER BY trial_id")
    assert rows == [("t1", True, "accepted"), ("t2", False, None)]
    # only events after t1's last start count: one stage, one grading for t1
    assert _count(wh, "SELECT count(*) FROM stages WHERE trial_id = 't1'") == [(1,)]
    assert _count(wh, "SELECT count(*) FROM gradings WHERE trial_id = 't1'") == [(1,)]
    notes = " ".join(res.batches[0].notes)
    assert "incomplete, not failed" in notes and "only the last start counts" in notes
    assert _count(wh, "SELECT valid FROM trial_facts WHERE trial_id = 't2'") == [(False,)]


def test_cost_reported_priced_or_null(tmp_path, gen, wh):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"as_of": "2026-03-01", "models": {
        "model-base": {"input_per_mtok": 2.0, "output_per_mtok": 10.0, "effective_from": "2026-01-01"}}}))
    s = gen.Seq("run-c")
    evs = [gen.run_started(s, variants=("base", "cand"), cases=("c1",), repetitions=1)]
    evs += gen.trial_events(s, "reported", "c1", "base", 1, usage=Usage(input_tokens=10, output_tokens=10, cost_usd=0.5))
    evs += gen.trial_events(s, "priced", "c1", "base", 1, usage=Usage(input_tokens=1_000_000, output_tokens=100_000))
    evs += gen.trial_events(s, "noprice", "c1", "cand", 1, usage=Usage(input_tokens=1000, output_tokens=10))
    evs += gen.trial_events(s, "notokens", "c1", "base", 1, usage=Usage(output_tokens=10))
    run = tmp_path / "run-c"
    gen.write_jsonl(run / "events.jsonl", evs)
    ingest_paths([run], wh, prices=prices)  # an ingest error is a failure, never a skip
    rows = dict((r[0], r[1:]) for r in _count(wh, "SELECT trial_id, cost_usd, cost_source FROM trials"))
    assert rows["reported"] == (0.5, "reported")
    assert rows["priced"][1] == "priced" and rows["priced"][0] == pytest.approx(2.0 + 1.0)
    assert rows["noprice"] == (None, None)
    assert rows["notokens"] == (None, None)
    assert _count(wh, "SELECT prices_as_of FROM runs") == [("2026-03-01",)]


def test_quarantine_is_written_then_reported(tmp_path, gen, wh):
    run = tmp_path / "run-q"
    gen.write_jsonl(run / "events.jsonl", gen.run_events("run-q"), extra_lines=[b"{oops"])
    with pytest.raises(IngestQuarantined) as info:
        ingest_paths([run], wh)
    assert info.value.result.quarantined == 1
    assert _count(wh, "SELECT line, reason LIKE 'invalid JSON%' FROM quarantine") == [(len(gen.run_events()) + 1, True)]
    assert _count(wh, "SELECT count(*) FROM trials") == [(8,)]
    ok = ingest_paths([run], wh, allow_quarantine=True)
    assert ok.quarantined == 1 and ok.batches[0].unchanged


def test_event_from_another_run_is_quarantined(tmp_path, gen, wh):
    evs = gen.run_events("run-a")
    stray = gen.run_events("run-b")[5].model_copy(update={"seq": 99_999})
    run = tmp_path / "run-a"
    gen.write_jsonl(run / "events.jsonl", evs, extra_lines=[dump_event(stray).encode()])
    res = ingest_paths([run], wh, allow_quarantine=True)
    assert res.quarantined == 1
    assert _count(wh, "SELECT reason FROM quarantine")[0][0].startswith("run_id 'run-b' differs")


def test_cli_ingest_exit_codes_and_lock(tmp_path, gen, wh):
    run = tmp_path / "run-1"
    gen.write_jsonl(run / "events.jsonl", gen.run_events())
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "trialhouse", "ingest", str(run), "--warehouse", str(wh)]
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from pathlib import Path
            from warehouse.db import write_lock
            with write_lock(Path({str(wh)!r})):
                print("locked", flush=True)
                sys.stdin.readline()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        locked = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert locked.returncode == 3
    assert "warehouse is locked" in locked.stderr and "Traceback" not in locked.stderr
    done = subprocess.run(cmd + ["--json"], capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["totals"]["rows"]["trials"] == 8 and out["totals"]["quarantined"] == 0
    missing = subprocess.run(cmd[:4] + [str(tmp_path / "nope"), "--warehouse", str(wh)],
                             capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


def test_late_line_for_a_finished_trial_gives_the_ordered_result(tmp_path, gen, wh, trial_ids_mode):
    """A file needing global order (late line of a finished trial) ends like the ordered file."""
    evs = gen.run_events("run-o")
    ordered = tmp_path / "ordered" / "events.jsonl"
    gen.write_jsonl(ordered, evs)
    late = next(i for i, e in enumerate(evs) if e.event == "grading")
    shuffled = evs[:late] + evs[late + 1 :] + [evs[late]]
    messy = tmp_path / "messy" / "events.jsonl"
    gen.write_jsonl(messy, shuffled)
    other = tmp_path / "o2" / "w.duckdb"
    ingest_paths([ordered], wh)
    ingest_paths([messy], other)
    a, b = _frames(wh), _frames(other)
    for name in a:
        drop = [c for c in ("line", "source_file", "source_path") if c in a[name].columns]
        x, y = a[name].drop(drop), b[name].drop(drop)
        assert_frame_equal(x.sort(x.columns, nulls_last=True), y.sort(y.columns, nulls_last=True))


def test_foreign_format_lands_beside_our_run_and_is_idempotent(tmp_path, gen, wh):
    """Dispatch to ingest.formats (runs-jsonl) + our run in one warehouse; re-ingest changes nothing."""
    runs = tmp_path / "export.jsonl"
    lines = [
        {"model": "m1", "harness": "h1", "harness_version": "1", "task_id": f"t{i}", "trial": 0,
         "status": "solved" if i % 2 else "failed", "input_tokens": 100, "output_tokens": 10, "steps": 3}
        for i in range(4)
    ]
    runs.write_text("\n".join(json.dumps(x) for x in lines) + "\n" + "{broken\n")
    gen.write_jsonl(tmp_path / "run-1" / "events.jsonl", gen.run_events())
    res = ingest_paths([tmp_path / "run-1", runs], wh, allow_quarantine=True)
    fmts = sorted(b.source_format for b in res.batches)
    assert fmts == ["runs-jsonl", "trialhouse"]
    assert res.quarantined == 1
    assert _count(wh, "SELECT source_format, count(*) FROM trial_facts GROUP BY 1 ORDER BY 1") == [
        ("runs-jsonl", 4), ("trialhouse", 8)]
    n_batches = _count(wh, "SELECT count(*) FROM ingest_batches")
    again = ingest_paths([tmp_path / "run-1", runs], wh, allow_quarantine=True)
    assert all(b.unchanged for b in again.batches)
    assert _count(wh, "SELECT count(*) FROM ingest_batches") == n_batches
