"""Two-process ingest of one large ``events.jsonl``: split at a line boundary, merge at the end.

Why: validating every line with pydantic and normalising it is CPU-bound Python; a
second core roughly halves the wall time. The parent reads the first half while a
child process reads the second half into its own staged Parquet parts; the parent
then merges the child's run-level state and unresolved trials and writes one batch.

The split must not change the result, so anything it could change sends the file
back to the one-process path (``None`` is returned and nothing is written):
the first line is not a valid ``run_started`` or the run has more than one; a seq in
the second half is not above every seq of the first (duplicates or out-of-order lines
across the split); a trial resolved in one half has events in the other; the first
accepted event is not the run in the first line; the child needed a buffered pass.
Trials that straddle the split are merged and resolved at the end, which is what the
one-process path yields for them too.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ingest.batch import QuarantineRow
from ingest.normalize import NeedsBufferedPass, RunNormalizer
from ingest.read import _CHUNK, ReadStats
from ingest.seen import TrialIds
from runner.events import EVENT_ADAPTER, SCHEMA_VERSION, RunStarted
from warehouse import db

CHILD_LAG_BYTES = 1024 * 1024
"""The child starts late (interpreter, imports) and the parent flushes its rows while it waits,
but the parent also pays pyarrow's pandas import that the child skips (``_NoPandas``): the
parent takes this much more, plus ``1 / CHILD_LAG_PER`` of the file."""
CHILD_LAG_PER = 112
"""The child's work grows faster with the file than the parent's (it first counts the lines
before its half: 1.2 s at 10M events): the parent takes 1/112 of the file more. Measured:
at 1M events (300 MB) 6 MB of lag in all left the child 0.6 s early and 2 MB 0.6 s late; at
10M (3 GB) 4 MB left it 2.1 s late and 18.6 MB 1.4 s late."""


def split_point(path: Path, size: int) -> int | None:
    """Offset just after the first newline at or past the middle, moved ``CHILD_LAG_BYTES`` +
    ``size / CHILD_LAG_PER`` (at most an eighth of the file) towards the end (None when there is none)."""
    at = size // 2 + min(size // 8, CHILD_LAG_BYTES + size // CHILD_LAG_PER)
    with path.open("rb") as f:
        f.seek(at)
        pos = at
        while pos < size:
            chunk = f.read(min(_CHUNK, size - pos))
            if not chunk:
                return None
            nl = chunk.find(b"\n")
            if nl >= 0:
                return pos + nl + 1 if pos + nl + 1 < size else None
            pos += len(chunk)
    return None


def _lines_before(path: Path, offset: int) -> int:
    n = 0
    with path.open("rb") as f:
        left = offset
        while left > 0 and (chunk := f.read(min(4 * _CHUNK, left))):
            n += chunk.count(b"\n")
            left -= len(chunk)
    return n


@dataclass
class HalfResult:
    """What the child hands back: its staged parts, reader stats and normaliser state."""

    fallback: bool = False
    staged: dict[str, tuple[Path, int]] = field(default_factory=dict)
    stats: ReadStats | None = None
    run_id: str | None = None
    started: int = 0
    finished: object = None
    validated: dict = field(default_factory=dict)
    controls: list = field(default_factory=list)
    pending: dict[str, list] = field(default_factory=dict)
    resolved: TrialIds = field(default_factory=TrialIds)
    incomplete: int = 0
    run_level_other: int = 0
    notes: list[str] = field(default_factory=list)
    quarantine: list[QuarantineRow] = field(default_factory=list)


def _second_half(
    warehouse: Path, events_path: Path, start: int, end: int, head: bytes, prices, batch_id: str,
) -> HalfResult:
    """Child process: read ``[start, end)`` with the run's first line as context."""
    import gc

    from ingest.api import _close_stagers, _discard, _scan

    gc.disable()
    rs = EVENT_ADAPTER.validate_json(head)
    norm = RunNormalizer(str(events_path), prices, streaming=True)
    norm.need_start = True
    norm.run_id = rs.run_id
    norm._started.append(rs)
    stats = ReadStats(events_path)
    stagers: dict = {}
    try:
        first_line = _lines_before(events_path, start) + 1
        cols = _scan(warehouse, events_path, stats, norm, batch_id, stagers,
                     start=start, end=end, first_line=first_line, hasher=_NO_HASH)  # the parent hashes the file
    except NeedsBufferedPass:
        _discard(stagers)
        return HalfResult(fallback=True)
    except BaseException:
        _discard(stagers)
        raise
    staged = _close_stagers(warehouse, norm.run_id, batch_id, stagers, norm.drain(), cols)
    return HalfResult(
        staged=staged,
        stats=stats, run_id=norm.run_id, started=len(norm._started) - 1, finished=norm._finished,
        validated=norm._validated, controls=norm._controls, pending=dict(norm._trials),
        resolved=norm._resolved, incomplete=norm._incomplete, run_level_other=norm._run_level_other,
        notes=norm.notes, quarantine=norm.quarantine,
    )


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
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ingest.parallel", str(self.args_path), str(self.out_path)], env=env,
        )

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self._cleanup()

    def result(self) -> HalfResult | None:
        rc = self.proc.wait()
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


def _child_main(args_path: str, out_path: str) -> None:
    with open(args_path, "rb") as f:
        args = pickle.load(f)  # noqa: S301  written by our own parent
    result = _second_half(*args)
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, out_path)


class _NoHash:
    """A hasher that ignores its input (the file is hashed by ``_FileHash``)."""

    def update(self, _data: bytes) -> None:
        pass

    def hexdigest(self) -> str:
        return ""


_NO_HASH = _NoHash()


class _FileHash:
    """sha256 of the first ``size`` bytes of a file, computed in a thread while both halves are read.

    hashlib releases the GIL on large updates, so this runs beside the parent's reading
    instead of after the child (about a second per GB saved from the serial tail).
    """

    def __init__(self, path: Path, size: int) -> None:
        self._h = hashlib.sha256()
        self._error: BaseException | None = None
        self._stop = False
        self._thread = threading.Thread(target=self._run, args=(path, size), daemon=True)
        self._thread.start()

    def _run(self, path: Path, size: int) -> None:
        try:
            with path.open("rb", buffering=0) as f:
                left = size
                while left > 0 and not self._stop and (chunk := f.read(min(4 * _CHUNK, left))):
                    self._h.update(chunk)
                    left -= len(chunk)
        except BaseException as exc:  # reported by hexdigest()
            self._error = exc

    def cancel(self) -> None:
        """Stop reading (the split declined or failed); the digest is then meaningless."""
        self._stop = True

    def hexdigest(self) -> str:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._h.hexdigest()


def _unlink_parts(half: HalfResult) -> None:
    for path, _n in half.staged.values():
        path.unlink(missing_ok=True)


def ingest_run_split(warehouse: Path, events_path: Path, files: list[dict], prices):
    """Ingest one file in two processes; ``None`` when the one-process path must do it."""
    from ingest.api import _close_stagers, _discard, _scan, _Stager, _write, new_batch_id

    size = events_path.stat().st_size
    with events_path.open("rb") as f:
        head = f.readline(1 << 20).rstrip(b"\n").rstrip(b"\r")
    try:
        rs = EVENT_ADAPTER.validate_json(head)
    except ValueError:
        return None
    if not isinstance(rs, RunStarted) or (mid := split_point(events_path, size)) is None:
        return None
    batch_id = new_batch_id()
    src = str(events_path)
    stats = ReadStats(events_path)
    norm = RunNormalizer(src, prices, streaming=True)
    stagers: dict[str, _Stager] = {}
    half: HalfResult | None = None
    child = _Child(db.staging_file(warehouse, "events"), (warehouse, events_path, mid, size, head, prices, batch_id))
    hasher = _FileHash(events_path, size)
    try:
        try:
            cols = _scan(warehouse, events_path, stats, norm, batch_id, stagers, end=mid, hasher=_NO_HASH)
            # Write out what is resolved while the child is still reading (shorter serial tail).
            if cols is not None and (t := cols.flush()) is not None:
                stagers["events"].write_table(t)
            for name, rows in norm.drain().items():
                if name in stagers:
                    stagers[name].add(rows)
                    stagers[name].flush()
        except BaseException:
            child.kill()
            raise
        half = child.result()
        if half is None:  # the child failed: one process does it all
            hasher.cancel()
            _discard(stagers)
            return None
        hs = half.stats
        if (
            half.fallback
            or norm.run_id != rs.run_id
            or len(norm._started) != 1
            or half.started
            or (hs.accepted and stats.accepted and hs.min_seq <= stats.max_seq)
            or not half.resolved.isdisjoint(norm._trials.keys())
            or not half.resolved.isdisjoint(norm._resolved)
            or not norm._resolved.isdisjoint(half.pending.keys())
        ):
            hasher.cancel()
            _discard(stagers)
            _unlink_parts(half)
            return None
    except BaseException:
        hasher.cancel()
        _discard(stagers)
        if half is not None:
            _unlink_parts(half)
        raise
    try:
        # Merge the child's state into the first half's normaliser, then resolve as usual.
        if half.finished is not None and (norm._finished is None or half.finished.seq > norm._finished.seq):
            norm._finished = half.finished
        for case_id, e in half.validated.items():
            old = norm._validated.get(case_id)
            if old is None or e.seq > old.seq:
                norm._validated[case_id] = e
        norm._controls += half.controls
        for trial_id, evs in half.pending.items():
            norm._trials[trial_id].extend(evs)
        norm._resolved.update(half.resolved)
        norm._incomplete += half.incomplete
        norm._run_level_other += half.run_level_other
        norm.notes += half.notes
        norm.quarantine += half.quarantine
        rows = norm.rows()
        mine = _close_stagers(warehouse, norm.run_id, batch_id, stagers, rows, cols)
        staged: dict = {}
        for name in mine.keys() | half.staged.keys():
            parts = [x for x in (mine.get(name), half.staged.get(name)) if x is not None]
            staged[name] = ([p for p, _n in parts], sum(n for _p, n in parts))
        hs = half.stats
        stats.lines += hs.lines
        stats.accepted += hs.accepted
        stats.duplicates += hs.duplicates
        stats.upgraded += hs.upgraded
        stats.out_of_order += hs.out_of_order
        stats.torn_bytes = hs.torn_bytes
        stats.bytes_read = hs.bytes_read
        stats.quarantine += hs.quarantine
        stats.size, stats.sha256 = size, hasher.hexdigest()  # the bytes both halves read
        files[0]["sha256"], files[0]["bytes"] = stats.sha256, stats.size
        return _write(
            warehouse, norm.run_id, batch_id, "trialhouse", files, rows,
            stats.quarantine + norm.quarantine, SCHEMA_VERSION, stats.notes() + norm.notes, staged,
        )
    finally:
        _discard(stagers)
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
