"""What a streaming ingest must remember of what it has already read, in little memory.

Two questions need the whole file's past: "was this ``seq`` seen before?" (duplicates)
and "was this trial already resolved?" (a late event for a trial whose rows are written).
Answering them with a dict or a set of everything seen made peak memory grow by about
12 bytes per event (the 1M-event bench file: 350 MB, 10M: 466 MB). Here:

- ``SeqIndex`` keeps one record per block of consecutive, increasing seqs (the shape the
  runner writes) and only irregular seqs one by one; a repeated seq's first line is
  re-read from the file.
- ``TrialIds`` keeps recent ids as strings and older ones as sorted 8-byte digests
  (blake2b of the id): 8 bytes per trial. Two ids with the same digest would only make an
  ingest take its exact but slower buffered pass, never change a result.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from pathlib import Path


def line_at(path: Path, offset: int, skip: int, limit: int) -> bytes:
    """The line ``skip`` lines after the one starting at ``offset`` (no newline, no ``\\r``)."""
    with Path(path).open("rb") as f:
        f.seek(offset)
        for _ in range(skip):
            f.readline()
        return f.readline(limit + 1).rstrip(b"\n").rstrip(b"\r")


class SeqIndex:
    """seq → its first line, to tell identical duplicates from conflicting ones.

    ``add_run`` records a block of consecutive seqs above all earlier ones as one record
    (first seq, count, byte offset of its first line); ``check_add`` records one seq at a
    time and looks a seq up in both. Records are appended in increasing seq order, so a
    lookup is a binary search.
    """

    def __init__(self, path: Path, max_line: int) -> None:
        self.path, self.max_line = Path(path), max_line
        self._starts = array("q")
        self._ends = array("q")
        self._offsets = array("q")
        self._single: dict[int, int] = {}

    def add_run(self, first: int, n: int, offset: int) -> None:
        """Record seqs ``first … first + n - 1`` on ``n`` consecutive lines from ``offset``
        (all new: above every seq recorded so far)."""
        self._starts.append(first)
        self._ends.append(first + n)
        self._offsets.append(offset)

    def check_add(self, seq: int, offset: int) -> bytes | None:
        """Record ``seq`` at ``offset``; when it was seen before, return that earlier line instead."""
        old = self._single.get(seq)
        if old is not None:
            return line_at(self.path, old, 0, self.max_line)
        i = bisect_right(self._starts, seq) - 1
        if i >= 0 and seq < self._ends[i]:
            return line_at(self.path, self._offsets[i], seq - self._starts[i], self.max_line)
        self._single[seq] = offset
        return None


def _digest(trial_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(trial_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class TrialIds:
    """A set of trial ids that costs 8 bytes per id once the id is no longer recent.

    Membership may say yes for an id never added (two digests equal: about one chance in
    10^7 at a million trials); callers use a yes only to fall back to an exact path.
    """

    RECENT = 65_536

    def __init__(self) -> None:
        self._recent: set[str] = set()
        self._old = array("Q")  # sorted digests

    def __len__(self) -> int:
        return len(self._recent) + len(self._old)

    def add(self, trial_id: str) -> None:
        self._recent.add(trial_id)
        if len(self._recent) >= self.RECENT:
            self._fold(self._recent)
            self._recent = set()

    def _fold(self, ids: Iterable[str]) -> None:
        new = sorted(map(_digest, ids))
        # two sorted runs: Python's sort merges them in one pass
        self._old = array("Q", sorted([*self._old, *new])) if self._old else array("Q", new)

    def __contains__(self, trial_id: str) -> bool:
        if trial_id in self._recent:
            return True
        old = self._old
        if not old:
            return False
        d = _digest(trial_id)
        i = bisect_left(old, d)
        return i < len(old) and old[i] == d

    def digests(self) -> array:
        """Every id's digest (the recent ones digested too)."""
        return array("Q", [*self._old, *map(_digest, self._recent)])

    def isdisjoint(self, ids: TrialIds | Iterable[str]) -> bool:
        """No id in common (digests compared for two ``TrialIds``: a shared digest counts as shared)."""
        if isinstance(ids, TrialIds):
            small, big = sorted((self, ids), key=len)
            return set(small.digests()).isdisjoint(big.digests())
        return not any(t in self for t in ids)

    def update(self, other: TrialIds) -> None:
        """Add every id of ``other`` (the other half of a split file)."""
        if other._old:
            self._old = array("Q", sorted([*self._old, *other._old]))
        for t in other._recent:
            self.add(t)
