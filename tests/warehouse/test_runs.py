"""Runs as managed records: listed, invalidated (kept, left out everywhere), restored, deleted;
files with no valid event create no run."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import warehouse
from ingest.api import IngestQuarantined, ingest_paths
from runner.run import run_trials
from warehouse import db
from warehouse.errors import WarehouseError
from warehouse.runs import delete_run, invalidate_run, list_runs, restore_run

_spec = importlib.util.spec_from_file_location(
    "runner_corpus_kit", Path(__file__).resolve().parents[1] / "runner" / "conftest.py")
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "250"})


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, list[str]]:
    tmp = tmp_path_factory.mktemp("runs")
    root = tmp / "corpus"
    root.mkdir()
    m = kit.make_corpus(root)
    dirs = [run_trials(m, tmp / f"run{i}", progress=False).run_dir for i in range(2)]
    wh = tmp / "wh" / "w.duckdb"
    ingest_paths(dirs, wh)
    ids = [json.loads((d / "report.json").read_text())["run_id"] for d in dirs]
    return wh, ids


def count(wh: Path, sql: str) -> int:
    with warehouse.open(wh, read_only=True) as con:
        return con.execute(sql).fetchall()[0][0]


def test_an_invalidated_run_is_kept_listed_and_left_out_of_every_view(two_runs):
    wh, (keep, drop) = two_runs
    assert count(wh, "SELECT count(*) FROM trials") == 4
    invalidate_run(wh, drop, "the grader had a bug")
    try:
        assert count(wh, "SELECT count(*) FROM trials") == 2
        for table in ("events", "gradings", "stages", "cases", "task_rollup", "config_rollup"):
            assert count(wh, f"SELECT count(*) FROM {table} WHERE run_id = '{drop}'") == 0, table
        assert count(wh, "SELECT count(*) FROM runs") == 2  # the registry shows it
        records = {r.run_id: r for r in list_runs(wh)}
        assert records[drop].invalidated == "the grader had a bug" and records[drop].trials == 2
        assert records[keep].invalidated is None
        with warehouse.open(wh, read_only=True) as con:
            db.include_invalidated(con)
            assert con.execute("SELECT count(*) FROM trials").fetchall()[0][0] == 4
        listing = cli("runs", "-w", str(wh))
        assert "INVALIDATED: the grader had a bug" in listing.stdout and "1 invalidated" in listing.stdout
        summary = json.loads(cli("summarize", "-w", str(wh), "--json").stdout)
        assert drop not in json.dumps(summary)
    finally:
        restore_run(wh, drop)
    assert count(wh, "SELECT count(*) FROM trials") == 4


def test_reingesting_an_invalidated_run_keeps_it_invalidated(two_runs, tmp_path):
    wh, (_keep, drop) = two_runs
    invalidate_run(wh, drop, "kept out")
    try:
        run_dir = Path(count(wh, f"SELECT any_value(source_path) FROM runs WHERE run_id = '{drop}'")).parent
        (run_dir / "events.jsonl").write_bytes((run_dir / "events.jsonl").read_bytes())  # same bytes
        ingest_paths([run_dir], wh)
        assert {r.run_id: r.invalidated for r in list_runs(wh)}[drop] == "kept out"
    finally:
        restore_run(wh, drop)


def test_invalidate_needs_a_reason_and_a_known_run(two_runs):
    wh, (keep, _drop) = two_runs
    with pytest.raises(WarehouseError, match="needs --reason"):
        invalidate_run(wh, keep, "   ")
    with pytest.raises(WarehouseError, match="no run 'nope'"):
        invalidate_run(wh, "nope", "x")
    res = cli("runs", "invalidate", keep, "-w", str(wh))
    assert res.returncode == 2 and "--reason" in res.stderr and "Traceback" not in res.stderr
    res = cli("runs", "delete", "no-such-run", "-w", str(wh))
    assert res.returncode == 2 and "no run 'no-such-run'" in res.stderr and "Traceback" not in res.stderr


def test_delete_removes_every_partition_of_the_run(two_runs, tmp_path):
    wh, ids = two_runs
    import shutil

    copy = tmp_path / "wh" / "w.duckdb"
    shutil.copytree(wh.parent, copy.parent)
    delete_run(copy, ids[1])
    root = db.parquet_root(copy)
    assert not list(root.glob(f"*/run_id={ids[1]}")), "a partition of the deleted run is left"
    assert count(copy, "SELECT count(*) FROM trials") == 2
    assert [r.run_id for r in list_runs(copy)] == [ids[0]]


@pytest.mark.parametrize("content", [b"", b"hello\nworld\n", bytes(range(256)) * 4])
def test_a_file_with_no_valid_event_creates_no_run(tmp_path, content):
    src = tmp_path / "junk"
    src.mkdir()
    (src / "events.jsonl").write_bytes(content)
    wh = tmp_path / "wh" / "w.duckdb"
    with pytest.raises(IngestQuarantined):
        ingest_paths([src], wh)
    assert list_runs(wh) == []
    with warehouse.open(wh, read_only=True) as con:
        reasons = [r[0] for r in con.execute("SELECT reason FROM quarantine").fetchall()]
    assert any("no valid event" in r for r in reasons)
    res = cli("ingest", str(src), "-w", str(tmp_path / "wh2" / "w.duckdb"))
    assert res.returncode != 0 and "Traceback" not in res.stderr
