"""Foreign rows are held to the same value rules as our events (``ingest.rows``): a hostile value
quarantines its row (and a trial's attempts) with the reason, never crashes the write, and a
hostile name never becomes a partition."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import warehouse
from contract.values import id_problem
from ingest.api import ingest_paths
from ingest.identity import run_key
from ingest.rows import row_problem, value_problem

FIXTURES = Path(__file__).parent / "formats" / "fixtures"


@pytest.mark.parametrize(("kind", "value", "ok"), [
    ("int32", 2**31 - 1, True), ("int32", 2**31, False), ("int64", 2**63, False), ("int64", True, False),
    ("float64", float("inf"), False), ("float64", 10**400, False), ("float64", 3, True),
    ("string", "\ud800", False), ("string", "é", True), ("bool", 1, False), ("timestamp", "2026-01-01", False),
])
def test_value_problem(kind, value, ok):
    assert (value_problem(kind, value) is None) == ok


def test_foreign_ids_are_text_without_control_characters():
    base = {"trial_id": "t", "source_format": "x", "config_id": "c", "case_id": "arith/3", "repetition": 1,
            "complete": True, "simulated": False}
    assert row_problem("trials", base) is None  # another tool's ids stay as it wrote them
    assert "case_id" in row_problem("trials", {**base, "case_id": "a\nb"})
    assert "trial_id" in row_problem("trials", {**base, "trial_id": "t" * 513})
    assert "repetition" in row_problem("trials", {**base, "repetition": None})


def test_columns_of_ids_are_judged_like_rows():
    """``checked_table`` flags ids by bytes and looks for control characters only in a column
    whose bytes hold one: a long id of wide characters is still kept, each bad one rejected
    with the row rule's reason, in one chunk or several (one of them a slice)."""
    import pyarrow as pa

    from ingest.rows import checked_table

    cases = ["ok-1", "é" * 400, "", "x" * 513, "a\x01b", "tab\there", "ok-2", "b\x7f"]
    table = pa.table({"case_id": cases, "holdout": [False] * len(cases)})
    kept, rejected = checked_table("cases", table, "src")
    assert kept.column("case_id").to_pylist() == ["ok-1", "é" * 400, "ok-2"]
    assert [q.reason for q in rejected] == [
        f"cases row: {row_problem('cases', {'case_id': c, 'holdout': False})}" for c in cases if c not in kept["case_id"].to_pylist()]
    sliced = pa.chunked_array([pa.array(["z\x02", "ok-3", "ok-4"]).slice(1), pa.array(["ok-5"])])
    kept, rejected = checked_table("cases", pa.table({"case_id": sliced, "holdout": [False] * 3}), "src")
    assert kept.column("case_id").to_pylist() == ["ok-3", "ok-4", "ok-5"] and rejected == []


@pytest.mark.parametrize("name", ["a=b", "a\nb", "a'b\"c*?[x]", "r" * 300, "", "../up", "ok-name"])
def test_run_keys_are_safe_and_stable(name):
    key = run_key(name)
    assert id_problem(key) is None and key == run_key(name)
    assert (key == name) == (id_problem(name) is None)
    assert run_key(name + "x") != key


def _runs_jsonl(tmp_path: Path) -> Path:
    base = {"model": "m", "harness": "h", "task_id": "t", "status": "solved", "input_tokens": 1, "output_tokens": 1}
    lines = [
        json.dumps({**base, "trial": 1}),
        json.dumps({**base, "trial": 2, "steps": 2**70}),  # past int64
        json.dumps({**base, "trial": 3, "task_id": "\ud800"}),  # a lone surrogate (written as its escape)
        json.dumps({**base, "trial": 4, "model": "m\x00"}),  # a control character in an id
        json.dumps({**base, "trial": 5}),
    ]
    p = tmp_path / "runs.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_hostile_foreign_values_quarantine_their_rows_and_the_rest_loads(tmp_path):
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([_runs_jsonl(tmp_path)], wh, allow_quarantine=True)
    assert result.rows["trials"] == 2
    con = warehouse.open(wh, read_only=True)
    try:
        reasons = sorted(r[0] for r in con.execute("SELECT reason FROM quarantine").fetchall())
        # each names its line, as every other bad line of the file does
        assert reasons == [f"line {n}: trials row: " + r.split("trials row: ", 1)[1]
                           for n, r in zip((2, 3, 4), reasons, strict=True)], reasons
        assert con.execute("SELECT count(*) FROM attempts").fetchone() == (2,)  # attempts go with their trial
    finally:
        con.close()
    assert any("steps integer" in r for r in reasons) and any("not valid Unicode" in r for r in reasons)
    assert any("control characters" in r for r in reasons)


def test_a_hostile_foreign_run_name_becomes_a_safe_partition(tmp_path):
    run = tmp_path / "tb"
    shutil.copytree(FIXTURES / "terminal_bench" / "2025-06-01__10-00-00", run)
    meta = json.loads((run / "run_metadata.json").read_text())
    meta["run_id"] = "a=b'c\"*?[x]\n" + "r" * 300
    (run / "run_metadata.json").write_text(json.dumps(meta))
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([run], wh, allow_quarantine=True)
    (batch,) = result.batches
    assert id_problem(batch.run_id) is None and batch.run_id.startswith("terminal-bench-a-b-c-x-rrr")
    con = warehouse.open(wh, read_only=True)
    try:
        assert con.execute("SELECT DISTINCT run_id FROM trials").fetchall() == [(batch.run_id,)]
    finally:
        con.close()


def test_credential_shapes_in_foreign_text_are_redacted_before_they_are_stored(tmp_path):
    import json as _json

    import warehouse
    from ingest.api import ingest_paths

    token = "ghp_" + "9z8Y7x6W5v4U3t2S1r0QpOnMlKjIhGfEdCbA"
    line = {"model": "m", "harness": "h", "harness_version": "1", "task_id": "t1", "trial": 1,
            "status": "failed", "input_tokens": 5, "output_tokens": 1, "steps": 1,
            "error": f"push failed with {token}", "note": "password=hunter2-correct-horse"}
    src = tmp_path / "runs.jsonl"
    src.write_text(_json.dumps(line) + "\n")
    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([src], wh, format="runs-jsonl")
    with warehouse.open(wh, read_only=True) as con:
        stored = " ".join(str(v) for row in con.execute("SELECT * FROM trials").fetchall() for v in row)
        stored += " ".join(str(v) for row in con.execute("SELECT * FROM events").fetchall() for v in row)
    assert token not in stored and "hunter2-correct-horse" not in stored
    assert "[REDACTED]" in stored
