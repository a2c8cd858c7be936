"""Stage one run's rows as hidden Parquet files beside the warehouse, while its file is read.

Why: a run's tables can be far larger than memory, so rows are written out in chunks as
trials resolve, to ``.stage-*`` files on the warehouse's file system (``warehouse.db``);
``ingest.write.write_batch`` then moves them into the run's partitions in one step. Every
exit path removes what it staged (``RunStage.discard``); anything a killed process left
behind is swept by the next writer (``warehouse.db.sweep``).
"""

from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.events_table import EventsColumns
from ingest.normalize import RunNormalizer
from ingest.read import read_blocks
from ingest.read_stats import ReadStats
from ingest.trial_rows import TRIAL_COLUMNS, TRIAL_TABLES
from warehouse import db
from warehouse.schema import TABLES


def tuples_batch(name: str, schema: pa.Schema, names: tuple[str, ...], rows: list, batch_id: str) -> pa.RecordBatch:
    """Row tuples (values in ``names`` order, timestamps as µs since the epoch) → one typed batch.

    Same contract as ``table_from_rows``: columns not named are null, a name the table
    does not have is an error.
    """
    extra = set(names) - set(TABLES[name].names)
    if extra:
        raise KeyError(f"{name} rows: unknown columns {sorted(extra)}")
    if set(map(len, rows)) != {len(names)}:
        raise ValueError(f"{name} rows: expected {len(names)} values per row")
    cols = dict(zip(names, zip(*rows, strict=True), strict=True))
    n = len(rows)
    arrays = []
    for f in schema:
        if f.name == "ingest_batch_id":
            arrays.append(pa.repeat(pa.scalar(batch_id, f.type), n))
        elif f.name not in cols:
            arrays.append(pa.nulls(n, f.type))
        elif pa.types.is_timestamp(f.type):
            arrays.append(pa.array(cols[f.name], pa.int64()).cast(f.type))
        else:
            arrays.append(pa.array(cols[f.name], f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


_UNIQUE_COLUMNS = frozenset({"payload_json", "seq", "line", "trial_id", "source_key"})
"""Columns (besides timestamps) whose values are (nearly) all distinct: no Parquet dictionary."""


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth a Parquet dictionary: not the (nearly) unique ones.

    A dictionary of distinct values is pure cost: the writer hashes every value into a
    dictionary as large as the column (a 100k-row chunk stays under the 1 MB limit at which
    it would fall back to plain) and the file comes out larger. A dictionary of whole event
    lines (``payload_json``) made writing ~30 % slower; without dictionaries for ``seq``,
    ``line``, ``ts`` and the trial ids the staged files are written ≈ 20 % faster and are
    ≈ 30 % smaller; every value read back is the same.
    """
    return [f.name for f in schema if f.name not in _UNIQUE_COLUMNS and not pa.types.is_timestamp(f.type)]


class Stager:
    """Streams one table's rows of one run into a staged Parquet file in chunks.

    Per-trial tables come as row tuples (``add``); the ``events`` table as Arrow tables
    from ``EventsColumns`` (``write_table``).
    """

    def __init__(self, warehouse: Path, name: str, batch_id: str, chunk: int = 50_000) -> None:
        self.name, self.batch_id, self.chunk = name, batch_id, chunk
        self.path = db.staging_file(warehouse, name)
        self.schema = pa.schema([f for f in TABLES[name] if f.name != "run_id"])
        self.columns = TRIAL_COLUMNS.get(name, ())
        self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd",
                                       use_dictionary=dictionary_columns(self.schema))
        self.buf: list[pa.RecordBatch] = []
        self.nbuf = 0
        self.n = 0

    def add(self, rows: list[tuple]) -> None:
        """Turn rows into Arrow now (while their values are still in the CPU cache); write per chunk."""
        if rows:
            self.buf.append(tuples_batch(self.name, self.schema, self.columns, rows, self.batch_id))
            self.nbuf += len(rows)
            if self.nbuf >= self.chunk:
                self.flush()

    def write_table(self, table: pa.Table) -> None:
        self.writer.write_table(table)
        self.n += table.num_rows

    def flush(self) -> None:
        if self.buf:
            self.writer.write_table(pa.Table.from_batches(self.buf, schema=self.schema))
            self.n += self.nbuf
            self.buf, self.nbuf = [], 0

    def close(self) -> tuple[Path, int]:
        self.flush()
        self.writer.close()
        return self.path, self.n


class RunStage:
    """The staged files of one run (or one half of its file) and the scan that fills them."""

    def __init__(self, warehouse: Path, batch_id: str) -> None:
        self.warehouse, self.batch_id = warehouse, batch_id
        self.stagers: dict[str, Stager] = {}

    @property
    def paths(self) -> list[Path]:
        """Every file staged so far (for a watchdog that must remove them on its own)."""
        return [st.path for st in list(self.stagers.values())]

    def open(self) -> None:
        """Create the events stager and one per per-trial table (idempotent)."""
        for name in ("events", *TRIAL_TABLES):
            if name not in self.stagers:
                self.stagers[name] = Stager(self.warehouse, name, self.batch_id)

    def add_rows(self, rows: dict[str, list], flush: bool = False) -> None:
        """Stage resolved per-trial rows (``RunNormalizer.drain``)."""
        for name, table_rows in rows.items():
            if name in self.stagers:
                self.stagers[name].add(table_rows)
                if flush:
                    self.stagers[name].flush()

    def scan(self, events_path: Path, stats: ReadStats, norm: RunNormalizer, run_id: str | None = None,
             **range_kw) -> EventsColumns | None:
        """Read (a byte range of) the file into ``norm``; the events table and resolved trials are
        staged (from the first accepted event on). Returns the events still buffered.

        Automatic GC is off around this (``ingest.load``): the youngest generation is collected
        once per block, after the block is dropped, so only objects still alive are scanned.
        """
        src = str(events_path)
        cols: EventsColumns | None = None
        add = norm.add_block
        for block in read_blocks(events_path, stats, run_id=run_id, **range_kw):
            kept = add(block)
            del block
            if kept.events:
                if cols is None:
                    cols = EventsColumns(stats.run_id or "", src, self.batch_id)
                    self.open()
                if (t := cols.add_block(kept)) is not None:
                    self.stagers["events"].write_table(t)
                    del t
                if norm.n_ready >= 1000:
                    self.add_rows(norm.drain())
            del kept
            gc.collect(0)
        return cols

    def close(self, rows: dict, cols: EventsColumns | None) -> dict[str, tuple[Path, int]]:
        """Flush the buffered events, stage the remaining per-trial rows, close every stager."""
        if cols is not None and (t := cols.flush()) is not None:
            self.stagers["events"].write_table(t)
        if any(rows.get(name) for name in TRIAL_TABLES):
            self.open()
        for name in TRIAL_TABLES:
            if name in self.stagers:
                self.stagers[name].add(rows.pop(name))
        return {name: st.close() for name, st in self.stagers.items()}

    def flush_events(self, cols: EventsColumns | None) -> None:
        """Write out the buffered events now (while waiting for the other half of a split file)."""
        if cols is not None and (t := cols.flush()) is not None:
            self.stagers["events"].write_table(t)

    def discard(self) -> None:
        """Remove every staged file (safe to call twice, and after ``close``: moved files are gone)."""
        for st in self.stagers.values():
            try:
                st.writer.close()
            except Exception:  # noqa: S110  already closed, or the write itself failed
                pass
            st.path.unlink(missing_ok=True)
