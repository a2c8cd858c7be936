"""How a warehouse table is written down: its columns, each with a type and whether it may be null.

Every table starts with ``run_id`` (the partition) and ends with ``ingest_batch_id`` (the
batch that wrote the row); ``table_spec`` adds both. The tables themselves are in the
``*_tables`` modules, gathered by ``warehouse.schema``.
"""

from __future__ import annotations

from typing import NamedTuple


class Column(NamedTuple):
    name: str
    type: str
    """string | int32 | int64 | float64 | bool | timestamp (UTC, microseconds)."""
    nullable: bool = True


RUN = Column("run_id", "string", False)
BATCH = Column("ingest_batch_id", "string", False)

TableSpec = tuple[str, tuple[Column, ...]]
"""A table's doc and its columns."""


def table_spec(doc: str, *columns: Column) -> TableSpec:
    """A table of ``columns`` between ``run_id`` and ``ingest_batch_id``."""
    return doc, (RUN, *columns, BATCH)
