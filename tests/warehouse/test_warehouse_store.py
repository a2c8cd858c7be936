"""Warehouse storage: migrations, read-only opening, moved files, Parquet round trips, docs drift."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import warehouse
from warehouse import db, migrations
from warehouse.schema import TABLES, table_from_rows
from warehouse.tables_doc import render

REPO = Path(__file__).resolve().parents[2]


def test_migrations_are_recorded_and_pending_is_read_only(tmp_path):
    wh = tmp_path / "w.duckdb"
    con = warehouse.open(wh)
    assert migrations.applied(con) == [name for name, _ in migrations.MIGRATIONS]
    assert migrations.pending(con) == [] and migrations.migrate(con) == []
    con.execute("DELETE FROM _migrations WHERE name = '0002_trial_facts_view'")
    con.close()
    ro = warehouse.open(wh, read_only=True)
    assert migrations.pending(ro) == ["0002_trial_facts_view"]
    assert migrations.pending(ro) == ["0002_trial_facts_view"]  # unchanged by asking
    ro.close()
    con = warehouse.open(wh)  # a writer applies it
    assert migrations.pending(con) == []
    assert con.execute("SELECT count(*) FROM trial_facts").fetchone() == (0,)


def _trial_rows(n: int, batch: str) -> list[dict]:
    return [
        {"run_id": "r1", "ingest_batch_id": batch, "trial_id": f"t{i}", "source_format": "trialhouse",
         "config_id": "k", "case_id": f"c{i % 3}", "repetition": 1, "complete": True, "simulated": False,
         "outcome": "accepted", "cost_usd": None, "input_tokens": i * 10,
         "started_at": datetime(2026, 1, 1, tzinfo=UTC)}
        for i in range(n)
    ]


def test_open_read_only_and_after_move(tmp_path):
    wh = tmp_path / "a" / "w.duckdb"
    with db.write_lock(wh):
        db.replace_run(wh, "r1", {"trials": table_from_rows("trials", _trial_rows(5, "b1"))})
    warehouse.open(wh).close()
    shutil.move(tmp_path / "a", tmp_path / "b")
    moved = tmp_path / "b" / "w.duckdb"
    con = warehouse.open(moved, read_only=True)
    assert con.execute("SELECT count(*), sum(input_tokens) FROM trials").fetchone() == (5, 100)
    assert con.execute("SELECT count(*) FROM trial_facts").fetchone() == (5,)


def test_read_only_open_shadows_only_the_views_whose_files_changed(tmp_path):
    wh = tmp_path / "a" / "w.duckdb"
    with db.write_lock(wh):
        db.replace_run(wh, "r1", {"trials": table_from_rows("trials", _trial_rows(5, "b1"))})
    warehouse.open(wh).close()  # the writer stores views and their SQL

    def temp_views(path):
        con = warehouse.open(path, read_only=True)
        names = {r[0] for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal").fetchall()}
        return con, names

    con, names = temp_views(wh)
    assert names == set()  # nothing changed since the writer: the stored views serve
    con.close()
    with db.write_lock(wh):  # a table gets its first files, without a writer's open
        db.replace_run(wh, "r1", {"flags": table_from_rows("flags", [
            {"run_id": "r1", "trial_id": "t0", "kind": "k", "ingest_batch_id": "b1"}])})
    con, names = temp_views(wh)
    assert names == {"flags"}
    assert con.execute("SELECT count(*) FROM flags").fetchone() == (1,)
    con.close()
    shutil.move(tmp_path / "a", tmp_path / "b")  # every stored path is now wrong
    con, names = temp_views(tmp_path / "b" / "w.duckdb")
    assert {"trials", "task_rollup", "flags"} <= names
    assert con.execute("SELECT count(*) FROM trials").fetchone() == (5,)
    assert con.execute("SELECT sum(trials) FROM task_rollup").fetchone() == (5,)
    con.close()


_row = st.fixed_dictionaries({
    "trial_id": st.text(min_size=1, max_size=8),
    "case_id": st.text(min_size=1, max_size=8),
    "repetition": st.integers(1, 10),
    "complete": st.booleans(),
    "simulated": st.booleans(),
    "outcome": st.none() | st.sampled_from(["accepted", "target_failed", "infra_error"]),
    "input_tokens": st.none() | st.integers(0, 2**62),
    "cost_usd": st.none() | st.floats(0, 1e9, allow_nan=False),
    # hypothesis takes naive bounds and attaches the timezone itself
    "started_at": st.none() | st.datetimes(datetime(2000, 1, 1), datetime(2100, 1, 1), timezones=st.just(UTC)),  # noqa: DTZ001
})


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_row, max_size=20))
def test_rows_parquet_duckdb_round_trip(tmp_path_factory, rows):
    wh = tmp_path_factory.mktemp("rt") / "w.duckdb"
    full = [{**r, "run_id": "r", "ingest_batch_id": "b", "source_format": "x", "config_id": "k",
             "started_at": r["started_at"] and r["started_at"].replace(microsecond=r["started_at"].microsecond)}
            for r in rows]
    table = table_from_rows("trials", full)
    with db.write_lock(wh):
        db.replace_run(wh, "r", {"trials": table})
    con = warehouse.open(wh)
    got = con.sql("SELECT * FROM trials").pl()
    con.close()
    expect = pl.from_arrow(table).sort(["trial_id", "case_id", "repetition"])
    got = got.select(expect.columns).sort(["trial_id", "case_id", "repetition"]).with_columns(
        pl.col("started_at").dt.convert_time_zone("UTC"))  # DuckDB names it Etc/UTC
    assert_frame_equal(got, expect, check_dtypes=False)
    assert got.height == len(rows)


def test_replace_run_is_per_run(tmp_path):
    wh = tmp_path / "w.duckdb"
    with db.write_lock(wh):
        db.replace_run(wh, "r1", {"trials": table_from_rows("trials", _trial_rows(3, "b1"))})
        db.replace_run(wh, "r2", {"trials": table_from_rows("trials", [{**r, "run_id": "r2"} for r in _trial_rows(2, "b2")])})
        db.replace_run(wh, "r1", {"trials": table_from_rows("trials", _trial_rows(1, "b3"))})
    con = warehouse.open(wh)
    assert con.sql("SELECT run_id, count(*), min(ingest_batch_id) FROM trials GROUP BY 1 ORDER BY 1").fetchall() == [
        ("r1", 1, "b3"), ("r2", 2, "b2")]
    assert isinstance(TABLES["trials"], pa.Schema)


def test_tables_doc_is_current():
    committed = (REPO / "docs" / "tables.md").read_text(encoding="utf-8")
    assert committed == render(), "docs/tables.md drifted: run `trialhouse tables --markdown > docs/tables.md`"
    for name in TABLES:
        assert f"### `{name}`" in committed


def test_sql_and_tables_commands(tmp_path):
    wh = tmp_path / "w.duckdb"
    with db.write_lock(wh):
        db.replace_run(wh, "r1", {"trials": table_from_rows("trials", _trial_rows(4, "b1"))})
    warehouse.open(wh).close()
    run = [sys.executable, "-m", "trialhouse"]
    out = subprocess.run(run + ["sql", "-w", str(wh), "--json",
                                "SELECT case_id, count(*) AS n FROM trials GROUP BY 1 ORDER BY 1"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert pl.read_json(out.stdout.encode()).to_dicts() == [
        {"case_id": "c0", "n": 2}, {"case_id": "c1", "n": 1}, {"case_id": "c2", "n": 1}]
    csv = subprocess.run(run + ["sql", "-w", str(wh), "--csv", "SELECT trial_id FROM trials ORDER BY 1"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert csv.stdout.splitlines() == ["trial_id", "t0", "t1", "t2", "t3"]
    bad = subprocess.run(run + ["sql", "-w", str(wh), "SELEC nonsense"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "SQL error" in bad.stderr and "Traceback" not in bad.stderr
    tabs = subprocess.run(run + ["tables", "-w", str(wh), "--json"], capture_output=True, text=True, cwd=REPO, timeout=60)
    counts = {r["name"]: r["rows"] for r in pl.read_json(tabs.stdout.encode()).to_dicts()}
    assert counts["trials"] == 4 and counts["runs"] == 0 and counts["trial_facts"] == 4
    absent = subprocess.run(run + ["tables", "-w", str(tmp_path / "none.duckdb")], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert absent.returncode == 2 and "no warehouse here" in absent.stderr


def test_rows_gathered_in_chunks_make_the_table_the_rows_make_at_once(monkeypatch):
    """``TableRows`` converts a chunk at a time (by rows, or by text for long notes) and stamps
    the constant columns: the table is the one ``table_from_rows`` builds from all the dicts."""
    from warehouse.schema import TableRows

    monkeypatch.setattr(TableRows, "CHUNK_ROWS", 3)
    monkeypatch.setattr(TableRows, "CHUNK_TEXT", 50)
    rows = [{"trial_id": f"t{i}", "kind": "k", "detail": "n" * (40 if i % 4 == 0 else 1)}
            for i in range(11)]
    gathered = TableRows("flags")
    for r in rows:
        gathered.append(dict(r))
    assert len(gathered) == 11
    got = gathered.table(run_id="r1", ingest_batch_id="b1")
    assert got.column("trial_id").num_chunks > 3  # it did convert in parts
    whole = table_from_rows("flags", [{**r, "run_id": "r1", "ingest_batch_id": "b1"} for r in rows])
    assert got.equals(whole.cast(got.schema)) and got.schema == TABLES["flags"]
    assert TableRows("flags").table(run_id="r1").num_rows == 0
    with pytest.raises(KeyError, match=r"flags row 0: unknown columns \['nope'\]"):
        TableRows("flags").append({"trial_id": "t", "nope": 1})
