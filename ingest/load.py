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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contract.chain import ChainVerdict, read_seal
from contract.envelope import SCHEMA_VERSION
from ingest import parallel
from ingest.batch import BatchSummary, QuarantineRow
from ingest.chain import ChainFollower, assess, integrity_label, keyed, verify_file
from ingest.cost import Prices
from ingest.identity import path_key, run_key
from ingest.normalize import NeedsBufferedPass, RunNormalizer
from ingest.read import RunChoiceChanged, SeqConflict, probe_run
from ingest.read_stats import ReadStats
from ingest.stage import RunStage
from ingest.write import file_meta, last_batch, new_batch_id, unchanged, write_batch

PARALLEL_MIN_BYTES = 64 * 1024 * 1024
"""Files at least this big are read in two processes (``ingest.parallel``)."""


class RunClaimed(Exception):
    """The file's run was already written from another file in this ingest: read the file again
    with every line of that run refused (a run is one events file; see ``ingest_run``)."""

    def __init__(self, run_id: str, by: str, lines: int) -> None:
        super().__init__(run_id)
        self.run_id, self.by, self.lines = run_id, by, lines


def ingest_run(warehouse: Path, events_path: Path, prices: Prices | None = None,
               claimed: Mapping[str, str] | None = None) -> BatchSummary:
    """Ingest one of our ``events.jsonl`` files (caller holds the write lock).

    ``claimed`` maps the runs already written in this ingest to the file each came from. A
    run is one events file, and writing a run replaces its partition, so a second file of
    the same run would silently replace the first: its lines of that run are quarantined
    instead (the reason names the first file), under a key of its own directory.
    """
    claimed = claimed or {}
    files: list[dict[str, Any]] = [{"path": str(events_path), "sha256": "", "bytes": events_path.stat().st_size}]
    peek = probe_run(events_path)
    last = last_batch(warehouse, peek) if peek is not None and peek not in claimed else None
    if last is not None and [f["bytes"] for f in json.loads(last["source_files_json"])] == [files[0]["bytes"]]:
        # Same size as last time: hash it (one pass) to decide; a new size is a new input.
        files = file_meta([events_path])
        if (same := unchanged(warehouse, peek, files, last)) is not None:  # type: ignore[arg-type]  # peek is set
            return same
    with gc_per_block():
        if files[0]["bytes"] >= PARALLEL_MIN_BYTES:
            if (done := parallel.ingest_run_split(warehouse, events_path, files, prices, claimed)) is not None:
                return done
        run_id: str | None = None
        streaming = True
        reject: dict[int, str] = {}
        verdict: ChainVerdict | None = None
        while True:
            try:
                return _ingest_run(warehouse, events_path, files, prices, streaming=streaming, run_id=run_id,
                                   reject=reject, verdict=verdict, claimed=claimed)
            except RunClaimed as taken:
                run_id = taken.run_id
                why = (f"run {taken.run_id!r} was already read from {taken.by} in this ingest: a run is one "
                       "events file (ingest this file on its own to replace that run with it)")
                reject = dict.fromkeys(range(1, taken.lines + 1), why)
            except NeedsBufferedPass:
                streaming = False
            except RunChoiceChanged as change:
                run_id = change.winner
            except SeqConflict as conflict:
                if conflict.lines.keys() <= reject.keys():
                    raise RuntimeError(f"{events_path}: seq conflicts did not settle") from conflict
                reject.update(conflict.lines)
            except ChainRefused as refused:  # lines the hash chain does not vouch for: read again without them
                verdict = refused.verdict
                reject.update(refused.verdict.rejected)


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


class ChainRefused(Exception):
    """The file's hash chain refuses lines: read it again with them quarantined."""

    def __init__(self, verdict: ChainVerdict) -> None:
        super().__init__(f"{len(verdict.rejected)} line(s) off the hash chain")
        self.verdict = verdict


def chain_integrity(events_path: Path, run_id: str | None, follower: ChainFollower | None,
                    verdict: ChainVerdict | None, reject: dict[int, str]) -> tuple[str | None, list[str]]:
    """The run's ``integrity`` label and notes; raises ``ChainRefused`` for lines to refuse."""
    if run_id is None or follower is None:
        return None, []
    if verdict is None:
        outcome = assess(follower, run_id, read_seal(events_path))
        if not outcome.verify:
            label, more = keyed(outcome.integrity, events_path)
            return label, outcome.notes + more
        verdict = verify_file(events_path, run_id)
        if set(verdict.rejected) - set(reject):
            raise ChainRefused(verdict)
    notes = [f"{events_path}: {note}" for note in verdict.notes]
    label, more = keyed(integrity_label(verdict), events_path)
    return label, notes + more


def _ingest_run(warehouse: Path, events_path: Path, files: list[dict], prices: Prices | None, *,
                streaming: bool, run_id: str | None, reject: dict[int, str],
                verdict: ChainVerdict | None = None, claimed: Mapping[str, str]) -> BatchSummary:
    batch_id = new_batch_id()
    src = str(events_path)
    stats = ReadStats(events_path)
    seal = read_seal(events_path)
    stats.chain = ChainFollower(seal_head=seal.head if seal is not None else None)
    norm = RunNormalizer(src, prices, streaming=streaming, run_id=run_id)
    stage = RunStage(warehouse, batch_id)
    try:
        cols = stage.scan(events_path, stats, norm, run_id=run_id, reject=reject)
        integrity, chain_notes = chain_integrity(events_path, stats.run_id, stats.chain, verdict, reject)
        owner = claimed.get(stats.run_id, src) if stats.run_id is not None else src
        taken = owner != src
        if taken and stats.accepted:
            raise RunClaimed(stats.run_id, owner, stats.lines)  # type: ignore[arg-type]  # taken: run_id is set
        # A file with no valid line still gets a batch (its quarantine): under a safe key of its
        # directory (also when its run was written from another file in this ingest).
        key = stats.run_id if stats.run_id and not taken else run_key(events_path.resolve().parent.name)
        if key in claimed and claimed[key] != src:
            key = run_key(f"{key}-{path_key(events_path)}")
        rows = norm.rows()
        quarantine = stats.quarantine + norm.quarantine
        if stats.accepted == 0:  # no run: nothing but the record of why
            for table in ("runs", "configs", "cases", "criteria", "skipped_trials"):
                rows[table] = []
            quarantine.append(QuarantineRow(src, None, "the file holds no valid event of any run: no run "
                                            "was created", ""))
        if rows.get("runs") and integrity is not None:
            rows["runs"][0]["integrity"] = integrity
        staged = stage.close(rows, cols)
        files[0]["sha256"], files[0]["bytes"] = stats.sha256, stats.size
        return write_batch(
            warehouse, key, batch_id, "trialhouse", files, rows, quarantine, SCHEMA_VERSION,
            stats.notes() + norm.notes + chain_notes, staged,
        )
    finally:
        stage.discard()
