"""The streaming reader: every kind of bad line is quarantined with file, line and reason."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from contract.envelope import OUTCOMES
from contract.events import EVENT_ADAPTER, dump_event, parse_event
from contract.stage_events import Usage
from contract.trial_events import TrialFinished, TrialStarted
from ingest.line_blocks import MAX_LINE_BYTES, RAW_TEXT_CAP
from ingest.read import read_events
from ingest.read_stats import ReadStats


def _read(path):
    stats = ReadStats(path)
    got = list(read_events(path, stats))
    return got, stats


def _line(e) -> bytes:
    return dump_event(e).encode()


def test_clean_file_reads_every_event(tmp_path, gen):
    evs = gen.run_events()
    p = gen.write_jsonl(tmp_path / "events.jsonl", evs)
    got, stats = _read(p)
    assert [r.event for r in got] == evs
    assert [r.line for r in got] == list(range(1, len(evs) + 1))
    assert stats.quarantine == [] and stats.torn_bytes == 0
    assert stats.size == p.stat().st_size and len(stats.sha256) == 64


def test_torn_last_line_is_left_not_quarantined(tmp_path, gen):
    evs = gen.run_events()
    torn = _line(evs[-1])[:30]
    p = gen.write_jsonl(tmp_path / "events.jsonl", evs[:-1], torn=torn)
    got, stats = _read(p)
    assert len(got) == len(evs) - 1
    assert stats.quarantine == []
    assert stats.torn_bytes == 30
    assert any("incomplete" in n for n in stats.notes())


def test_bad_lines_each_get_a_reason(tmp_path, gen):
    evs = gen.run_events()
    good = json.loads(_line(evs[1]))
    unknown = {**good, "event": "teleported", "seq": 10_001}
    wrong_type = {**good, "seq": "ten"}
    future = {**good, "schema_version": 2, "seq": 10_002}
    bad_usage = json.loads(_line(evs[-2]))  # trial_finished
    neg = {**bad_usage, "seq": 10_003, "usage": {"input_tokens": -5}}
    nan = _line(evs[-2]).replace(b'"cost_usd":null', b'"cost_usd":NaN').replace(
        f'"seq":{evs[-2].seq}'.encode(), b'"seq":10004'
    )
    assert b"NaN" in nan
    extra = [
        b"{not json",
        b"[1, 2, 3]",
        json.dumps(unknown).encode(),
        json.dumps(wrong_type).encode(),
        json.dumps(future).encode(),
        json.dumps(neg).encode(),
        nan,
        b"\x00\x01\xff\xfe binary",
    ]
    p = gen.write_jsonl(tmp_path / "events.jsonl", evs, extra_lines=extra)
    got, stats = _read(p)
    assert len(got) == len(evs)
    reasons = {q.line: q.reason for q in stats.quarantine}
    n = len(evs)
    assert reasons[n + 1].startswith("invalid JSON")
    assert "not a JSON object" in reasons[n + 2]
    assert "unknown event type 'teleported'" in reasons[n + 3]
    assert reasons[n + 4].startswith("case_validated: seq: Input should be a valid integer")
    assert "newer than this trialhouse" in reasons[n + 5] and "upgrade" in reasons[n + 5]
    assert "usage.input_tokens" in reasons[n + 6]
    assert "cost_usd" in reasons[n + 7] or "invalid JSON" in reasons[n + 7]
    assert "not UTF-8" in reasons[n + 8]
    assert len(reasons) == 8
    assert all(q.source_file == str(p) and q.raw_text for q in stats.quarantine)


def test_duplicates_identical_are_counted_conflicting_are_quarantined(tmp_path, gen):
    evs = gen.run_events()
    dup = _line(evs[5])
    evs6 = evs[4]
    assert isinstance(evs6, TrialStarted)
    conflict = json.dumps({**json.loads(_line(evs6)), "workspace": "/elsewhere"}).encode()
    p = gen.write_jsonl(tmp_path / "events.jsonl", evs, extra_lines=[dup, conflict])
    got, stats = _read(p)
    assert len(got) == len(evs)
    assert stats.duplicates == 1
    assert len(stats.quarantine) == 1
    assert f"seq {evs6.seq} already used" in stats.quarantine[0].reason
    assert stats.quarantine[0].line == len(evs) + 2


def test_out_of_order_events_are_accepted(tmp_path, gen):
    evs = gen.run_events()
    shuffled = evs[:3] + list(reversed(evs[3:20])) + evs[20:]
    p = gen.write_jsonl(tmp_path / "events.jsonl", shuffled)
    got, stats = _read(p)
    assert sorted(r.event.seq for r in got) == [e.seq for e in evs]
    assert stats.out_of_order > 0 and stats.quarantine == []


def test_huge_single_line_is_quarantined_with_capped_text(tmp_path, gen):
    evs = gen.run_events()
    p = tmp_path / "events.jsonl"
    gen.write_jsonl(p, evs[:5])
    with p.open("ab") as f:
        f.write(b'{"event": "run_started", "pad": "')
        block = b"x" * (1 << 20)
        for _ in range(100):  # 100 MiB on one line
            f.write(block)
        f.write(b'"}\n')
        for e in evs[5:]:
            f.write(_line(e) + b"\n")
    got, stats = _read(p)
    assert len(got) == len(evs)
    (q,) = stats.quarantine
    assert q.line == 6 and f"over the {MAX_LINE_BYTES}-byte limit" in q.reason
    assert len(q.raw_text) == RAW_TEXT_CAP
    assert [r.line for r in got][5] == 7


def test_golden_v0_is_upgraded_and_v2_refused(golden):
    v0, s0 = _read(golden / "v0_events.jsonl")
    v1, _ = _read(golden / "v1_events.jsonl")
    assert s0.quarantine == [] and s0.upgraded == len(v0) == len(v1)
    assert all(r.version == 0 for r in v0)
    assert [type(r.event) for r in v0] == [type(r.event) for r in v1]
    v2, s2 = _read(golden / "v2_events.jsonl")
    assert v2 == [] and len(s2.quarantine) == len(v1)
    assert all("newer than this trialhouse" in q.reason for q in s2.quarantine)


def test_mixed_versions_in_one_file(tmp_path, golden):
    lines0 = (golden / "v0_events.jsonl").read_bytes().splitlines()
    lines1 = (golden / "v1_events.jsonl").read_bytes().splitlines()
    mixed = [a if i % 2 else b for i, (a, b) in enumerate(zip(lines0, lines1, strict=True))]
    mixed = [m.replace(b"golden-v0", b"golden-v1") for m in mixed]
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(mixed) + b"\n")
    got, stats = _read(p)
    assert len(got) == len(mixed) and stats.quarantine == []
    assert {r.version for r in got} == {0, 1}


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@settings(max_examples=60, deadline=None)
@given(
    seq=st.integers(0, 2**40),
    tokens=st.none() | st.integers(0, 2**40),
    cost=st.none() | st.floats(0, 1e6, allow_nan=False),
    reason=_text,
    outcome=st.sampled_from(OUTCOMES),
)
def test_event_jsonl_round_trip(seq, tokens, cost, reason, outcome):
    from datetime import UTC, datetime

    e = TrialFinished(
        run_id="r", trial_id="t", seq=seq, ts=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
        case_id="c", variant="v", config_id="k", repetition=1, outcome=outcome, reason=reason,
        attempts=1, duration_s=1.5, usage=Usage(input_tokens=tokens, cost_usd=cost),
    )
    line = dump_event(e)
    assert "\n" not in line
    assert parse_event(line) == e
    assert EVENT_ADAPTER.validate_json(line.encode()) == e
