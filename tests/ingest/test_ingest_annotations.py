"""Annotation CSVs land in judgments with who said it; bad rows are quarantined with line numbers."""

from __future__ import annotations

import pytest

import warehouse
from ingest.annotations import import_annotations
from ingest.api import IngestQuarantined, ingest_paths


def _q(wh, sql):
    con = warehouse.open(wh, read_only=True)
    try:
        return con.sql(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def loaded(tmp_path, gen, wh):
    gen.write_jsonl(tmp_path / "run-1" / "events.jsonl", gen.run_events("run-1"))
    ingest_paths([tmp_path / "run-1"], wh)
    return wh


def test_categories_import_and_bad_rows_quarantined(tmp_path, loaded):
    csv = tmp_path / "cats.csv"
    csv.write_text(
        "trial_id,category,note,annotator\n"
        "run-1-t001,implementation,patched the wrong layer,alice\n"
        "run-1-t003,Verification,,\n"
        "ghost,implementation,,bob\n"
        "run-1-t005,vibes,,bob\n"
    )
    with pytest.raises(IngestQuarantined) as info:
        import_annotations(csv, loaded, annotator="carol")
    assert info.value.result.quarantined == 2
    rows = _q(loaded, "SELECT trial_id, kind, verdict, category, note, annotator FROM judgments "
                      "WHERE kind = 'failure_category' ORDER BY trial_id")
    assert rows == [
        ("run-1-t001", "failure_category", "implementation", "implementation", "patched the wrong layer", "alice"),
        ("run-1-t003", "failure_category", "verification", "verification", None, "carol"),
    ]
    q = _q(loaded, "SELECT line, reason FROM quarantine WHERE run_id LIKE 'annotations-%' ORDER BY line")
    assert [r[0] for r in q] == [4, 5]
    assert "unknown trial_id 'ghost'" in q[0][1] and "'vibes' is not one of" in q[1][1]
    # same file again: nothing new
    again = import_annotations(csv, loaded, allow_quarantine=True)
    assert again.batches[0].unchanged
    assert _q(loaded, "SELECT count(*) FROM judgments WHERE kind = 'failure_category'") == [(2,)]


def test_review_decisions(tmp_path, loaded):
    csv = tmp_path / "review.csv"
    csv.write_text("trial_id,decision,note,annotator\nrun-1-t002,accept,fine,dana\nrun-1-t004,reject,hacky,dana\n")
    res = import_annotations(csv, loaded, kind="review_decision")
    assert res.quarantined == 0
    assert _q(loaded, "SELECT trial_id, verdict, category FROM judgments WHERE kind = 'review_decision' "
                      "ORDER BY 1") == [("run-1-t002", "accept", None), ("run-1-t004", "reject", None)]
