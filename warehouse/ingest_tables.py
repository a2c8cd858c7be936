"""What ingest itself records: every raw ``events`` line, the ``quarantine`` and the
``ingest_batches`` (assembled in ``warehouse.schema``; docs/tables.md)."""

from __future__ import annotations

from warehouse.table_spec import Column, table_spec

SPECS = {
    "events": table_spec(
        "Every raw event line, typed envelope plus the full JSON payload.",
        Column("seq", "int64", False),
        Column("event", "string", False),
        Column("schema_version", "int32", False),
        Column("trial_id", "string"),
        Column("ts", "timestamp"),
        Column("source_file", "string"),
        Column("line", "int64"),
        Column("payload_json", "string", False),
    ),
    "quarantine": table_spec(
        "Lines or records that could not be ingested, with the reason. Nothing is dropped silently.",
        Column("source_file", "string", False),
        Column("line", "int64"),
        Column("reason", "string", False),
        Column("raw_text", "string"),
    ),
    "ingest_batches": table_spec(
        "One row per ingest of one source: files with their sha256, rows per table, schema version.",
        Column("source_format", "string", False),
        Column("source_files_json", "string", False),  # [{path, sha256, bytes}]
        Column("rows_json", "string", False),  # {table: rows}
        Column("schema_version", "int32"),
        Column("ingested_at", "timestamp", False),
        Column("trialhouse_version", "string"),
    ),
}
