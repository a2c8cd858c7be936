"""``ingest_paths``: sources → warehouse partitions, one batch per run, under the write lock.

The orchestrator: it checks every input and the warehouse before writing anything, then
hands each source to its loader — our run directories to ``ingest.load``, foreign formats
to ``ingest.formats`` (their rows held to the value rules by ``ingest.rows``) — and each
batch to ``ingest.write``. Every batch gets a fresh ``ingest_batch_id`` stamped on all its
rows, replaces its run's partitions in every table and appends a row to that run's
``ingest_batches``. Unchanged input (the same sha256s as the run's last batch) writes nothing.

The exit code matches what is in the warehouse: a problem with an input or the warehouse
(missing path, unknown format, another writer or process holding the warehouse) is reported
before anything is written; a failure after some batches were written says which
(``IngestPartial``). Quarantine policy: everything valid is written first; then, if any line
was quarantined and ``allow_quarantine`` is false, ``IngestQuarantined`` (exit 2) is raised
carrying the full result, so the CLI can print the per-batch counts before failing.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ingest import load
from ingest.batch import BatchSummary, SourceBatch
from ingest.errors import IngestError
from ingest.prices import PriceTable
from ingest.rows import checked
from ingest.write import file_meta, new_batch_id, unchanged, write_batch
from warehouse import db

FORMATS = ("auto", "trialhouse", "runs-jsonl", "inspect", "harbor", "terminal-bench", "swebench",
           "mini-swe-agent")

__all__ = ["FORMATS", "BatchSummary", "IngestResult", "IngestInputError", "IngestQuarantined",
           "IngestPartial", "ingest_paths", "ingest_batch", "quarantine_sample"]


class IngestInputError(IngestError):
    """A path that cannot be ingested (missing, unknown format, bad prices file)."""


class IngestQuarantined(IngestError):
    """Raised after writing when lines were quarantined and that was not allowed."""

    def __init__(self, result: IngestResult) -> None:
        self.result = result
        super().__init__(
            f"{result.quarantined} line(s) quarantined in "
            f"{sum(1 for b in result.batches if b.quarantined)} batch(es), each with its reason in the quarantine table; "
            "fix the input, or pass --allow-quarantine to accept the rest as written"
        )


class IngestPartial(IngestError):
    """A source failed after earlier ones were written: says exactly which are in the warehouse."""

    def __init__(self, result: IngestResult, source: Path, error: BaseException) -> None:
        self.result = result
        written = ", ".join(f"{b.source} (run {b.run_id})" for b in result.batches) or "nothing"
        super().__init__(f"{source}: {error}; written before it: {written}")


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


def _events_file(path: Path, explicit: bool = False) -> Path | None:
    """The events file of a run directory, an ``events.jsonl`` file, or (with an
    explicit ``--format trialhouse``) any ``.jsonl`` file."""
    if path.is_dir() and (path / "events.jsonl").is_file():
        return path / "events.jsonl"
    if path.is_file() and (path.name.endswith("events.jsonl") or (explicit and path.suffix == ".jsonl")):
        return path
    return None


def ingest_batch(warehouse: Path, batch: SourceBatch) -> BatchSummary:
    """Write one foreign-format batch (caller holds the write lock)."""
    known = {m["path"]: m for m in batch.source_meta or []}  # hashed by the importer as it read them
    files = [known.get(str(p)) or file_meta([Path(p)])[0] for p in batch.source_files]
    if (same := unchanged(warehouse, batch.run_id, files)) is not None:
        return same
    batch = checked(batch)
    rows = {k: [dict(r) for r in v] for k, v in batch.rows.items() if k not in batch.tables}
    batch_id = new_batch_id()
    tables = {k: (_stamped(t, batch.run_id, batch_id), t.num_rows) for k, t in batch.tables.items()}
    return write_batch(
        warehouse, batch.run_id, batch_id, batch.source_format, files, rows,
        list(batch.quarantine), batch.schema_version, list(batch.notes), staged=tables,
    )


def _stamped(table, run_id: str, batch_id: str):
    """An importer's Arrow table with its run_id and ingest_batch_id columns filled in."""
    n = table.num_rows
    for name, value in (("run_id", run_id), ("ingest_batch_id", batch_id)):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), _repeated(value, n))
    return table


def _repeated(value: str, n: int):
    """``n`` copies of ``value`` as one string array, built from its buffers (``pa.repeat``
    copies the string one row at a time: a third of a second per 2M rows)."""
    import numpy as np
    import pyarrow as pa

    raw = value.encode("utf-8")
    if n * len(raw) >= 2**31:  # past int32 offsets
        return pa.repeat(pa.scalar(value, pa.string()), n)
    offsets = np.arange(0, (n + 1) * len(raw), len(raw), dtype=np.int32) if raw else np.zeros(n + 1, np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))


def _detect(path: Path, fmt: str) -> str:
    if fmt not in FORMATS:
        raise IngestInputError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
    if not path.exists():
        raise IngestInputError(f"{path}: no such file or directory")
    if fmt != "auto":
        return fmt
    if _events_file(path) is not None:
        return "trialhouse"
    from ingest.formats.detect import detect_format

    _refuse_empty(path)
    found = detect_format(path)
    if found is None:
        raise IngestInputError(
            f"{path}: cannot tell its format; pass --format "
            f"({', '.join(f for f in FORMATS if f != 'auto')})"
        )
    return found


def _refuse_empty(path: Path) -> None:
    """An empty file or directory has no format to tell: say it is empty."""
    if path.is_dir() and not any(path.iterdir()):
        raise IngestInputError(f"{path}: is an empty directory; nothing to ingest (give a run "
                               "directory, an events.jsonl or a foreign result)")
    if path.is_file() and path.stat().st_size <= 4096:
        with path.open("rb") as f:
            if not f.read().strip():
                raise IngestInputError(f"{path}: is empty (no records); nothing to ingest")


QUARANTINE_SQL = """
SELECT source_file, line, reason FROM quarantine
WHERE ingest_batch_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY source_file, line NULLS LAST, reason
LIMIT ?
"""


def quarantine_sample(warehouse: Path, result: IngestResult, limit: int = 5
                      ) -> list[tuple[str, int | None, str]]:
    """The first ``limit`` quarantined lines of ``result``'s batches (file, line, reason),
    read back from the warehouse: what the CLI prints so a reason is never only in a table."""
    ids = [b.ingest_batch_id for b in result.batches if b.quarantined and b.ingest_batch_id]
    if not ids or not Path(warehouse).is_file():
        return []
    con = db.open(warehouse, read_only=True)
    try:
        return [(str(f), n, str(r)) for f, n, r in con.execute(QUARANTINE_SQL, [ids, limit]).fetchall()]
    finally:
        con.close()


def _plan(paths: list[Path], fmt: str) -> list[tuple[Path, str, Path | None]]:
    """(path, format, events file for our runs) of every input, checked before anything is written."""
    plan = []
    for p in map(Path, paths):
        found = _detect(p, fmt)
        events = None
        if found == "trialhouse":
            events = _events_file(p, explicit=fmt == "trialhouse")
            if events is None:
                raise IngestInputError(f"{p}: no events.jsonl here (expected a run directory)")
        plan.append((p, found, events))
    return plan


def ingest_paths(
    paths: list[Path],
    warehouse: Path,
    *,
    format: str = "auto",  # noqa: A002
    prices: Path | None = None,
    allow_quarantine: bool = False,
    aliases: Path | None = None,
    labels: Path | None = None,
) -> IngestResult:
    """Ingest every path into ``warehouse``; see the module docstring for the guarantees.
    ``aliases``/``labels`` files rename and label the imported sources (``ingest.relabel``);
    they are checked against every source before anything is written."""
    warehouse = Path(warehouse)
    db.check_warehouse_path(warehouse)  # before any Parquet is written beside it
    price_table = PriceTable.load(Path(prices)) if prices is not None else None
    plan = _plan(paths, format)
    loaded = _relabelled(plan, price_table, aliases, labels)
    result = IngestResult()
    with db.write_lock(warehouse), _terminate_as_interrupt():
        db.prepare(warehouse)  # sweeps what a killed writer left; fails here if the file is held
        try:
            _ingest_all(warehouse, plan, price_table, loaded, result)
        except BaseException:
            # A SIGTERM can land between a staged file's creation and its registration with
            # the stage that removes it; holding the lock, every staged file is ours: sweep.
            db.sweep(warehouse)
            raise
        if (note := db.refresh(warehouse)) and result.batches:
            result.batches[-1].notes.append(note)
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result


def _ingest_all(warehouse: Path, plan: list[tuple[Path, str, Path | None]], price_table: PriceTable | None,
                loaded: dict[Path, list[SourceBatch]], result: IngestResult) -> None:
    """Each planned input into the warehouse, in order (caller holds the write lock)."""
    claimed: dict[str, str] = {}  # run written in this ingest → the events file it came from
    for path, fmt, events in plan:
        try:
            if events is not None:
                done = load.ingest_run(warehouse, events, price_table, claimed)
                claimed.setdefault(done.run_id, str(events))
                result.batches.append(done)
            else:
                from ingest import formats

                for batch in loaded.get(path) or formats.load(path, fmt, prices=price_table):
                    result.batches.append(ingest_batch(warehouse, batch))
        except BaseException as exc:
            if result.batches:  # what is written stays readable: views over it, then say so
                db.refresh(warehouse)
                if isinstance(exc, IngestError | db.WarehouseError):
                    raise IngestPartial(result, path, exc) from exc
            raise


def _relabelled(plan, price_table, aliases: Path | None, labels: Path | None) -> dict[Path, list[SourceBatch]]:
    """With an aliases or labels file: every foreign source read now, and both files applied
    to all of them (an error here writes nothing). Without: nothing read ahead."""
    if aliases is None and labels is None:
        return {}
    from ingest import formats, relabel
    from ingest.aliases import load_aliases, load_labels

    alias_map = load_aliases(aliases) if aliases is not None else None
    label_set = load_labels(labels) if labels is not None else None
    loaded = {path: formats.load(path, fmt, prices=price_table) for path, fmt, events in plan if events is None}
    relabel.apply([b for batches in loaded.values() for b in batches], alias_map, label_set)
    return loaded


class IngestInterrupted(IngestError):
    """SIGTERM during an ingest: what was being written is rolled back, staged files removed."""

    exit_code = 143


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into an exception while ingesting (main thread only), so every ``finally``
    runs: staged files are removed, a half-made partition swap is rolled back, the parallel
    child is stopped. (SIGKILL cannot be caught: the next writer sweeps and rolls back.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):  # noqa: ARG001
        raise IngestInterrupted("interrupted by SIGTERM; the warehouse is as it was before this batch")

    old = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
