"""The run's ``events.jsonl``: a single writer appending one flushed line at a time.

Worker threads never write the file; they hand events to the driver's ``EventLog``,
which assigns the per-run ``seq`` under a lock. A crash can therefore only tear the
last line, and ``repair_tail`` truncates that before a resume appends more.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.events import _Event, dump_event, parse_event, utc_now

Emit = Callable[..., _Event]
"""``emit(EventClass, **fields)`` → the event as written (run_id/seq/ts filled in)."""


def repair_tail(path: Path) -> int:
    """Drop a torn (unterminated or unparsable) last line; returns bytes removed."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep = len(data)
    if data and not data.endswith(b"\n"):
        keep = data.rfind(b"\n") + 1
    else:
        # A complete but unparsable last line (e.g. a partial flush) is also torn.
        start = data.rfind(b"\n", 0, max(len(data) - 1, 0)) + 1
        last = data[start:keep]
        if last.strip():
            try:
                parse_event(last)
            except ValueError:
                keep = start
    if keep != len(data):
        with path.open("r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
    return len(data) - keep


def read_events(path: Path) -> list[Any]:
    """Every event in the file, parsed (the file must be intact: repair first)."""
    events = []
    with path.open("rb") as f:
        for line in f:
            if line.strip():
                events.append(parse_event(line))
    return events


class EventLog:
    """Append-only writer. Thread-safe; the sole owner of ``seq``."""

    def __init__(self, path: Path, run_id: str, next_seq: int = 0,
                 listener: Callable[[_Event], None] | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self._seq = next_seq
        self._lock = threading.Lock()
        self._file = path.open("ab")
        self._listener = listener

    def emit(self, cls: type[_Event], **fields: Any) -> _Event:
        with self._lock:
            event = cls(run_id=self.run_id, seq=self._seq, ts=utc_now(), **fields)
            self._file.write(dump_event(event).encode() + b"\n")
            self._file.flush()
            self._seq += 1
        if self._listener is not None:
            self._listener(event)
        return event

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                os.fsync(self._file.fileno())
                self._file.close()
