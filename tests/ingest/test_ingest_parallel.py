"""The two-process split gives exactly the one-process result, or declines and falls back."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import warehouse
from contract.events import dump_event
from contract.files import file_sha256
from ingest import load, parallel
from ingest.api import ingest_paths
from ingest.file_halves import split_point
from ingest.parallel import ingest_run_split
from warehouse import db
from warehouse.schema import TABLES


def _frames(wh: Path) -> dict[str, pl.DataFrame]:
    con = warehouse.open(wh, read_only=True)
    try:
        out = {}
        for name in TABLES:
            df = con.sql(f"SELECT * FROM {name}").pl().drop("ingest_batch_id")  # noqa: S608
            if name == "ingest_batches":
                df = df.drop("ingested_at")
            out[name] = df.sort(df.columns, nulls_last=True)
        return out
    finally:
        con.close()


def _both(tmp_path: Path, path: Path, monkeypatch, **kw) -> tuple[dict, dict]:
    """(one-process frames, split frames) of the same file."""
    one, two = tmp_path / "one" / "w.duckdb", tmp_path / "two" / "w.duckdb"
    ingest_paths([path], one, allow_quarantine=True, **kw)
    monkeypatch.setattr(load, "PARALLEL_MIN_BYTES", 0)
    ingest_paths([path], two, allow_quarantine=True, **kw)
    return _frames(one), _frames(two)


def _assert_same(a: dict, b: dict) -> None:
    for name in a:
        assert_frame_equal(a[name], b[name], check_row_order=False), name


def _run(gen, tmp_path: Path, n_rep: int = 6, *, finished: bool = True) -> list:
    return gen.run_events("run-p", finished=finished, cases=("c1", "c2", "c3"), repetitions=n_rep)


def test_split_equals_one_process_and_really_splits(tmp_path, gen, monkeypatch):
    evs = _run(gen, tmp_path)
    bad = b'{"schema_version": 1, "event": "flag", "seq": "x"}'
    lines = [dump_event(e).encode() for e in evs]
    at = len(lines) * 3 // 4
    lines.insert(at, bad)  # a quarantined line in the second half
    p = tmp_path / "run-p" / "events.jsonl"
    p.parent.mkdir()
    p.write_bytes(b"\n".join(lines) + b"\n" + lines[-1][:20])  # and a torn tail
    a, b = _both(tmp_path, p, monkeypatch)
    _assert_same(a, b)
    (q,) = b["quarantine"].iter_rows(named=True)
    assert q["line"] == at + 1
    assert b["events"].height == len(evs)
    # The split path itself accepts this file (it did not fall back).
    wh = tmp_path / "direct" / "w.duckdb"
    files = [{"path": str(p), "sha256": "", "bytes": p.stat().st_size}]
    res = ingest_run_split(wh, p, files, None)
    assert res is not None and res.rows["events"] == len(evs)
    parts = list((db.parquet_root(wh) / "events").glob("run_id=run-p/*.parquet"))
    assert len(parts) == 2
    assert files[0]["sha256"] == file_sha256(p)[0]


def test_trial_straddling_the_split_is_merged(tmp_path, gen, monkeypatch):
    evs = _run(gen, tmp_path, 1)
    lines = [dump_event(e).encode() for e in evs]
    p = tmp_path / "run-p" / "events.jsonl"
    p.parent.mkdir()
    p.write_bytes(b"\n".join(lines) + b"\n")
    mid = split_point(p, p.stat().st_size)
    before = p.read_bytes()[:mid].count(b"\n")
    tid = evs[before].trial_id
    assert tid is not None and evs[before - 1].trial_id == tid, "split should fall inside a trial"
    a, b = _both(tmp_path, p, monkeypatch)
    _assert_same(a, b)
    row = b["trials"].filter(pl.col("trial_id") == tid).row(0, named=True)
    assert row["complete"] and row["outcome"] is not None


@pytest.mark.parametrize("case", ["out_of_order", "duplicate", "late_line", "no_run_started_first", "resumed"])
def test_split_declines_what_it_cannot_merge_and_result_is_unchanged(tmp_path, gen, monkeypatch, case, trial_ids_mode):
    evs = _run(gen, tmp_path)
    lines = [dump_event(e).encode() for e in evs]
    if case == "out_of_order":
        lines.append(lines.pop(3))  # an early seq at the very end
    elif case == "duplicate":
        lines.append(lines[5])
    elif case == "late_line":
        i = next(i for i, e in enumerate(evs) if e.event == "grading")
        lines.append(lines.pop(i))
    elif case == "no_run_started_first":
        lines.insert(0, lines.pop(1))
    elif case == "resumed":
        again = json.loads(lines[0])
        again["seq"] = evs[-1].seq + 1
        again["resumed"] = True
        lines.append(json.dumps(again).encode())
    p = tmp_path / "run-p" / "events.jsonl"
    p.parent.mkdir()
    p.write_bytes(b"\n".join(lines) + b"\n")
    answers = []

    def spy(*args):
        answers.append(ingest_run_split(*args))
        return answers[-1]

    monkeypatch.setattr(parallel, "ingest_run_split", spy)
    a, b = _both(tmp_path, p, monkeypatch)
    assert answers == [None]  # the split declined; the one-process path wrote the result
    _assert_same(a, b)
    staged = [f.name for f in db.parquet_root(tmp_path / "two" / "w.duckdb").rglob("*.parquet") if f.is_file()]
    assert staged and not [n for n in staged if n.startswith(".stage-")], "a declined split leaves no staged files"
