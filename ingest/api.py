"""``ingest_paths``: sources → warehouse partitions, one batch per run, under the write lock.

Each source becomes one or more ``SourceBatch``-shaped results (our run directories are
read here; foreign formats through ``ingest.formats``). Every batch gets a fresh
``ingest_batch_id`` stamped on all its rows, replaces its run's partitions in every
table (so a run ingested while still being written and again when finished ends in
exactly its final state) and appends a row to that run's ``ingest_batches``.

Unchanged input is skipped: when the source files' sha256 equal those of the run's
last batch nothing is written and no batch is added.

Quarantine policy: everything valid is written first; then, if any line was
quarantined and ``allow_quarantine`` is false, ``IngestQuarantined`` (exit 2) is raised
carrying the full result, so the CLI can print the per-batch counts before failing.
"""

from __future__ import annotations

import gc
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.batch import QuarantineRow, SourceBatch
from ingest.errors import IngestError
from ingest.normalize import (
    TRIAL_COLUMNS,
    TRIAL_TABLES,
    EventsColumns,
    NeedsBufferedPass,
    RunNormalizer,
)
from ingest.read import ReadStats, file_sha256, peek_run_id, read_blocks
from runner.events import SCHEMA_VERSION
from warehouse import db
from warehouse.schema import TABLES, table_from_rows

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Files at least this big are read in two processes (``ingest.parallel``)."""

FORMATS = ("auto", "trialhouse", "runs-jsonl", "inspect", "harbor", "terminal-bench", "swebench")


class IngestInputError(IngestError):
    """A path that cannot be ingested (missing, unknown format, bad prices file)."""


class IngestQuarantined(IngestError):
    """Raised after writing when lines were quarantined and that was not allowed."""

    def __init__(self, result: IngestResult) -> None:
        self.result = result
        super().__init__(
            f"{result.quarantined} line(s) quarantined in "
            f"{sum(1 for b in result.batches if b.quarantined)} batch(es); see the quarantine "
            "table (trialhouse sql on the quarantine table) or pass --allow-quarantine"
        )


@dataclass
class BatchSummary:
    run_id: str
    source_format: str
    source: str
    rows: dict[str, int]
    quarantined: int
    notes: list[str] = field(default_factory=list)
    ingest_batch_id: str | None = None
    unchanged: bool = False
    """True when the input matched the run's last batch and nothing was written."""


@dataclass
class IngestResult:
    batches: list[BatchSummary] = field(default_factory=list)

    @property
    def quarantined(self) -> int:
        return sum(b.quarantined for b in self.batches)

    @property
    def rows(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for b in self.batches:
            for k, v in b.rows.items():
                out[k] = out.get(k, 0) + v
        return out

    def to_dict(self) -> dict:
        return {
            "batches": [asdict(b) for b in self.batches],
            "totals": {"rows": self.rows, "quarantined": self.quarantined, "batches": len(self.batches)},
        }


def new_batch_id() -> str:
    """Time-ordered, unique: ``<UTC timestamp>-<8 hex>``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{uuid.uuid4().hex[:8]}"


def _file_meta(paths: list[Path]) -> list[dict]:
    out = []
    for p in paths:
        sha, size = file_sha256(p)
        out.append({"path": str(p), "sha256": sha, "bytes": size})
    return out


def _last_batch(warehouse: Path, run_id: str) -> dict | None:
    try:
        table = db.read_partition(warehouse, "ingest_batches", run_id)
    except Exception:  # a run_id that cannot be a partition name: nothing stored
        return None
    if table is None or table.num_rows == 0:
        return None
    rows = sorted(table.to_pylist(), key=lambda r: (r["ingested_at"], r["ingest_batch_id"]))
    return rows[-1]


def _unchanged(warehouse: Path, run_id: str, files: list[dict]) -> BatchSummary | None:
    last = _last_batch(warehouse, run_id)
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


def _write(
    warehouse: Path,
    run_id: str,
    batch_id: str,
    source_format: str,
    files: list[dict],
    rows: dict[str, list[dict]],
    quarantine: list[QuarantineRow],
    schema_version: int | None,
    notes: list[str],
    staged: dict[str, tuple[Path, int]] | None = None,
) -> BatchSummary:
    """Stamp, write every table partition of ``run_id`` and append its batch row."""
    staged = staged or {}
    tables: dict = {}
    counts: dict[str, int] = {}
    qrows = [
        {"source_file": q.source_file, "line": q.line, "reason": q.reason, "raw_text": q.raw_text}
        for q in quarantine
    ]
    for name in TABLES:
        if name == "ingest_batches":
            continue
        if name in staged:
            tables[name], counts[name] = staged[name]
            continue
        table_rows = qrows if name == "quarantine" else rows.get(name, [])
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
        "trialhouse_version": _version(),
    }])
    old = db.read_partition(warehouse, "ingest_batches", run_id)
    if old is not None:
        new = pa.concat_tables([old.append_column("run_id", pa.array([run_id] * old.num_rows)).select(new.schema.names).cast(new.schema), new])
    tables["ingest_batches"] = new
    db.replace_run(warehouse, run_id, tables)
    return BatchSummary(
        run_id=run_id, source_format=source_format, source=files[0]["path"] if files else "",
        rows={k: v for k, v in counts.items() if k != "quarantine"}, quarantined=counts["quarantine"],
        notes=notes, ingest_batch_id=batch_id,
    )


def _version() -> str:
    from runner.run import engine_version

    return engine_version()


def _events_file(path: Path, explicit: bool = False) -> Path | None:
    """The events file of a run directory, an ``events.jsonl`` file, or (with an
    explicit ``--format trialhouse``) any ``.jsonl`` file."""
    if path.is_dir() and (path / "events.jsonl").is_file():
        return path / "events.jsonl"
    if path.is_file() and (path.name.endswith("events.jsonl") or (explicit and path.suffix == ".jsonl")):
        return path
    return None


def _tuples_batch(name: str, schema: pa.Schema, names: tuple[str, ...], rows: list, batch_id: str) -> pa.RecordBatch:
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


class _Stager:
    """Streams one table's rows of one run into a staged Parquet file in chunks.

    Per-trial tables come as row tuples (``add``); the ``events`` table as Arrow tables
    from ``EventsColumns`` (``write_table``).
    """

    def __init__(self, warehouse: Path, name: str, run_id: str, batch_id: str, chunk: int = 50_000) -> None:
        self.name, self.run_id, self.batch_id, self.chunk = name, run_id, batch_id, chunk
        self.path = db.staging_file(warehouse, name)
        self.schema = pa.schema([f for f in TABLES[name] if f.name != "run_id"])
        self.columns = TRIAL_COLUMNS.get(name, ())
        self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd",
                                       use_dictionary=_dictionary_columns(self.schema))
        self.buf: list[pa.RecordBatch] = []
        self.nbuf = 0
        self.n = 0

    def add(self, rows: list[tuple]) -> None:
        """Turn rows into Arrow now (while their values are still in the CPU cache); write per chunk."""
        if rows:
            self.buf.append(_tuples_batch(self.name, self.schema, self.columns, rows, self.batch_id))
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


_UNIQUE_COLUMNS = frozenset({"payload_json", "seq", "line", "trial_id", "source_key"})
"""Columns (besides timestamps) whose values are (nearly) all distinct: no Parquet dictionary."""


def _dictionary_columns(schema: pa.Schema) -> list[str]:
    """Columns worth a Parquet dictionary: not the (nearly) unique ones.

    A dictionary of distinct values is pure cost: the writer hashes every value into a
    dictionary as large as the column (a 100k-row chunk stays under the 1 MB limit at which
    it would fall back to plain) and the file comes out larger. A dictionary of whole event
    lines (``payload_json``) made writing ~30 % slower; without dictionaries for ``seq``,
    ``line``, ``ts`` and the trial ids the staged files are written ≈ 20 % faster and are
    ≈ 30 % smaller; every value read back is the same.
    """
    return [f.name for f in schema if f.name not in _UNIQUE_COLUMNS and not pa.types.is_timestamp(f.type)]


def ingest_run(warehouse: Path, events_path: Path, prices=None) -> BatchSummary:
    """Ingest one of our ``events.jsonl`` files (caller holds the write lock).

    Streams: trials are resolved as they finish and every large table is written to
    staged Parquet in chunks. A file that needs global ordering (a finished trial
    resumed, or a late out-of-order line of a finished trial) is read a second time
    in buffered mode.
    """
    files = [{"path": str(events_path), "sha256": "", "bytes": events_path.stat().st_size}]
    peek = peek_run_id(events_path)
    last = _last_batch(warehouse, peek) if peek is not None else None
    if last is not None and [f["bytes"] for f in json.loads(last["source_files_json"])] == [files[0]["bytes"]]:
        # Same size as last time: hash it (one pass) to decide; a new size is a new input.
        files = _file_meta([events_path])
        if (same := _unchanged(warehouse, peek, files)) is not None:
            return same
    with _gc_per_block():
        try:
            if files[0]["bytes"] >= PARALLEL_MIN_BYTES:
                from ingest.parallel import ingest_run_split

                if (done := ingest_run_split(warehouse, events_path, files, prices)) is not None:
                    return done
            return _ingest_run(warehouse, events_path, files, prices, streaming=True)
        except NeedsBufferedPass:
            return _ingest_run(warehouse, events_path, files, prices, streaming=False)


@contextmanager
def _gc_per_block() -> Iterator[None]:
    """Automatic cyclic GC off while reading; the loop collects the young generations per block.

    Ingest keeps many validated models alive at once (a block, trials in flight), and
    CPython's default thresholds (a collection every 700 allocations) then spend about
    as much time scanning them as pydantic spends validating. Refcounting still frees
    everything; the per-block ``gc.collect(0)`` bounds cyclic garbage (e.g. from errors).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _new_stagers(warehouse: Path, run_id: str, batch_id: str, stagers: dict[str, _Stager]) -> None:
    if "events" not in stagers:
        stagers["events"] = _Stager(warehouse, "events", run_id, batch_id)
    for name in TRIAL_TABLES:
        if name not in stagers:
            stagers[name] = _Stager(warehouse, name, run_id, batch_id)


def _close_stagers(warehouse: Path, run_id: str, batch_id: str, stagers: dict[str, _Stager], rows: dict, cols) -> dict:
    """Flush the buffered events, stage the per-trial rows, close every stager."""
    if cols is not None and (t := cols.flush()) is not None:
        stagers["events"].write_table(t)
    if any(rows.get(name) for name in TRIAL_TABLES):
        _new_stagers(warehouse, run_id, batch_id, stagers)
    for name in TRIAL_TABLES:
        if name in stagers:
            stagers[name].add(rows.pop(name))
    return {name: st.close() for name, st in stagers.items()}


def _scan(
    warehouse: Path, events_path: Path, stats: ReadStats, norm: RunNormalizer, batch_id: str,
    stagers: dict[str, _Stager], **range_kw,
) -> EventsColumns | None:
    """Read (a byte range of) the file into ``norm``; the events table and resolved trials go
    to ``stagers`` (created on the first accepted event). Returns the events buffer."""
    src = str(events_path)
    cols: EventsColumns | None = None
    add = norm.add_block
    for block in read_blocks(events_path, stats, **range_kw):
        kept = add(block)
        del block
        if kept.events:
            if cols is None:
                cols = EventsColumns(norm.run_id, src, batch_id)
                _new_stagers(warehouse, norm.run_id, batch_id, stagers)
            if (t := cols.add_block(kept)) is not None:
                stagers["events"].write_table(t)
                del t
            if norm.n_ready >= 1000:
                for name, rows in norm.drain().items():
                    stagers[name].add(rows)
        del kept
        # Automatic GC is off (_gc_per_block): collect the youngest generation once per block,
        # after the block is dropped, so only objects still alive (trials in flight) are scanned.
        gc.collect(0)
    return cols


def _discard(stagers: dict[str, _Stager]) -> None:
    for st in stagers.values():
        try:
            st.writer.close()
        except Exception:  # already closed
            pass
        st.path.unlink(missing_ok=True)


def _ingest_run(warehouse: Path, events_path: Path, files: list[dict], prices, *, streaming: bool) -> BatchSummary:
    batch_id = new_batch_id()
    src = str(events_path)
    stats = ReadStats(events_path)
    norm = RunNormalizer(src, prices, streaming=streaming)
    stagers: dict[str, _Stager] = {}
    try:
        cols = _scan(warehouse, events_path, stats, norm, batch_id, stagers)
        run_id = norm.run_id or events_path.resolve().parent.name
        rows = norm.rows()
        staged = _close_stagers(warehouse, run_id, batch_id, stagers, rows, cols)
        files[0]["sha256"], files[0]["bytes"] = stats.sha256, stats.size
        return _write(
            warehouse, run_id, batch_id, "trialhouse", files, rows,
            stats.quarantine + norm.quarantine, SCHEMA_VERSION, stats.notes() + norm.notes, staged,
        )
    finally:
        _discard(stagers)


def ingest_batch(warehouse: Path, batch: SourceBatch) -> BatchSummary:
    """Write one foreign-format batch (caller holds the write lock)."""
    files = _file_meta([Path(p) for p in batch.source_files])
    if (same := _unchanged(warehouse, batch.run_id, files)) is not None:
        return same
    rows = {k: [dict(r) for r in v] for k, v in batch.rows.items()}
    return _write(
        warehouse, batch.run_id, new_batch_id(), batch.source_format, files, rows,
        list(batch.quarantine), batch.schema_version, list(batch.notes),
    )


def _detect(path: Path, fmt: str) -> str:
    if fmt not in FORMATS:
        raise IngestInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not path.exists():
        raise IngestInputError(f"{path}: no such file or directory")
    if fmt != "auto":
        return fmt
    if _events_file(path) is not None:
        return "trialhouse"
    try:
        from ingest.formats.detect import detect_format
    except ImportError:
        detect_format = None
    found = detect_format(path) if detect_format else None
    if found is None:
        raise IngestInputError(
            f"{path}: cannot tell its format; pass --format "
            f"({', '.join(f for f in FORMATS if f != 'auto')})"
        )
    return found


def ingest_paths(
    paths: list[Path],
    warehouse: Path,
    *,
    format: str = "auto",  # noqa: A002
    prices: Path | None = None,
    allow_quarantine: bool = False,
) -> IngestResult:
    """Ingest every path into ``warehouse``; see the module docstring for the guarantees."""
    warehouse = Path(warehouse)
    db.check_warehouse_path(warehouse)  # before any Parquet is written beside it
    price_table = None
    if prices is not None:
        from ingest.prices import PriceTable

        price_table = PriceTable.load(Path(prices))
    plan = [(Path(p), _detect(Path(p), format)) for p in paths]
    result = IngestResult()
    with db.write_lock(warehouse):
        for path, fmt in plan:
            if fmt == "trialhouse":
                events = _events_file(path, explicit=format == "trialhouse")
                if events is None:
                    raise IngestInputError(f"{path}: no events.jsonl here (expected a run directory)")
                result.batches.append(ingest_run(warehouse, events, price_table))
            else:
                from ingest import formats

                for batch in formats.load(path, fmt, prices=price_table):
                    result.batches.append(ingest_batch(warehouse, batch))
        db.open(warehouse).close()  # refresh the views, apply migrations
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result
