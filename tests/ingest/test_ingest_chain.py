"""Ingest follows the hash chain: forged, altered and appended lines are refused, report.json
and the warehouse agree, and files written before the chain are read as they are."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

import warehouse
from contract.chain import chain_digest
from contract.envelope import utc_now
from contract.events import dump_event
from contract.trial_events import TrialFinished
from ingest import load
from ingest.api import IngestQuarantined, ingest_paths
from runner.run import run_trials

GOLDEN = Path(__file__).parent / "golden"
_spec = importlib.util.spec_from_file_location(
    "runner_corpus_kit", Path(__file__).resolve().parents[1] / "runner" / "conftest.py")
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    m = kit.make_corpus(root, repetitions=2)
    return run_trials(m, tmp_path / "run", progress=False).run_dir


def rows(wh: Path, sql: str) -> list[tuple]:
    with warehouse.open(wh) as con:
        return con.execute(sql).fetchall()


def forge_after(lines: list[bytes], index: int, **fields) -> bytes:
    """A valid line a forger writes after ``lines[index]``, with a correct chain link."""
    src = json.loads(lines[index])
    event = TrialFinished(run_id=src["run_id"], trial_id="mul__noop__r1", seq=9999, ts=utc_now(),
                             prev=chain_digest(lines[index]), case_id="mul", variant="noop",
                             config_id=src.get("config_id") or "x" * 16, repetition=1, outcome="accepted",
                             attempts=1, duration_s=1.0, **fields)
    return dump_event(event).encode()


def test_a_real_run_is_intact_and_agrees_with_its_report(run_dir, tmp_path):
    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([run_dir], wh)
    assert rows(wh, "SELECT integrity, isolation_backend, isolated, executor, executor_address, ray_version "
                    "FROM runs") == [("intact", "bubblewrap", True, "local", None, None)]
    report = json.loads((run_dir / "report.json").read_text())
    stored = dict(rows(wh, "SELECT trial_id, outcome FROM trials"))
    assert stored == {t["trial_id"]: t["outcome"] for t in report["trials"]}


def test_a_forged_trial_finished_appended_after_close_is_quarantined(run_dir, tmp_path):
    path = run_dir / "events.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([*lines, forge_after(lines, len(lines) - 1)]) + b"\n")
    wh = tmp_path / "wh" / "w.duckdb"
    with pytest.raises(IngestQuarantined):
        ingest_paths([run_dir], wh)
    (reason,) = [r[0] for r in rows(wh, "SELECT reason FROM quarantine")]
    assert "sealed closed" in reason
    report = json.loads((run_dir / "report.json").read_text())  # written before the forgery
    stored = dict(rows(wh, "SELECT trial_id, outcome FROM trials"))
    assert stored == {t["trial_id"]: t["outcome"] for t in report["trials"]}
    assert stored["mul__noop__r1"] == "target_failed"


def test_an_altered_middle_line_is_refused_and_the_run_marked(run_dir, tmp_path):
    path = run_dir / "events.jsonl"
    lines = path.read_bytes().splitlines()
    at = next(i for i, line in enumerate(lines) if b'"trial_finished"' in line and b"noop" in line)
    data = json.loads(lines[at])
    data["outcome"] = "accepted"
    lines[at] = json.dumps(data, separators=(",", ":")).encode()
    path.write_bytes(b"\n".join(lines) + b"\n")
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([run_dir], wh, allow_quarantine=True)
    quarantined = rows(wh, "SELECT line, reason FROM quarantine")
    assert [n for n, _ in quarantined] == [at + 1] and "cannot be verified" in quarantined[0][1]
    (integrity,) = rows(wh, "SELECT integrity FROM runs")[0]
    assert integrity.startswith("tampered or damaged: 1 line(s) refused") and "broken" in integrity
    assert any("hash chain is broken" in n for b in result.batches for n in b.notes)
    accepted = [t for t, o in rows(wh, "SELECT trial_id, outcome FROM trials") if o == "accepted"]
    assert all("noop" not in t for t in accepted)


def test_a_truncated_tail_is_named_against_the_seal(run_dir, tmp_path):
    path = run_dir / "events.jsonl"
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join(lines[:-3]) + b"\n")
    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([run_dir], wh)
    (integrity,) = rows(wh, "SELECT integrity FROM runs")[0]
    assert "truncated" in integrity


def test_the_two_process_path_takes_intact_files_and_declines_broken_ones(run_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(load, "PARALLEL_MIN_BYTES", 0)
    wh = tmp_path / "a" / "w.duckdb"
    ingest_paths([run_dir], wh)
    assert rows(wh, "SELECT integrity FROM runs") == [("intact",)]
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    lines = (broken / "events.jsonl").read_bytes().splitlines()
    (broken / "events.jsonl").write_bytes(b"\n".join(lines[:5] + lines[6:]) + b"\n")
    wh2 = tmp_path / "b" / "w.duckdb"
    ingest_paths([broken], wh2, allow_quarantine=True)
    (integrity,) = rows(wh2, "SELECT integrity FROM runs")[0]
    assert integrity.startswith("tampered or damaged")


@pytest.mark.parametrize("name", ["v0_events.jsonl", "v1_events.jsonl"])
def test_files_from_before_the_chain_are_unchained_not_refused(tmp_path, name):
    src = tmp_path / "old"
    src.mkdir()
    shutil.copy(GOLDEN / name, src / "events.jsonl")
    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([src], wh, allow_quarantine=True)
    assert rows(wh, "SELECT DISTINCT integrity FROM runs") == [("unchained",)]
    assert not any("hash-chain" in r[0] or "hash chain" in r[0] for r in rows(wh, "SELECT reason FROM quarantine"))
