"""Write one batch into the warehouse: every table partition of its run, plus its batch row.

A batch replaces its run's partitions in every table in one step (``warehouse.db.replace_run``:
all or nothing), so a run ingested while still being written and again when finished ends in
exactly its final state, and a failed write leaves the warehouse as it was. Its row in
``ingest_batches`` records the source files with their sha256, the rows per table and the
schema version; ``unchanged`` finds input already written and writes nothing.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from contract.files import engine_version, file_sha256
from ingest.batch import BatchSummary, QuarantineRow
from warehouse import db
from warehouse.schema import TABLES, TableRows, table_from_rows


def new_batch_id() -> str:
    """Time-ordered, unique: ``<UTC timestamp>-<8 hex>``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{uuid.uuid4().hex[:8]}"


def file_meta(paths: list[Path]) -> list[dict]:
    """``[{path, sha256, bytes}]`` of source files, as ``ingest_batches.source_files_json`` holds them."""
    out = []
    for p in paths:
        sha, size = file_sha256(p)
        out.append({"path": str(p), "sha256": sha, "bytes": size})
    return out


def last_batch(warehouse: Path, run_id: str) -> dict | None:
    """The run's latest ``ingest_batches`` row, or None (also for an id that is no partition)."""
    if not db.partition_name_ok(run_id):
        return None
    table = db.read_partition(warehouse, "ingest_batches", run_id)
    if table is None or table.num_rows == 0:
        return None
    rows = sorted(table.to_pylist(), key=lambda r: (r["ingested_at"], r["ingest_batch_id"]))
    return rows[-1]


def unchanged(warehouse: Path, run_id: str, files: list[dict], last: dict | None = None) -> BatchSummary | None:
    """The last batch's summary when ``files`` have the same sha256s as its files (nothing to write)."""
    last = last if last is not None else last_batch(warehouse, run_id)
    if last is None:
        return None
    before = sorted(f["sha256"] for f in json.loads(last["source_files_json"]))
    if before != sorted(f["sha256"] for f in files):
        return None
    rows = json.loads(last["rows_json"])
    return BatchSummary(
        run_id=run_id, source_format=last["source_format"], source=files[0]["path"] if files else "",
        rows={k: v for k, v in rows.items() if k != "quarantine"}, quarantined=rows.get("quarantine", 0),
        notes=["unchanged since the last ingest; nothing written"],
        ingest_batch_id=last["ingest_batch_id"], unchanged=True,
    )


def write_batch(
    warehouse: Path,
    run_id: str,
    batch_id: str,
    source_format: str,
    files: list[dict],
    rows: Mapping[str, list[dict] | TableRows],
    quarantine: list[QuarantineRow] | TableRows,
    schema_version: int | None,
    notes: list[str],
    staged: Mapping[str, tuple[Path, int] | tuple[list[Path], int]] | None = None,
) -> BatchSummary:
    """Stamp, write every table partition of ``run_id`` and append its batch row (caller holds
    the write lock). ``staged`` tables come as staged Parquet files (``ingest.stage``), the
    others as row dicts or ``TableRows`` (a large import: its rows already Arrow chunks)."""
    staged = staged or {}
    tables: dict = {}
    counts: dict[str, int] = {}
    qrows = quarantine if isinstance(quarantine, TableRows) else [q.as_row() for q in quarantine]
    for name in TABLES:
        if name in ("ingest_batches", "run_status"):  # the batch row is appended; the status is the operator's
            continue
        if name in staged:
            tables[name], counts[name] = staged[name]
            continue
        table_rows = qrows if name == "quarantine" else rows.get(name, [])
        if isinstance(table_rows, TableRows):
            tables[name] = table_rows.table(run_id=run_id, ingest_batch_id=batch_id)
        else:
            for r in table_rows:
                r["run_id"] = run_id
                r["ingest_batch_id"] = batch_id
            tables[name] = table_from_rows(name, table_rows)
        counts[name] = len(table_rows)
    new = table_from_rows("ingest_batches", [{
        "run_id": run_id,
        "ingest_batch_id": batch_id,
        "source_format": source_format,
        "source_files_json": json.dumps(files),
        "rows_json": json.dumps(counts, sort_keys=True),
        "schema_version": schema_version,
        "ingested_at": datetime.now(UTC),
        "trialhouse_version": engine_version(),
    }])
    old = db.read_partition(warehouse, "ingest_batches", run_id)
    if old is not None:
        old = old.append_column("run_id", pa.array([run_id] * old.num_rows))
        new = pa.concat_tables([old.select(new.schema.names).cast(new.schema), new])
    tables["ingest_batches"] = new
    db.replace_run(warehouse, run_id, tables)
    return BatchSummary(
        run_id=run_id, source_format=source_format, source=files[0]["path"] if files else "",
        rows={k: v for k, v in counts.items() if k != "quarantine"}, quarantined=counts["quarantine"],
        notes=notes, ingest_batch_id=batch_id,
    )
