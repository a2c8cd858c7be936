"""The keyed, complete evidence chain (issue 29 item 4, docs/security.md "The evidence
chain and its key").

A forger with write access to a finished run flips every ``target_failed`` to
``accepted`` and recomputes the chain and the seal: with the key it is detected, without
it the run reads "chain intact, key not available", never "intact". An evidence file
changed after its trial is detected by ingest and refused by ``--resume``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

import warehouse
from contract.chain import (
    KEY_NAME,
    NO_KEY,
    UNKEYED,
    chain_digest,
    chain_genesis,
    config_dir,
    key_fingerprint,
    load_key,
)
from contract.run_events import RunStarted
from contract.trial_events import TrialFinished
from ingest.api import ingest_paths
from runner.errors import RunnerError
from runner.eventlog import read_events, read_verified
from runner.run import run_trials


@pytest.fixture
def run_dir(kit, corpus_root, tmp_path) -> Path:
    m = kit.make_corpus(corpus_root)
    return run_trials(m, tmp_path / "run", progress=False).run_dir


def integrity(run: Path, wh: Path) -> str:
    ingest_paths([run], wh)
    with warehouse.open(wh) as con:
        return con.execute("SELECT integrity FROM runs").fetchone()[0]


def rechain(run: Path, *, mac: str | None) -> None:
    """Flip every ``target_failed`` to ``accepted``, recompute every ``prev`` and the seal
    (with ``mac`` as the forger's guess, or none at all)."""
    events = run / "events.jsonl"
    out, prev = [], None
    for raw in events.read_bytes().splitlines():
        obj = json.loads(raw)
        prev = prev or chain_genesis(obj["run_id"])
        if obj.get("outcome") == "target_failed":
            obj["outcome"] = "accepted"
        obj["prev"] = prev
        line = json.dumps(obj, separators=(",", ":")).encode()
        out.append(line)
        prev = chain_digest(line)
    events.write_bytes(b"\n".join(out) + b"\n")
    seal = json.loads((run / "events.seal.json").read_text())
    seal.update(lines=len(out), head=prev)
    if mac is None:
        seal.pop("mac", None)
        seal.pop("key", None)
    else:
        seal["mac"] = mac
    (run / "events.seal.json").write_text(json.dumps(seal))


def test_the_key_lives_outside_the_run_and_its_fingerprint_in_the_header(run_dir):
    key_file = config_dir() / KEY_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not str(key_file).startswith(str(run_dir))
    (start,) = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, RunStarted)]
    assert start.chain_key == key_fingerprint(load_key())
    seal = json.loads((run_dir / "events.seal.json").read_text())
    assert seal["key"] == start.chain_key and len(seal["mac"]) == 64
    assert read_verified(run_dir / "events.jsonl").seal == "intact"
    (fin, *_) = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, TrialFinished)]
    assert "changes.patch" in fin.evidence and any(k.startswith("logs/") for k in fin.evidence)
    key_text = key_file.read_text().strip()
    for base, _dirs, files in os.walk(run_dir):
        for name in files:
            assert key_text.encode() not in (Path(base) / name).read_bytes()


@pytest.mark.parametrize("mac", ["0" * 64, None], ids=["guessed-mac", "mac-removed"])
def test_a_rechained_forgery_is_detected_with_the_key_and_unverifiable_without(run_dir, tmp_path,
                                                                              monkeypatch, mac):
    assert integrity(run_dir, tmp_path / "wh0" / "w.duckdb") == "intact"
    forged = tmp_path / "forged"
    shutil.copytree(run_dir, forged)
    rechain(forged, mac=mac)
    outcomes = {e.outcome for e in read_events(forged / "events.jsonl") if isinstance(e, TrialFinished)}
    assert "target_failed" not in outcomes  # the forgery itself chains
    label = integrity(forged, tmp_path / "wh1" / "w.duckdb")
    if mac is None:
        assert label == UNKEYED
    else:
        assert label.startswith("tampered or damaged") and "does not verify" in label
    monkeypatch.setenv("TRIALHOUSE_CONFIG_DIR", str(tmp_path / "elsewhere"))  # no key here
    assert integrity(run_dir, tmp_path / "wh2" / "w.duckdb") == NO_KEY
    assert integrity(forged, tmp_path / "wh3" / "w.duckdb") in (NO_KEY, UNKEYED)


def test_an_evidence_file_changed_after_the_trial_is_detected(kit, corpus_root, run_dir, tmp_path):
    fin = next(e for e in read_events(run_dir / "events.jsonl") if isinstance(e, TrialFinished)
               and e.outcome == "target_failed")
    log = next(rel for rel in fin.evidence if rel.startswith("logs/"))
    path = run_dir / "trials" / fin.trial_id / log
    path.write_bytes(path.read_bytes() + b"all tests passed\n")
    label = integrity(run_dir, tmp_path / "wh" / "w.duckdb")
    assert label.startswith("tampered or damaged") and "evidence" in label
    with pytest.raises(RunnerError, match=f"trials/{fin.trial_id}/{log} changed"):
        run_trials(corpus_root / "manifest.json", run_dir, resume=True, progress=False)
