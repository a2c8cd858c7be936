"""Review and annotation files are read a bounded record at a time, each bad record quarantined
with its line (issue 29, item 6; docs/security.md, "Review and CSV files"): a 200 KB field, a
bare carriage return, bytes that are not UTF-8, a 256 MiB line (peak RSS measured from a small
parent), an over-long JSONL line; the good records around them are imported."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

import warehouse
from ingest.annotations import import_annotations
from ingest.api import IngestQuarantined, ingest_paths
from ingest.csv_records import RECORD_MAX, csv_records

_path = Path(__file__).resolve().parents[1] / "fuzz" / "hostile_files.py"
_spec = importlib.util.spec_from_file_location("hostile_files", _path)
hostile = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("hostile_files", hostile)
_spec.loader.exec_module(hostile)

HEADER = "trial_id,reviewer,decision,reason_code,note\n"


def _q(wh, sql):
    con = warehouse.open(wh, read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def loaded(tmp_path, gen, wh):
    gen.write_jsonl(tmp_path / "run-1" / "events.jsonl", gen.run_events("run-1"))
    ingest_paths([tmp_path / "run-1"], wh)
    return wh


def _review(tid: str, note: str = "ok") -> str:
    return f"{tid},alice,accept,looked,{note}\n"


def _import(path: Path, wh: Path):
    got = hostile.run_measured([str(hostile.TRIALHOUSE), "review", "import", str(path), "-w", str(wh)])
    assert "Traceback" not in got.err, got.err
    return got


def test_bad_csv_records_are_quarantined_with_their_line_and_the_rest_imported(tmp_path, loaded):
    path = tmp_path / "reviews.csv"
    path.write_bytes((
        HEADER + _review("run-1-t001")                                  # line 2
        + _review("run-1-t002", "x" * 200_000)                          # line 3: a 200 KB field
        + _review("run-1-t003", '"a note\nover two lines"')            # lines 4-5: one record
        + "run-1-t004,alice,accept,looked,a\rb\n"                       # line 6: a bare CR
        + _review("run-1-t005")                                         # line 7
    ).encode() + b"run-1-t006,alice,accept,looked,caf\xe9\n" + _review("run-1-t007").encode())  # 8, 9
    got = _import(path, loaded)
    assert got.rc != 0 and len([ln for ln in got.err.splitlines() if ln.strip()]) == 1, got.err
    kept = _q(loaded, "SELECT trial_id, source_line FROM reviews ORDER BY 1")
    assert kept == [("run-1-t001", 2), ("run-1-t003", 4), ("run-1-t005", 7), ("run-1-t007", 9)]
    q = dict(_q(loaded, "SELECT line, reason FROM quarantine WHERE run_id LIKE 'reviews-%'"))
    assert sorted(q) == [3, 6, 8]
    assert "field larger than field limit (131072)" in q[3]
    assert "new-line character seen in unquoted field" in q[6]
    assert q[8] == "not UTF-8 text (byte 35 of line 8)"
    assert _q(loaded, "SELECT max(length(raw_text)) FROM quarantine") <= [(4096,)]


def test_a_256_mib_line_is_skipped_as_it_is_read_within_500_mb(tmp_path, loaded):
    path = tmp_path / "reviews.csv"
    path.write_text(HEADER + _review("run-1-t001"))
    with path.open("r+b") as f:  # a sparse run of NULs: one line of 256 MiB, then a good record
        f.truncate(path.stat().st_size + 256 * 1024 * 1024)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + _review("run-1-t002").encode())
    got = _import(path, loaded)
    assert got.maxrss_mb < hostile.RSS_LIMIT_MB, got.maxrss_mb
    assert _q(loaded, "SELECT trial_id FROM reviews ORDER BY 1") == [("run-1-t001",), ("run-1-t002",)]
    [(line, reason, raw)] = _q(loaded, "SELECT line, reason, raw_text FROM quarantine")
    assert line == 3 and reason == f"a record longer than the {RECORD_MAX:,} bytes a record may have; not parsed"
    assert len(raw) == 4096


def test_a_quoted_field_left_open_stops_at_the_record_bound(tmp_path, loaded):
    """A stray quote swallows the lines after it into one field: the record is cut at 1 MiB,
    quarantined at its first line, and reading goes on after the line that passed the bound."""
    path = tmp_path / "reviews.csv"
    filler = "".join(_review(f"run-1-t{i:03d}") for i in range(1, 9)) * 1000  # 8,000 lines, 280 KB
    path.write_text(HEADER + _review("run-1-t001") + 'run-1-t002,alice,accept,looked,"open\n' + filler)
    got = _import(path, loaded)
    assert got.rc != 0 and got.maxrss_mb < hostile.RSS_LIMIT_MB
    q = _q(loaded, "SELECT line, reason FROM quarantine ORDER BY line LIMIT 1")
    assert q[0][0] == 3 and ("field larger than field limit" in q[0][1] or "a record longer than" in q[0][1])
    assert _q(loaded, "SELECT source_line FROM reviews ORDER BY 1 LIMIT 1") == [(2,)]


def test_an_over_long_jsonl_review_is_quarantined_with_its_line(tmp_path, loaded):
    path = tmp_path / "reviews.jsonl"
    good = {"trial_id": "run-1-t001", "reviewer": "alice", "decision": "accept", "reason_code": "x"}
    path.write_text("\n".join([json.dumps(good), json.dumps({**good, "note": "y" * (RECORD_MAX + 10)}),
                               json.dumps({**good, "trial_id": "run-1-t002"})]) + "\n")
    _import(path, loaded)
    assert _q(loaded, "SELECT trial_id FROM reviews ORDER BY 1") == [("run-1-t001",), ("run-1-t002",)]
    assert _q(loaded, "SELECT line FROM quarantine") == [(2,)]


def test_an_annotation_csv_with_a_huge_field_quarantines_that_line(tmp_path, loaded):
    path = tmp_path / "cats.csv"
    path.write_text("trial_id,category,note\nrun-1-t001,implementation,ok\n"
                    f"run-1-t002,implementation,{'z' * 200_000}\nrun-1-t003,verification,\n")
    with pytest.raises(IngestQuarantined) as info:
        import_annotations(path, loaded, annotator="carol")
    assert info.value.result.quarantined == 1
    [(line, reason)] = _q(loaded, "SELECT line, reason FROM quarantine WHERE run_id LIKE 'annotations-%'")
    assert line == 3 and "field larger than field limit" in reason
    assert _q(loaded, "SELECT count(*) FROM judgments WHERE kind = 'failure_category'") == [(2,)]


def test_a_header_that_cannot_be_read_is_one_clear_error(tmp_path):
    path = tmp_path / "h.csv"
    path.write_bytes(b"trial_id,\xff\n")
    with path.open("rb") as f, pytest.raises(ValueError, match="line 1 .the header.: not UTF-8"):
        csv_records(f)


@pytest.mark.parametrize(("n", "note"), [(50_000, 1200), (50_001, 10), (500, 130_000), (520, 130_000)])
def test_a_file_past_the_records_bound_is_refused_and_one_at_it_loads_within_500_mb(tmp_path, loaded, n, note):
    """Every record is held (a review or a quarantined row) until the file is written: at the
    bounds (50,000 records; 64 MiB of them: 500 reviews with a 130 KB note) the import stays
    under 500 MB, and one record past either is refused in one line, nothing written."""
    from ingest.csv_records import RECORDS_MAX, TEXT_MAX

    path = tmp_path / "reviews.csv"
    trial = (lambda k: f"ghost-{k}") if note < 1000 else (lambda k: f"run-1-t{k % 8 + 1:03d}")
    with path.open("w") as f:
        f.write(HEADER)
        for i in range(0, n, 10_000):
            f.write("".join(_review(trial(k), "n" * note) for k in range(i, min(i + 10_000, n))))
    over = n > RECORDS_MAX or path.stat().st_size > TEXT_MAX
    got = _import(path, loaded)
    assert got.maxrss_mb < hostile.RSS_LIMIT_MB, got.maxrss_mb
    stored = _q(loaded, "SELECT (SELECT count(*) FROM quarantine WHERE run_id LIKE 'reviews-%') "
                        "+ (SELECT count(*) FROM reviews)")
    if over:
        assert got.err.startswith(f"trialhouse: {path}: more than {RECORDS_MAX:,} records or 64 MiB of them (by line ")
        assert got.err.strip().endswith("split the file and import the parts") and stored == [(0,)]
    else:
        assert stored == [(n,)]


def test_the_bounds_count_records_not_lines_nor_blank_ones():
    import io

    from ingest.csv_records import RECORDS_MAX, TooManyRecords, jsonl_records

    at = b'{"a": 1}\n\n' * RECORDS_MAX  # a blank line after each record
    assert sum(1 for _ in jsonl_records(io.BytesIO(at))) == RECORDS_MAX
    with pytest.raises(TooManyRecords, match=f"by line {2 * RECORDS_MAX + 1:,}"):
        list(jsonl_records(io.BytesIO(at + b'{"a": 2}\n')))
    names, records = csv_records(io.BytesIO(b"a,b\n" + b'1,"two\nlines"\n' * RECORDS_MAX))
    assert names == ["a", "b"] and [r.line for r in records][-1] == 2 * RECORDS_MAX
