"""Shared helpers for the foreign-format importer tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warehouse.schema import table_from_rows

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "foreign"


def check_tables(batch) -> dict[str, object]:
    """Every row must fit its warehouse table; returns the Arrow tables."""
    out = {}
    for table in {**batch.rows, **batch.tables}:
        rows = batch.table_rows(table)
        filled = [{**r, "run_id": batch.run_id, "ingest_batch_id": "test"} for r in rows]
        out[table] = table_from_rows(table, filled)
    assert out["trials"].column("complete").to_pylist() == [True] * len(rows_of(batch, "trials"))
    assert set(out["trials"].column("simulated").to_pylist()) <= {False}
    return out


def rows_of(batch, table: str) -> list[dict]:
    return batch.table_rows(table)


def labels(row: dict) -> dict:
    return json.loads(row["labels_json"]) if row.get("labels_json") else {}


@pytest.fixture
def write_lines(tmp_path):
    def _write(lines: list, name: str = "runs.jsonl") -> Path:
        p = tmp_path / name
        p.write_text(
            "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines),
            encoding="utf-8",
        )
        return p

    return _write
