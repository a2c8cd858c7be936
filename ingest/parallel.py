"""Two-process ingest of one large ``events.jsonl``: split at a line boundary, merge at the end.

Why: validating every line with pydantic and normalising it is CPU-bound Python; a
second core roughly halves the wall time. The parent reads the first half while a
child process reads the second half into its own staged Parquet parts; the parent
then merges the child's run-level state and unresolved trials and writes one batch.

The split must not change the result, so anything it could change sends the file
back to the one-process path (``None`` is returned and nothing is written):
the first line is not a valid ``run_started`` or the run has more than one; a stray line took
the seq of a line in seq order (``ingest.read.SeqConflict``); a seq in
the second half is not above every seq of the first (duplicates or out-of-order lines
across the split); a trial resolved in one half has events in the other; a line of
another run in either half (the file's run is then decided over the whole file); the
child needed a buffered pass. Trials that straddle the split are merged and resolved at
the end, which is what the one-process path yields for them too.

The child never outlives the parent: it watches its stdin, a pipe only the parent holds,
and exits (removing what it staged) when that pipe closes — also when the parent is killed.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from contract.chain import read_seal
from contract.envelope import SCHEMA_VERSION
from contract.events import EVENT_ADAPTER
from contract.run_events import RunStarted
from ingest.batch import BatchSummary
from ingest.chain import ChainFollower, assess, keyed
from ingest.cost import Prices
from ingest.file_halves import NO_HASH, FileHash, lines_before, split_point
from ingest.normalize import NeedsBufferedPass, NormalizerState, RunNormalizer
from ingest.read import SeqConflict
from ingest.read_stats import ReadStats
from ingest.stage import RunStage
from ingest.write import new_batch_id, write_batch
from warehouse import db


@dataclass
class HalfResult:
    """What the child hands back: its staged parts, reader stats and normaliser state."""

    fallback: bool = False
    staged: dict[str, tuple[Path, int]] = field(default_factory=dict)
    stats: ReadStats | None = None
    state: NormalizerState = field(default_factory=NormalizerState)


_STAGE: RunStage | None = None
"""The child's stage, for the watchdog that removes its files when the parent goes away."""


def _second_half(
    warehouse: Path, events_path: Path, start: int, end: int, head: bytes, prices: Prices | None, batch_id: str,
) -> HalfResult:
    """Child process: read ``[start, end)`` of the run named by its first line ``head``."""
    import gc

    global _STAGE
    gc.disable()
    rs = EVENT_ADAPTER.validate_json(head)
    assert isinstance(rs, RunStarted), "the parent checked the first line"
    norm = RunNormalizer(str(events_path), prices, streaming=True)
    norm.continue_from(rs)
    stats = ReadStats(events_path)
    seal = read_seal(events_path)
    stats.chain = ChainFollower(seal_head=seal.head if seal is not None else None)
    stage = _STAGE = RunStage(warehouse, batch_id)
    try:
        first_line = lines_before(events_path, start) + 1
        cols = stage.scan(events_path, stats, norm, run_id=rs.run_id, start=start, end=end,
                          first_line=first_line, hasher=NO_HASH)  # the parent hashes the file
        if stats.foreign:  # the file's run is decided over the whole file: one process does it
            stage.discard()
            return HalfResult(fallback=True)
    except NeedsBufferedPass:
        stage.discard()
        return HalfResult(fallback=True)
    except BaseException:
        stage.discard()
        raise
    staged = stage.close(norm.drain(), cols)
    return HalfResult(staged=staged, stats=stats, state=norm.state())


class _Child:
    """The second half in a fresh interpreter (``python -m ingest.parallel IN OUT``).

    A subprocess rather than ``multiprocessing``: spawn would re-import the caller's
    ``__main__`` (re-running an unguarded script), and fork is unsafe with the thread
    pools pyarrow and DuckDB may have started. Arguments and result travel as pickles
    in the warehouse's staging area.
    """

    def __init__(self, stage: Path, args: tuple) -> None:
        self.args_path = stage.with_suffix(".args.pkl")
        self.out_path = stage.with_suffix(".out.pkl")
        with self.args_path.open("wb") as f:
            pickle.dump(args, f, protocol=pickle.HIGHEST_PROTOCOL)
        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (root, os.environ.get("PYTHONPATH")) if x)}
        # stdin is the lifeline: only this process holds its write end (close_fds), so it closes
        # when this process exits in any way, and the child then stops (``_watch_parent``).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ingest.parallel", str(self.args_path), str(self.out_path)], env=env,
            stdin=subprocess.PIPE, close_fds=True,
        )

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._close_lifeline()
        self._cleanup()

    def _close_lifeline(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def result(self) -> HalfResult | None:
        rc = self.proc.wait()
        self._close_lifeline()
        try:
            if rc != 0 or not self.out_path.exists():
                return None
            with self.out_path.open("rb") as f:
                return pickle.load(f)  # noqa: S301  written by our own child just now
        finally:
            self._cleanup()

    def _cleanup(self) -> None:
        self.args_path.unlink(missing_ok=True)
        self.out_path.unlink(missing_ok=True)


def _watch_parent() -> None:
    """Child: block on stdin (the parent's lifeline); when it closes before we are done, the
    parent is gone — remove what this child staged and exit at once."""
    try:
        while os.read(0, 1 << 16):  # the raw descriptor: a buffered reader would block shutdown
            pass
    except OSError:
        pass
    stage = _STAGE
    for path in stage.paths if stage is not None else []:
        path.unlink(missing_ok=True)
    os._exit(3)


def _child_main(args_path: str, out_path: str) -> None:
    threading.Thread(target=_watch_parent, daemon=True, name="parent-watch").start()
    with open(args_path, "rb") as f:
        args = pickle.load(f)  # noqa: S301  written by our own parent
    result = _second_half(*args)
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, out_path)


def _unlink_parts(half: HalfResult) -> None:
    for path, _n in half.staged.values():
        path.unlink(missing_ok=True)


def _first_line_run(events_path: Path) -> tuple[RunStarted, bytes] | None:
    """The file's first line when it is a valid ``run_started`` (the event and the line), else None."""
    with events_path.open("rb") as f:
        head = f.readline(1 << 20).rstrip(b"\n").rstrip(b"\r")
    try:
        rs = EVENT_ADAPTER.validate_json(head)
    except ValueError:
        return None
    return (rs, head) if isinstance(rs, RunStarted) else None


def _halves_disagree(half: HalfResult, stats: ReadStats, norm: RunNormalizer) -> bool:
    """Whether merging the halves could give another result than one process reading the file:
    the child fell back, a line of another run, more than one ``run_started``, a seq of the
    second half not above every seq of the first, or a trial resolved in one half with events
    in the other."""
    hs, other = half.stats, half.state
    return bool(
        half.fallback
        or hs is None
        or stats.foreign
        or norm.starts != 1
        or other.started
        or (hs.accepted and stats.accepted and hs.min_seq <= stats.max_seq)
        or not other.resolved.isdisjoint(norm.pending_ids())
        or not other.resolved.isdisjoint(norm.resolved)
        or not norm.resolved.isdisjoint(other.pending.keys())
    )


def _add_half(stats: ReadStats, hs: ReadStats) -> None:
    """The second half's reading counted into the first half's ``stats`` (the file's end is the second half's)."""
    stats.lines += hs.lines
    stats.accepted += hs.accepted
    stats.duplicates += hs.duplicates
    stats.upgraded += hs.upgraded
    stats.out_of_order += hs.out_of_order
    stats.torn_bytes = hs.torn_bytes
    stats.bytes_read = hs.bytes_read
    stats.quarantine += hs.quarantine


def ingest_run_split(warehouse: Path, events_path: Path, files: list[dict],
                     prices: Prices | None, claimed: Mapping[str, str] | None = None) -> BatchSummary | None:
    """Ingest one file in two processes; ``None`` when the one-process path must do it (also for
    a run already written from another file in this ingest: ``ingest.load.ingest_run``)."""
    size = events_path.stat().st_size
    started = _first_line_run(events_path)
    if started is None or started[0].run_id in (claimed or {}) or (mid := split_point(events_path, size)) is None:
        return None
    rs, head = started
    batch_id = new_batch_id()
    src = str(events_path)
    stats = ReadStats(events_path)
    seal = read_seal(events_path)
    stats.chain = ChainFollower(seal_head=seal.head if seal is not None else None)
    norm = RunNormalizer(src, prices, streaming=True, run_id=rs.run_id)
    stage = RunStage(warehouse, batch_id)
    half: HalfResult | None = None
    child = _Child(db.staging_file(warehouse, "events"), (warehouse, events_path, mid, size, head, prices, batch_id))
    hasher = FileHash(events_path, size)
    try:
        try:
            cols = stage.scan(events_path, stats, norm, run_id=rs.run_id, end=mid, hasher=NO_HASH)
            # Write out what is resolved while the child is still reading (shorter serial tail).
            stage.flush_events(cols)
            stage.add_rows(norm.drain(), flush=True)
        except SeqConflict:  # settled by the one-process path, which re-reads the whole file
            child.kill()
            hasher.cancel()
            stage.discard()
            return None
        except BaseException:
            child.kill()
            raise
        half = child.result()
        if half is None:  # the child failed: one process does it all
            hasher.cancel()
            stage.discard()
            return None
        hs = half.stats
        chain = None if hs is None or stats.chain is None or hs.chain is None else stats.chain.then(hs.chain)
        outcome = assess(chain, rs.run_id, seal) if chain is not None else None
        # outcome.verify: lines to refuse, and the one-process path verifies the whole chain
        if outcome is None or outcome.verify or _halves_disagree(half, stats, norm):
            hasher.cancel()
            stage.discard()
            _unlink_parts(half)
            return None
    except BaseException:
        hasher.cancel()
        stage.discard()
        if half is not None:
            _unlink_parts(half)
        raise
    try:
        # Merge the child's state into the first half's normaliser, then resolve as usual.
        norm.merge(half.state)
        rows = norm.rows()
        if rows.get("runs"):
            rows["runs"][0]["integrity"], keyed_notes = keyed(outcome.integrity, events_path)
            norm.notes += keyed_notes
        mine = stage.close(rows, cols)
        staged: dict = {}
        for name in mine.keys() | half.staged.keys():
            parts = [x for x in (mine.get(name), half.staged.get(name)) if x is not None]
            staged[name] = ([p for p, _n in parts], sum(n for _p, n in parts))
        assert half.stats is not None  # checked above
        _add_half(stats, half.stats)
        stats.size, stats.sha256 = size, hasher.hexdigest()  # the bytes both halves read
        files[0]["sha256"], files[0]["bytes"] = stats.sha256, stats.size
        return write_batch(
            warehouse, rs.run_id, batch_id, "trialhouse", files, rows,
            stats.quarantine + norm.quarantine, SCHEMA_VERSION,
            stats.notes() + norm.notes + [f"{events_path}: {n}" for n in outcome.notes], staged,
        )
    finally:
        stage.discard()
        _unlink_parts(half)


class _NoPandas:
    """A ``sys.meta_path`` entry that makes ``import pandas`` fail; installed in the child only.

    pyarrow imports pandas (if installed) on its first conversion of a Python list, only
    to ask whether the list is a pandas object: ≈ 0.3–0.45 CPU s, on the child's start-up
    path, for a module the child never uses. Hidden, pyarrow records "no pandas" and goes
    on. (A ``None`` in ``sys.modules`` is not enough: pyarrow's compiled import takes it as
    the module.) Should anything in the child need pandas after all, the child fails and
    the file is ingested by the one-process path.
    """

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden in the ingest child)", name=name)
        return None


if __name__ == "__main__":  # the child: run through the importable module so pickles name it
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())
    from ingest import parallel

    parallel._child_main(sys.argv[1], sys.argv[2])
