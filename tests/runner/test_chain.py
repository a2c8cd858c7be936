"""The events hash chain and its seal: forged, altered, removed, reordered, truncated lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contract.chain import chain_digest, chain_genesis
from contract.envelope import utc_now
from contract.events import dump_event
from contract.run_events import RunFinished, RunStarted
from contract.trial_events import Budget
from runner.eventlog import EventLog, read_seal, read_verified


def write_run(path: Path, n: int = 8, close: bool = True) -> list[bytes]:
    log = EventLog(path, "run-1")
    log.emit(RunStarted, manifest_id="m", manifest_path="/m", manifest_sha256="x", engine_version="1",
             os="linux", python="3.11", git_version="2", repository="/r", initial_commit="c" * 40,
             initial_tree="t" * 40, repetitions=1, max_attempts=1, timeout_seconds=1)
    for i in range(n):
        log.emit(Budget, trial_id=f"t{i}", type="time", status="exceeded", limit=1.0, used=float(i))
    log.emit(RunFinished, status="completed", trials_total=0, trials_finished=0, duration_s=1.0)
    log.close(sealed=close)
    return path.read_bytes().splitlines()


def forged(prev_line: bytes, seq: int, trial: str = "t-forged") -> bytes:
    """A line a forger would write: valid JSON, correct schema, a correct chain link."""
    event = Budget(run_id="run-1", trial_id=trial, seq=seq, ts=utc_now(),
                      prev=chain_digest(prev_line), type="cost", status="exceeded")
    return dump_event(event).encode()


def test_an_intact_file_verifies_and_is_sealed(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    verified = read_verified(path)
    assert verified.intact and len(verified.events) == len(lines) == 10
    seal = read_seal(path)
    assert seal.closed and seal.lines == 10 and seal.head == chain_digest(lines[-1])


def test_a_forged_line_appended_after_close_is_refused(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    path.write_bytes(b"\n".join([*lines, forged(lines[-1], 10)]) + b"\n")
    verified = read_verified(path)
    assert [n for n, _ in verified.refused] == [11]
    assert "sealed closed" in verified.refused[0][1]
    assert all(e.trial_id != "t-forged" for e in verified.events)


def test_a_forged_line_inserted_in_the_middle_is_a_dead_branch(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    path.write_bytes(b"\n".join([*lines[:4], forged(lines[3], 99), *lines[4:]]) + b"\n")
    verified = read_verified(path)
    assert [n for n, _ in verified.refused] == [5] and verified.notes == []
    assert len(verified.events) == 10


def test_an_altered_line_is_refused_and_the_break_reported(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    altered = json.loads(lines[4])
    altered["used"] = 1234.0
    lines[4] = json.dumps(altered, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    verified = read_verified(path)
    assert [n for n, _ in verified.refused] == [5] and "cannot be verified" in verified.refused[0][1]
    assert any("broken" in note for note in verified.notes)
    assert all(getattr(e, "used", None) != 1234.0 for e in verified.events)
    assert len(verified.events) == 9


def test_removed_lines_are_reported(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    path.write_bytes(b"\n".join(lines[:3] + lines[5:]) + b"\n")
    verified = read_verified(path)
    assert any("broken before line 4" in note for note in verified.notes)


def test_reordered_lines_are_reported(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    lines[3], lines[4] = lines[4], lines[3]
    path.write_bytes(b"\n".join(lines) + b"\n")
    verified = read_verified(path)
    assert any("reordered" in note for note in verified.notes)


def test_a_truncated_tail_is_reported_against_the_seal(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    path.write_bytes(b"\n".join(lines[:6]) + b"\n")
    verified = read_verified(path)
    assert any("truncated" in note for note in verified.notes)
    assert len(verified.events) == 6 and verified.refused == []


def test_an_unclosed_run_may_grow_past_its_seal(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path, close=False)
    seal = json.loads((tmp_path / "events.seal.json").read_text())
    seal.update(lines=5, head=chain_digest(lines[4]), closed=False)
    (tmp_path / "events.seal.json").write_text(json.dumps(seal))
    assert read_verified(path).intact  # lines after the last seal of a crashed run chain on


def test_lines_of_another_run_are_refused(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    other = Budget(run_id="run-2", seq=0, ts=utc_now(), prev=chain_genesis("run-2"),
                      type="time", status="exceeded")
    path.write_bytes(b"\n".join([*lines[:2], dump_event(other).encode(), *lines[2:]]) + b"\n")
    verified = read_verified(path)
    assert verified.refused == [(3, "belongs to run 'run-2', not 'run-1'")]
    assert verified.notes == [] and len(verified.events) == 10


def test_files_written_before_the_chain_are_read_as_they_are(tmp_path):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    legacy = []
    for line in lines:
        data = json.loads(line)
        data.pop("prev")
        legacy.append(json.dumps(data).encode())
    path.write_bytes(b"\n".join(legacy) + b"\n")
    (tmp_path / "events.seal.json").unlink()
    verified = read_verified(path)
    assert verified.intact and len(verified.events) == 10


@pytest.mark.parametrize("garbage", [b"{not json", b'{"event": "trial_finished"}', b"\xff\xfe"])
def test_a_corrupt_middle_line_is_refused_with_its_reason_not_raised(tmp_path, garbage):
    path = tmp_path / "events.jsonl"
    lines = write_run(path)
    lines[5] = garbage
    path.write_bytes(b"\n".join(lines) + b"\n")
    verified = read_verified(path)
    assert 6 in dict(verified.refused) and "not a valid event" in dict(verified.refused)[6]
