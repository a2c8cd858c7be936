"""One real run of the runner (tiny git corpus, fake command agents) ingested end to end."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import warehouse
from ingest.api import ingest_paths

_spec = importlib.util.spec_from_file_location(
    "runner_corpus_kit", Path(__file__).resolve().parents[1] / "runner" / "conftest.py"
)
kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kit)


@pytest.mark.slow
def test_real_run_ingests_with_outcomes_and_gradings(tmp_path):
    from runner.run import run_trials

    root = tmp_path / "corpus"
    root.mkdir()
    manifest = kit.make_corpus(root, repetitions=2)
    res = run_trials(manifest, tmp_path / "out", progress=False)
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    out = ingest_paths([res.events_path.parent], wh)
    assert out.quarantined == 0
    con = warehouse.open(wh, read_only=True)
    try:
        rows = con.execute(
            "SELECT variant, outcome, complete, valid, model IS NULL, variant_order "
            "FROM trial_facts ORDER BY variant, repetition"
        ).fetchall()
        grading = con.execute(
            "SELECT count(*) FROM gradings WHERE trial_id IS NOT NULL AND final"
        ).fetchone()[0]
        status = con.execute("SELECT status FROM runs").fetchone()[0]
        n_events = con.execute("SELECT count(*) FROM events").fetchone()[0]
    finally:
        con.close()
    assert rows == [
        ("fixer", "accepted", True, True, True, 1),
        ("fixer", "accepted", True, True, True, 1),
        ("noop", "target_failed", True, True, True, 0),
        ("noop", "target_failed", True, True, True, 0),
    ]
    assert grading >= 8  # two criteria × four trials
    assert status == "completed"
    assert n_events == sum(1 for line in res.events_path.read_bytes().splitlines() if line.strip())
