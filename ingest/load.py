"""Load one of our ``events.jsonl`` files into the warehouse as one batch.

Streams: trials are resolved as they finish and every large table is staged to Parquet in
chunks (``ingest.stage``), then written in one step (``ingest.write``). Some files are read
again: one that needs global ordering (a finished trial resumed, or a late out-of-order
line of a finished trial) buffered; one whose first line named the wrong run
(``RunChoiceChanged``: another run has more lines) for the right run; one where a stray
line took the seq of a line in seq order without the stray (``SeqConflict``). A big file
is first tried in two processes (``ingest.parallel``), which declines anything it cannot
merge exactly.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ingest import parallel
from ingest.batch import BatchSummary
from ingest.cost import Prices
from ingest.identity import run_key
from ingest.normalize import NeedsBufferedPass, RunNormalizer
from ingest.read import ReadStats, RunChoiceChanged, SeqConflict, probe_run
from ingest.stage import RunStage
from ingest.write import file_meta, last_batch, new_batch_id, unchanged, write_batch
from runner.events import SCHEMA_VERSION

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Files at least this big are read in two processes (``ingest.parallel``)."""


def ingest_run(warehouse: Path, events_path: Path, prices: Prices | None = None) -> BatchSummary:
    """Ingest one of our ``events.jsonl`` files (caller holds the write lock)."""
    files: list[dict[str, Any]] = [{"path": str(events_path), "sha256": "", "bytes": events_path.stat().st_size}]
    peek = probe_run(events_path)
    last = last_batch(warehouse, peek) if peek is not None else None
    if last is not None and [f["bytes"] for f in json.loads(last["source_files_json"])] == [files[0]["bytes"]]:
        # Same size as last time: hash it (one pass) to decide; a new size is a new input.
        files = file_meta([events_path])
        if (same := unchanged(warehouse, peek, files, last)) is not None:  # type: ignore[arg-type]  # peek is set
            return same
    with gc_per_block():
        if files[0]["bytes"] >= PARALLEL_MIN_BYTES:
            if (done := parallel.ingest_run_split(warehouse, events_path, files, prices)) is not None:
                return done
        run_id: str | None = None
        streaming = True
        reject: dict[int, str] = {}
        while True:
            try:
                return _ingest_run(warehouse, events_path, files, prices, streaming=streaming, run_id=run_id,
                                   reject=reject)
            except NeedsBufferedPass:
                streaming = False
            except RunChoiceChanged as change:
                run_id = change.winner
            except SeqConflict as conflict:
                if conflict.lines.keys() <= reject.keys():
                    raise RuntimeError(f"{events_path}: seq conflicts did not settle") from conflict
                reject.update(conflict.lines)


@contextmanager
def gc_per_block() -> Iterator[None]:
    """Automatic cyclic GC off while reading; the scan collects the young generation per block.

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


def _ingest_run(warehouse: Path, events_path: Path, files: list[dict], prices: Prices | None, *,
                streaming: bool, run_id: str | None, reject: dict[int, str]) -> BatchSummary:
    batch_id = new_batch_id()
    src = str(events_path)
    stats = ReadStats(events_path)
    norm = RunNormalizer(src, prices, streaming=streaming, run_id=run_id)
    stage = RunStage(warehouse, batch_id)
    try:
        cols = stage.scan(events_path, stats, norm, run_id=run_id, reject=reject)
        # A file with no valid line still gets a batch (its quarantine): under a safe key of its directory.
        key = stats.run_id or run_key(events_path.resolve().parent.name)
        rows = norm.rows()
        staged = stage.close(rows, cols)
        files[0]["sha256"], files[0]["bytes"] = stats.sha256, stats.size
        return write_batch(
            warehouse, key, batch_id, "trialhouse", files, rows,
            stats.quarantine + norm.quarantine, SCHEMA_VERSION, stats.notes() + norm.notes, staged,
        )
    finally:
        stage.discard()
