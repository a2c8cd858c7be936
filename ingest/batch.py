"""The hand-off from a reader (our events or a foreign format) to the warehouse writer.

A reader turns one source (a run directory, an Inspect log, a Harbor job, a runs-jsonl
file, …) into one ``SourceBatch`` per run: rows per warehouse table plus quarantined
records. ``ingest.api`` stamps the ``ingest_batch_id``, writes the partitions and
records the batch in ``ingest_batches``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class QuarantineRow:
    source_file: str
    line: int | None
    reason: str
    raw_text: str | None = None


@dataclass
class SourceBatch:
    run_id: str
    """Partition key: one run of ours, or one foreign source (stable across re-ingests)."""
    source_format: str
    source_files: list[Path]
    rows: dict[str, list[dict]] = field(default_factory=dict)
    """Table name → rows (column names from warehouse.schema; run_id/ingest_batch_id are filled in)."""
    quarantine: list[QuarantineRow] = field(default_factory=list)
    schema_version: int | None = None
    notes: list[str] = field(default_factory=list)
    """Warnings worth printing (e.g. trials without a finish event)."""
