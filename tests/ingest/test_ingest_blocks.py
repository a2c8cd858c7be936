"""The block reader against the line-at-a-time rules: small blocks, CRLF, long lines mid-block,
duplicate detection by byte offset across blocks, and exact timestamp columns."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pyarrow as pa
import pytest

from ingest import read as rd
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
    assert [rd.exact_micros(t) for t in vals] == [_micros_by_pyarrow(t) for t in vals]
    assert rd.exact_micros(None) is None


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


def test_ts_micros_takes_the_model_when_the_bytes_could_point_elsewhere(gen):
    """The top-level key written with an escape and a plain nested decoy: the decoy is never read."""
    import json

    e = gen.run_events()[0]  # run_started: variant settings may hold any key
    d = json.loads(_line(e))
    real = d.pop("ts")
    d["variants"][0]["settings"] = {"ts": "2001-01-01T00:00:00Z"}
    line = json.dumps(d).encode()[:-1] + b', "t\\u0073": "' + real.encode() + b'"}'
    event = ev.EVENT_ADAPTER.validate_json(line)
    assert event.ts == e.ts
    assert line.count(b'"ts"') == 1
    assert rd.ts_micros([event], [line], None) == [_micros_by_pyarrow(e.ts)]


def test_block_validation_equals_line_by_line(tmp_path, gen):
    """One pydantic call per block gives the same events and the same bad lines as one call per line."""
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
    ]
    lines = []
    for i, g in enumerate(good):
        lines.append(g)
        if i < len(bad):
            lines.append(bad[i])
    events, failed = rd._validate(lines)
    for i, raw in enumerate(lines):
        try:
            want = ev.EVENT_ADAPTER.validate_json(raw)
        except ValueError:
            want = None
        assert (i in failed) == (want is None), raw
        assert events[i] == want
    assert len(failed) == len(bad)


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


def test_canonical_timestamps_are_read_from_the_bytes(gen, monkeypatch):
    """The runner's own lines take the vectorised path (no per-event datetime arithmetic);
    a line with another form falls back for that value only."""
    evs = gen.run_events()
    lines = [_line(e) for e in evs]
    calls = []
    real = rd.exact_micros
    monkeypatch.setattr(rd, "exact_micros", lambda t: calls.append(t) or real(t))
    assert rd.ts_micros(evs, lines, None) == [real(e.ts) for e in evs]
    assert calls == []
    odd = lines[3].replace(b'Z"', b'+02:00"', 1)
    assert odd != lines[3]
    odd_ev = ev.EVENT_ADAPTER.validate_json(odd)
    calls.clear()
    got = rd.ts_micros([*evs[:3], odd_ev, *evs[4:]], [*lines[:3], odd, *lines[4:]], None)
    assert got[3] == _micros_by_pyarrow(odd_ev.ts) and len(calls) == 1


def test_ts_micros_on_the_block_as_read_ignores_the_unread_rest(gen, monkeypatch):
    """With the read buffer (lines + newlines, then the start of the next line) the values are
    the model's, taken from the bytes; a "ts" in the unread rest neither counts nor shifts them."""
    evs = gen.run_events()
    lines = [_line(e) for e in evs]
    body = b"\n".join(lines) + b"\n"
    calls = []
    real = rd.exact_micros
    monkeypatch.setattr(rd, "exact_micros", lambda t: calls.append(t) or real(t))
    want = [real(e.ts) for e in evs]
    for rest in (b"", b'{"schema_version":1,"run_id":"x","ts":"2001-01-01T00:00:00Z","se', b'{"ts"'):
        assert rd.ts_micros(evs, lines, None, body + rest, len(body)) == want
        assert calls == []
    # a line with two "ts" (a nested decoy) in the block: every value from the model
    d = _line(evs[0]).replace(b'"initial_commit"', b'"settings_ts":{"ts":"2001-01-01T00:00:00Z"},"initial_commit"', 1)
    assert rd.ts_micros(evs, [d, *lines[1:]], None, b"\n".join([d, *lines[1:]]) + b"\n", len(body) + len(d) - len(lines[0])) == want
    assert len(calls) == len(evs)


def test_line_array_is_the_lines(tmp_path):
    """The block's lines as one Arrow array built over the read buffer equal the lines' bytes."""
    lines = [b'{"a":1}', b"", b'{"b":"\xc3\xa9"}', b"x" * 300]
    whole = b"\n".join(lines) + b"\n" + b'{"unread'
    offsets = [1000]
    for raw in lines:
        offsets.append(offsets[-1] + len(raw) + 1)
    arr = rd.line_array(whole, offsets)
    assert arr.type == pa.large_binary() and arr.to_pylist() == lines
