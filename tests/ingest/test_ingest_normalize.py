"""The normaliser's per-trial rules on trials of unusual shape (``ingest.trial_rows.TrialRows.resolve``):
events before the last start are dropped, a trial_finished need not be the last event,
labels and costs come out as the models say."""

from __future__ import annotations

import json

from contract.events import dump_event
from contract.stage_events import Usage
from contract.trial_events import Flag
from ingest.normalize import RunNormalizer
from ingest.read import read_blocks
from ingest.run_rows import compact_json
from ingest.trial_rows import TRIAL_COLUMNS


def _rows(tmp_path, lines: list[bytes], *, streaming: bool = False) -> tuple[RunNormalizer, dict]:
    p = tmp_path / "events.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    norm = RunNormalizer(str(p), None, streaming=streaming)
    for block in read_blocks(p):
        norm.add_block(block)
    return norm, norm.rows()


def _named(rows: dict, table: str) -> list[dict]:
    return [dict(zip(TRIAL_COLUMNS[table], r, strict=True)) for r in rows[table]]


def _dump(e) -> bytes:
    return dump_event(e).encode()


def test_events_before_the_start_are_dropped_and_the_finish_need_not_be_last(tmp_path, gen):
    s = gen.Seq("run-n")
    rs = gen.run_started(s, variants=("base",), cases=("c1",), repetitions=1)
    early = Flag(**s.env("t1"), kind="test_deleted", path="early.py")
    trial = gen.trial_events(s, "t1", "c1", "base", 1)
    late = Flag(**s.env("t1"), kind="generated_file", path="late.py")
    _norm, rows = _rows(tmp_path, [_dump(e) for e in (rs, early, *trial, late)])
    trials = _named(rows, "trials")
    assert len(trials) == 1
    t = trials[0]
    assert t["complete"] is True and t["outcome"] == "accepted"
    assert t["started_at"] == trial[0].ts.timestamp() * 1_000_000
    assert t["finished_at"] == trial[-1].ts.timestamp() * 1_000_000
    # the flag before the start is not the trial's; the one after its finish is
    assert sorted(f["path"] for f in _named(rows, "flags")) == ["late.py", "tests/test_x.py"]
    assert t["flags"] == 2
    # and the same when the lines come out of order in the file (ordered by seq)
    lines = [_dump(e) for e in (rs, late, *reversed(trial), early)]
    _norm, rows2 = _rows(tmp_path, lines)
    assert _named(rows2, "trials") == trials
    assert sorted(_named(rows2, "flags"), key=str) == sorted(_named(rows, "flags"), key=str)


def test_a_trial_started_twice_counts_from_its_last_start(tmp_path, gen):
    s = gen.Seq("run-n")
    rs = gen.run_started(s, variants=("base",), cases=("c1",), repetitions=1)
    first = gen.trial_events(s, "t1", "c1", "base", 1, outcome=None)
    again = gen.trial_events(s, "t1", "c1", "base", 1, outcome="target_failed")
    norm, rows = _rows(tmp_path, [_dump(e) for e in (rs, *first, *again)])
    (t,) = _named(rows, "trials")
    assert t["outcome"] == "target_failed" and t["started_at"] == again[0].ts.timestamp() * 1_000_000
    assert len(rows["gradings"]) == len(rows["flags"]) == len(rows["stages"]) == 1
    assert any("started 2 times" in n for n in norm.notes)


def test_a_trial_without_start_is_quarantined_and_without_finish_is_incomplete(tmp_path, gen):
    s = gen.Seq("run-n")
    rs = gen.run_started(s, variants=("base",), cases=("c1",), repetitions=1)
    headless = gen.trial_events(s, "t1", "c1", "base", 1)[1:]
    open_ = gen.trial_events(s, "t2", "c1", "base", 1, outcome=None)
    norm, rows = _rows(tmp_path, [_dump(e) for e in (rs, *headless, *open_)])
    assert [t["trial_id"] for t in _named(rows, "trials")] == ["t2"]
    (t2,) = _named(rows, "trials")
    assert t2["complete"] is False and t2["outcome"] is None and t2["attempts"] == 1
    assert len(norm.quarantine) == len(headless)
    assert all("has no trial_started event" in q.reason for q in norm.quarantine)


def test_labels_are_the_validated_ints_and_stage_costs_follow_the_usage(tmp_path, gen):
    """seed 7.0 and order true validate as the ints 7 and 1; labels_json is their canonical JSON."""
    s = gen.Seq("run-n")
    rs = gen.run_started(s, variants=("base",), cases=("c1",), repetitions=1)
    trial = gen.trial_events(s, "t1", "c1", "base", 1, usage=Usage(input_tokens=5, output_tokens=1, cost_usd=0.25))
    lines = [_dump(e) for e in (rs, *trial)]
    d = json.loads(lines[1])
    d["seed"], d["order"] = 7.0, True
    lines[1] = json.dumps(d).encode()
    _norm, rows = _rows(tmp_path, lines)
    (t,) = _named(rows, "trials")
    assert t["labels_json"] == compact_json({"seed": 7, "order": 1}) == '{"order":1,"seed":7}'
    assert (t["cost_usd"], t["cost_source"]) == (0.25, "reported")
    (st,) = _named(rows, "stages")
    assert (st["cost_usd"], st["cost_source"], st["input_tokens"], st["usage_source"]) == (0.25, "reported", 5, None)
    # no reported cost and no price table: null, never 0
    trial = gen.trial_events(s, "t2", "c1", "base", 1, usage=Usage(input_tokens=5, output_tokens=1))
    _norm, rows = _rows(tmp_path, [_dump(e) for e in (rs, *trial)])
    (st,) = _named(rows, "stages")
    (t,) = _named(rows, "trials")
    assert (st["cost_usd"], st["cost_source"], t["cost_usd"], t["cost_source"]) == (None, None, None, None)
