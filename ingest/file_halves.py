"""One ``events.jsonl`` cut in two at a line boundary, for the two-process split (``ingest.parallel``):
where to cut, how many lines come before the cut, and the file's sha256 computed in a
thread beside the reading of both halves.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

from ingest.line_blocks import CHUNK

CHILD_LAG_BYTES = 1024 * 1024
"""The child starts late (interpreter, imports) and the parent flushes its rows while it waits,
but the parent also pays pyarrow's pandas import that the child skips (``ingest.parallel``): the
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
            chunk = f.read(min(CHUNK, size - pos))
            if not chunk:
                return None
            nl = chunk.find(b"\n")
            if nl >= 0:
                return pos + nl + 1 if pos + nl + 1 < size else None
            pos += len(chunk)
    return None


def lines_before(path: Path, offset: int) -> int:
    """Lines that end before byte ``offset`` (the number of the first line after it, less one)."""
    n = 0
    with path.open("rb") as f:
        left = offset
        while left > 0 and (chunk := f.read(min(4 * CHUNK, left))):
            n += chunk.count(b"\n")
            left -= len(chunk)
    return n


class NoHash:
    """A hasher that ignores its input (the file is hashed by ``FileHash``)."""

    def update(self, _data: bytes) -> None:
        pass

    def hexdigest(self) -> str:
        return ""


NO_HASH = NoHash()


class FileHash:
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
                while left > 0 and not self._stop and (chunk := f.read(min(4 * CHUNK, left))):
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
