"""The block reader against the line-at-a-time rules: small blocks, CRLF, long lines mid-block,
duplicate detection by byte offset across blocks, and exact timestamp columns."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pytest

from ingest import read as rd
from ingest.normalize import ts_array
from ingest.read import ReadStats, read_events
from runner import events as ev


def _line(e) -> bytes:
    return ev.dump_event(e).encode()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 700 bytes and a 3000-byte line limit: every boundary case in a tiny file."""
    monkeypatch.setattr(rd, "_BLOCK", 700)
    monkeypatch.setattr(rd, "MAX_LINE_BYTES", 3000)
    monkeypatch.setattr(rd, "_CHUNK", 256)
    monkeypatch.setattr(rd._blocks, "__defaults__", (700,))


def test_small_blocks_crlf_long_lines_and_duplicates(tmp_path, gen, small_blocks):
    evs = gen.run_events()
    lines = [_line(e) for e in evs]
    long_mid = b'{"pad": "' + b"y" * 1500 + b'"}'  # fits a block pair, over no limit: bad JSON shape
    too_long = b'{"pad": "' + b"z" * 5000 + b'"}'  # over the (patched) limit
    body = [lines[0] + b"\r", *lines[1:6], too_long, *lines[6:12], long_mid, *lines[12:], lines[3], lines[8]]
    p = tmp_path / "events.jsonl"
    data = b"\n".join(body) + b"\n"
    p.write_bytes(data)
    stats = ReadStats(p)
    got = list(read_events(p, stats))
    assert [r.event for r in got] == evs
    assert got[0].raw == lines[0]  # CR stripped
    assert [r.line for r in got][6] == 8  # after the over-long line 7
    reasons = {q.line: q.reason for q in stats.quarantine}
    assert "over the 3000-byte limit" in reasons[7]
    assert 14 in reasons and "over the" not in reasons[14]  # long but allowed: judged as JSON
    assert stats.duplicates == 2  # identical re-reads of lines 4 and 10, found by offset across blocks
    assert stats.lines == len(body) and stats.torn_bytes == 0
    assert stats.sha256 == hashlib.sha256(data).hexdigest() and stats.bytes_read == len(data)


def test_overlong_line_at_eof_is_torn_and_complete_lines_after_skip_are_read(tmp_path, gen, small_blocks):
    evs = gen.run_events()
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join([_line(evs[0]), b"x" * 9000, *(_line(e) for e in evs[1:4])]) + b"\n" + b"w" * 4000)
    stats = ReadStats(p)
    got = list(read_events(p, stats))
    assert [r.event for r in got] == evs[:4] and [r.line for r in got] == [1, 3, 4, 5]
    assert [q.line for q in stats.quarantine] == [2]
    assert stats.torn_bytes == 4000 and stats.lines == 5


def test_ts_array_matches_pyarrow_exactly():
    t = pa.timestamp("us", tz="UTC")
    vals = [
        datetime(2026, 3, 2, 9, 0, 1, 123457, tzinfo=UTC), None,
        datetime(2026, 3, 2, 9, 0, 1, 999999, tzinfo=timezone(timedelta(hours=-7))),
        datetime(2026, 3, 2, 9, 0, 1, 1),  # noqa: DTZ001  naive (an event without offset): read as UTC
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ]
    assert ts_array(vals, t).equals(pa.array(vals, t))
    far = [*vals, datetime(2300, 1, 1, 0, 0, 0, 1, tzinfo=UTC)]  # beyond float precision: exact path
    assert ts_array(far, t).equals(pa.array(far, t))
    assert ts_array([None], t).null_count == 1
