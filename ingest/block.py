"""What the reader hands on: the accepted events of a block of lines, column-wise.

``Block`` is the ingest hot path's unit (``ingest.read.read_blocks`` → ``ingest.normalize``
→ the events table); ``ReadEvent`` is one event with where it came from, for callers that
want events one at a time (not the hot path).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from contract.envelope import SCHEMA_VERSION
from ingest import fastdecode

get_envelope = fastdecode.get_envelope


class ReadEvent(NamedTuple):
    """One accepted line: the validated event plus where it came from (a tuple: cheap to build)."""

    event: Any
    line: int
    raw: bytes
    """The line's bytes (no newline); the ``events.payload_json`` of v1 lines."""
    version: int
    """Schema version as written (older versions were upgraded)."""


class Block(NamedTuple):
    """The accepted events of one block of lines, column-wise (the ingest hot path)."""

    events: list
    """Validated events in file order: compiled structs (``ingest.fastdecode``), or pydantic
    models for the lines only pydantic accepts; both read alike by attribute."""
    lines: list[int]
    """1-based line numbers."""
    raws: list[bytes]
    """Each line's bytes (no newline): ``events.payload_json`` of v1 lines."""
    versions: list[int] | None
    """Schema version as written per event; None when every one is the current version."""
    micros: list[int | None] | None = None
    """Each event's ``ts`` as microseconds since the epoch (UTC; ``fastdecode.decode_block``)."""
    env: list[tuple] | None = None
    """Each event's ``(seq, event, trial_id, run_id)``, read once: every pass over a block's
    models costs a cache miss per model, so consumers use these instead (see ``envelope``)."""
    payload: Any = None
    """``raws`` as an Arrow ``large_binary`` array when the reader could build it from the
    block's bytes (``ingest.line_blocks.line_array``); the events table's ``payload_json`` of v1 lines."""

    def envelope(self) -> list[tuple]:
        return self.env if self.env is not None else list(map(get_envelope, self.events))

    def read_events(self) -> list[ReadEvent]:
        """The block as ``ReadEvent``s holding the contract's pydantic models (not the hot path)."""
        v = self.versions or [SCHEMA_VERSION] * len(self.events)
        return list(map(ReadEvent, map(fastdecode.to_model, self.events), self.lines, self.raws, v))

    def take(self, idx: list[int]) -> Block:
        return Block(
            [self.events[i] for i in idx], [self.lines[i] for i in idx], [self.raws[i] for i in idx],
            None if self.versions is None else [self.versions[i] for i in idx],
            None if self.micros is None else [self.micros[i] for i in idx],
            None if self.env is None else [self.env[i] for i in idx],
            None if self.payload is None else self.payload.take(idx),
        )
