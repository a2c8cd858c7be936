"""The block reader against the line-at-a-time rules: small blocks, CRLF, long lines mid-block,
duplicate detection by byte offset across blocks, and exact timestamp columns."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pytest
from pydantic import BaseModel

from contract.events import EVENT_ADAPTER, dump_event
from ingest import fastdecode, line_blocks, line_validation
from ingest import read as rd
from ingest.read import read_events
from ingest.read_stats import ReadStats


def _line(e) -> bytes:
    return dump_event(e).encode()


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 700 bytes and a 3000-byte line limit: every boundary case in a tiny file."""
    monkeypatch.setattr(line_blocks, "BLOCK", 700)
    monkeypatch.setattr(line_blocks, "MAX_LINE_BYTES", 3000)
    monkeypatch.setattr(line_blocks, "CHUNK", 256)


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


def _micros_by_pyarrow(t) -> int:
    return pa.array([t], pa.timestamp("us", tz="UTC")).cast(pa.int64())[0].as_py()


def test_exact_micros_matches_pyarrow():
    vals = [
        datetime(2026, 3, 2, 9, 0, 1, 123457, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 0, 1, 999999, tzinfo=timezone(timedelta(hours=-7))),
        datetime(2026, 3, 2, 9, 0, 1, 1),  # noqa: DTZ001  naive (an event without offset): read as UTC
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2300, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    ]
    assert [line_validation.exact_micros(t) for t in vals] == [_micros_by_pyarrow(t) for t in vals]
    assert line_validation.exact_micros(None) is None


TS_FORMS = [
    "2026-03-02T09:00:01Z", "2026-03-02T09:00:01.5Z", "2026-03-02T09:00:01.000001Z", "2026-03-02T09:00:01.123456Z",
    "2026-03-02T09:00:01.5+00:00", "2026-03-02T09:00:01.5+02:00", "2026-03-02T09:00:01-07:00",
    "2026-03-02T09:00:01+0530", "2026-03-02 09:00:01Z", "2026-03-02t09:00:01z", "2026-03-02T09:00:01",
    "2026-03-02T09:00:01.1234567Z", "2026-03-02", "2026-03-02T09:00Z", "1969-12-31T23:59:59.999999Z",
    "2300-01-01T00:00:00.000001Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z",
    1772442001, 1772442001.25, "1772442001",
]


@pytest.mark.parametrize("layout", ["canonical", "ts_last_spaced", "nested_ts", "escaped", "string_ts"])
def test_ts_columns_equal_the_validated_datetimes(tmp_path, gen, layout):
    """Timestamps cut from the line bytes are exactly the instant pydantic validated, for every
    form a line can carry, and lines where the bytes could mislead fall back to the model."""
    import json

    evs = gen.run_events()
    lines = []
    for i, e in enumerate(evs):
        d = json.loads(_line(e))
        d["ts"] = TS_FORMS[i % len(TS_FORMS)]
        if layout == "ts_last_spaced":
            d["ts"] = d.pop("ts")
            lines.append(json.dumps(d).encode())
            continue
        if layout == "nested_ts" and d["event"] == "run_started":
            for v in d["variants"]:
                v["settings"] = {"ts": "2001-01-01T00:00:00Z"}
        if layout == "escaped" and d["event"] == "judgment":
            d["rationale"] = 'said \u00e9 "ts":"2000-01-01T00:00:00Z"'
        if layout == "string_ts" and d["event"] == "flag":
            d["path"] = "ts"
        lines.append(json.dumps(d, separators=(",", ":"), ensure_ascii=(layout == "escaped")).encode())
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    stats = ReadStats(p)
    blocks = list(rd.read_blocks(p, stats))
    got = [(e, m) for b in blocks for e, m in zip(b.events, b.micros, strict=True)]
    assert len(got) == len(evs) and not stats.quarantine
    for e, m in got:
        assert m == _micros_by_pyarrow(e.ts), (e.seq, e.ts)


def test_escaped_key_and_nested_decoy_give_the_top_level_instant(gen):
    """The top-level key written with an escape and a plain nested decoy: the decoy is never read."""
    import json

    e = gen.run_events()[0]  # run_started: variant settings may hold any key
    d = json.loads(_line(e))
    real = d.pop("ts")
    d["variants"][0]["settings"] = {"ts": "2001-01-01T00:00:00Z"}
    line = json.dumps(d).encode()[:-1] + b', "t\\u0073": "' + real.encode() + b'"}'
    event = EVENT_ADAPTER.validate_json(line)
    assert event.ts == e.ts
    events, failed, micros = fastdecode.decode_block([line])
    assert not failed and micros == [_micros_by_pyarrow(e.ts)]
    assert fastdecode.to_model(events[0]) == event


def test_compiled_validation_then_pydantic_equals_pydantic_line_by_line(tmp_path, gen):
    """Lines the compiled decoder accepts equal pydantic's models; the ones it refuses get
    exactly pydantic's verdict from ``decode_lax`` (lax values accepted, bad ones refused),
    so the reader's result is pydantic's, line by line."""
    import json

    evs = gen.run_events()
    good = [_line(e) for e in evs]
    tsf = json.loads(good[-2])
    bad = [
        b"{not json", b"[1, 2, 3]", b'{"schema_version": 1, "event": "nope", "seq": 1}',
        good[3].replace(b'"seq":3', b'"seq":"three"'), good[-2].replace(b'"cost_usd":null', b'"cost_usd":NaN'),
        json.dumps({**tsf, "usage": {"input_tokens": -1}}).encode(), good[4][:-1] + b',"extra":1}',
        good[5] + b" " + good[6],  # two events on one line
        good[7][:40], good[8][40:],  # one event cut in two lines
        b"\xff\xfe binary",
        good[1].replace(b'Z"', b'.1234567Z"', 1),  # pydantic truncates a 7th digit: left to pydantic
        good[2].replace(b'"seq":2', b'"seq":2.0'),  # lax: pydantic takes 2.0 as 2
        good[3].replace(b"T09:", b" 09:", 1),  # another form pydantic reads
        good[4].replace(b'-03-02T', b'-02-30T', 1),  # no such day: refused by Arrow, then by pydantic
        good[5].replace(b'"schema_version":1,', b"").replace(b'"seq":5', b'"seq":5.0'),  # no version (default) + lax
    ]
    lines = []
    for i, g in enumerate(good):
        lines.append(g)
        if i < len(bad):
            lines.append(bad[i])
    assert all(b in lines for b in bad)
    events, failed, micros = fastdecode.decode_block(lines)
    for i, raw in enumerate(lines):
        try:
            want = EVENT_ADAPTER.validate_json(raw)
        except ValueError:
            want = None
        if i in failed:
            assert events[i] is None and micros[i] is None
            if want is None:
                with pytest.raises(ValueError):
                    line_validation.decode_lax(raw)
            else:
                assert line_validation.decode_lax(raw) == (want, 1)
        else:
            assert want is not None, raw
            assert fastdecode.to_model(events[i]) == want
            assert micros[i] == _micros_by_pyarrow(want.ts)
    assert failed == {i for i, raw in enumerate(lines) if raw in bad}


def test_blank_lines_are_skipped_and_other_whitespace_is_judged(tmp_path, gen):
    """Empty and space/tab-only lines are skipped (not quarantined) wherever they fall in a block;
    a line of other control bytes is a bad line like any other."""
    evs = gen.run_events()
    lines = [_line(e) for e in evs]
    body = [lines[0], b"", *lines[1:4], b"   ", b"\t\r", *lines[4:9], b"\x0b", *lines[9:], b""]
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(body) + b"\n")
    stats = ReadStats(p)
    got = list(read_events(p, stats))
    assert [r.event for r in got] == evs
    assert [q.line for q in stats.quarantine] == [body.index(b"\x0b") + 1]
    assert [r.line for r in got][:2] == [1, 3]


def test_the_runners_lines_take_the_compiled_path(tmp_path, gen, monkeypatch):
    """The runner's own lines are all accepted by the compiled decoder (pydantic never runs, no
    per-event datetime arithmetic); a line with another timestamp form goes to pydantic alone."""
    evs = gen.run_events()
    lines = [_line(e) for e in evs]
    calls = []
    real = line_validation.exact_micros
    monkeypatch.setattr(line_validation, "exact_micros", lambda t: calls.append(t) or real(t))
    events, failed, micros = fastdecode.decode_block(lines)
    assert not failed and micros == [real(e.ts) for e in evs]
    assert not any(isinstance(e, BaseModel) for e in events)
    odd = lines[3].replace(b'Z"', b'+02:00"', 1)
    assert odd != lines[3]
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join([*lines[:3], odd, *lines[4:]]) + b"\n")
    (blk,) = rd.read_blocks(p)
    assert [isinstance(e, BaseModel) for e in blk.events] == [i == 3 for i in range(len(evs))]
    assert blk.micros[3] == _micros_by_pyarrow(EVENT_ADAPTER.validate_json(odd).ts) and len(calls) == 1
    assert [fastdecode.to_model(e) for e in blk.events] == [*evs[:3], EVENT_ADAPTER.validate_json(odd), *evs[4:]]


def test_line_array_is_the_lines(tmp_path):
    """The block's lines as one Arrow array built over the read buffer equal the lines' bytes."""
    lines = [b'{"a":1}', b"", b'{"b":"\xc3\xa9"}', b"x" * 300]
    whole = b"\n".join(lines) + b"\n" + b'{"unread'
    offsets = [1000]
    for raw in lines:
        offsets.append(offsets[-1] + len(raw) + 1)
    arr = line_blocks.line_array(whole, offsets)
    assert arr.type == pa.large_binary() and arr.to_pylist() == lines
