"""The bounded memory of a streaming ingest: ``SeqIndex`` and ``TrialIds`` against plain
Python sets and dicts, and the reader keeping one record per block of a runner's file."""

from __future__ import annotations

import pickle
import random

import pytest
from pydantic import BaseModel

from contract.events import dump_event
from ingest import line_blocks, seen
from ingest import read as rd
from ingest.read_stats import ReadStats
from ingest.seen import SeqIndex, TrialIds


def test_seq_index_finds_the_first_line_of_a_seq_inside_a_run_and_one_by_one(tmp_path):
    lines = [f'{{"seq":{i},"x":"{"r" * (i % 7)}"}}'.encode() for i in range(40)]
    p = tmp_path / "f.jsonl"
    p.write_bytes(b"\r\n".join(lines) + b"\r\n")  # CRLF: offsets still count whole lines
    offsets = [0]
    for raw in lines:
        offsets.append(offsets[-1] + len(raw) + 2)
    idx = SeqIndex(p, 1000)
    idx.add_run(0, 10, offsets[0])
    idx.add_run(10, 20, offsets[10])
    for i in (35, 33):  # irregular ones, one at a time
        assert idx.check_add(i, offsets[i]) is None
    want = {i: lines[i] for i in (*range(30), 35, 33)}
    for seq, raw in want.items():
        assert idx.check_add(seq, 10**9) == raw, seq
    for seq in (30, 31, 34, 10**30):
        assert idx.check_add(seq, offsets[seq] if seq < 40 else 0) is None
    assert idx.check_add(31, 0) == lines[31]


def test_a_runners_file_is_remembered_as_one_record_per_block(tmp_path, gen, monkeypatch):
    """Consecutive seqs: nothing is kept per event (the reason peak memory stays flat)."""
    made = []
    monkeypatch.setattr(rd, "SeqIndex", lambda path, limit: made.append(SeqIndex(path, limit)) or made[-1])
    monkeypatch.setattr(line_blocks, "BLOCK", 2000)
    evs = gen.run_events(repetitions=6)
    p = gen.write_jsonl(tmp_path / "events.jsonl", evs)
    blocks = list(rd.read_blocks(p, ReadStats(p)))
    (idx,) = made
    assert len(blocks) > 5 and len(idx._starts) == len(blocks) and not idx._single
    # lines only pydantic accepts (another timestamp form) are still one record per block
    lax = tmp_path / "lax.jsonl"
    lax.write_bytes(p.read_bytes().replace(b'Z"', b'+02:00"'))
    blocks = list(rd.read_blocks(lax, ReadStats(lax)))
    assert sum(len(b.events) for b in blocks) == len(evs) and all(isinstance(e, BaseModel) for e in blocks[0].events)
    assert len(made[-1]._starts) == len(blocks) and not made[-1]._single
    dup = gen.write_jsonl(tmp_path / "dup.jsonl", [*evs, evs[len(evs) // 2]])
    stats = ReadStats(dup)
    assert sum(len(b.events) for b in rd.read_blocks(dup, stats)) == len(evs) and stats.duplicates == 1
    conflict = dump_event(evs[len(evs) // 2].model_copy(update={"trial_id": "other"})).encode()
    bad = gen.write_jsonl(tmp_path / "bad.jsonl", evs, extra_lines=[conflict])
    stats = ReadStats(bad)
    list(rd.read_blocks(bad, stats))
    assert [q.reason for q in stats.quarantine] == [f"seq {evs[len(evs) // 2].seq} already used by a different event"]


@pytest.mark.parametrize("recent", [3, 65_536])
def test_trial_ids_answer_like_a_set(monkeypatch, recent):
    monkeypatch.setattr(TrialIds, "RECENT", recent)
    rng = random.Random(7)
    ids = [f"run-{rng.randrange(10**9)}" for _ in range(500)]
    a, ref = TrialIds(), set()
    for t in ids[:300]:
        a.add(t)
        ref.add(t)
    assert all((t in a) == (t in ref) for t in ids)
    assert len(a) == len(ref)
    b = TrialIds()
    for t in ids[300:400]:
        b.add(t)
    assert a.isdisjoint(b) and b.isdisjoint(a) and a.isdisjoint(ids[400:])
    assert not a.isdisjoint(ids[299:301]) and not a.isdisjoint(iter([ids[5]]))
    b.add(ids[17])
    assert not a.isdisjoint(b) and not b.isdisjoint(a)
    a.update(b)
    assert all((t in a) == (t in ref | set(ids[300:400])) for t in ids)
    c = pickle.loads(pickle.dumps(a))
    assert all((t in c) == (t in a) for t in ids)


def test_a_shared_digest_only_ever_says_yes(monkeypatch):
    """Two ids with one digest look alike once folded: membership errs towards 'seen', which
    callers take as 'use the exact path', never as a different result."""
    monkeypatch.setattr(TrialIds, "RECENT", 1)
    monkeypatch.setattr(seen, "_digest", lambda t: 42)
    a = TrialIds()
    a.add("x")
    assert "y" in a and "x" in a and not a.isdisjoint(["y"])
