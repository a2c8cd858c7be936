"""The hand-off from a reader (our events or a foreign format) to the warehouse writer.

A reader turns one source (a run directory, an Inspect log, a Harbor job, a runs-jsonl
file, …) into one ``SourceBatch`` per run: rows per warehouse table plus quarantined
records. ``ingest.write`` stamps the ``ingest_batch_id``, writes the partitions, records
the batch in ``ingest_batches`` and answers with a ``BatchSummary``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class QuarantineRow:
    source_file: str
    line: int | None
    reason: str
    raw_text: str | None = None

    def as_row(self) -> dict[str, Any]:
        """The ``quarantine`` table's row (the run and batch ids are stamped when written)."""
        return {"source_file": self.source_file, "line": self.line, "reason": self.reason,
                "raw_text": self.raw_text}


@dataclass
class SourceBatch:
    run_id: str
    """Partition key: one run of ours, or one foreign source (stable across re-ingests)."""
    source_format: str
    source_files: list[Path]
    rows: dict[str, list[dict]] = field(default_factory=dict)
    """Table name → rows (column names from warehouse.schema; run_id/ingest_batch_id are filled in)."""
    tables: dict[str, Any] = field(default_factory=dict)
    """Table name → ``pyarrow.Table`` with exactly that table's columns, for importers that build
    large tables as columns (runs-jsonl); already held to the value rules (``ingest.rows.checked_table``).
    run_id and ingest_batch_id are filled in by the writer."""
    quarantine: list[QuarantineRow] = field(default_factory=list)
    source_meta: list[dict] | None = None
    """``[{path, sha256, bytes}]`` of the source files when the importer hashed the very bytes
    it read (``ingest.write.file_meta`` form); None: the writer hashes the files."""
    schema_version: int | None = None
    notes: list[str] = field(default_factory=list)
    """Warnings worth printing (e.g. trials without a finish event)."""

    def table_rows(self, name: str) -> list[dict]:
        """The rows of table ``name`` as dicts, whichever form the importer built them in."""
        if name in self.tables:
            return self.tables[name].to_pylist()
        return self.rows.get(name, [])


@dataclass
class BatchSummary:
    """What one batch wrote (or, ``unchanged``, found already written)."""

    run_id: str
    source_format: str
    source: str
    rows: dict[str, int]
    quarantined: int
    notes: list[str] = field(default_factory=list)
    ingest_batch_id: str | None = None
    unchanged: bool = False
    """True when the input matched the run's last batch and nothing was written."""
