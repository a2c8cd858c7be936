"""Stream an ``events.jsonl`` file, a block of lines at a time, into validated events.

Why streaming: a run's event file can be gigabytes; the reader holds one block (a few
MB) at a time (lines above ``MAX_LINE_BYTES`` are skipped in chunks and quarantined
with only their first ``RAW_TEXT_CAP`` bytes). Rules:

- a last line without a newline is a write in progress (torn): it is left for the
  next ingest, not quarantined, and reported in ``notes``;
- every line is validated against the event contract, each line its own JSON document:
  first by the contract compiled to msgspec structs (``ingest.fastdecode``, strict); a
  line it refuses goes to pydantic (``_slow_parse``: its lax JSON validation, then
  ``json.loads`` + ``runner.events.upgrade_event``), so lax values and older versions
  are accepted as before and every bad line gets a precise reason (file, line, reason);
- memory does not grow with the file for the runner's consecutive seqs (``ingest.seen``);
- a repeated ``seq`` with identical bytes is dropped and counted; with different
  content it is quarantined;
- out-of-order events are accepted (consumers order by ``seq``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import NamedTuple

from pydantic import ValidationError

from ingest import fastdecode
from ingest.batch import QuarantineRow
from ingest.seen import SeqIndex
from runner.events import (
    EVENT_ADAPTER,
    SCHEMA_VERSION,
    UnsupportedSchemaVersion,
    upgrade_event,
)

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longer lines are quarantined without being held in memory."""
RAW_TEXT_CAP = 4096
"""Bytes of a bad line kept in ``quarantine.raw_text``."""
_CHUNK = 1024 * 1024
_plus1 = (1).__add__
_BLOCK = 4 * 1024 * 1024
"""Bytes read and split per block."""


class ReadEvent(NamedTuple):
    """One accepted line: the validated event plus where it came from (a tuple: cheap to build)."""

    event: object
    line: int
    raw: bytes
    """The line's bytes (no newline); the ``events.payload_json`` of v1 lines."""
    version: int
    """Schema version as written (older versions were upgraded)."""


@dataclass
class ReadStats:
    """What the reader saw besides accepted events; filled while iterating."""

    path: Path
    lines: int = 0
    accepted: int = 0
    duplicates: int = 0
    upgraded: int = 0
    out_of_order: int = 0
    torn_bytes: int = 0
    bytes_read: int = 0
    sha256: str = ""
    size: int = 0
    quarantine: list[QuarantineRow] = field(default_factory=list)
    min_seq: float = float("inf")
    max_seq: int = -1

    def notes(self) -> list[str]:
        out = []
        if self.torn_bytes:
            out.append(
                f"{self.path}: last line is incomplete ({self.torn_bytes} bytes without a newline); "
                "left for the next ingest"
            )
        if self.duplicates:
            out.append(f"{self.path}: {self.duplicates} duplicate event line(s) skipped")
        if self.upgraded:
            out.append(f"{self.path}: {self.upgraded} event(s) upgraded from an older schema version")
        if self.out_of_order:
            out.append(f"{self.path}: {self.out_of_order} event(s) out of seq order (ordered by seq)")
        return out


def _raw_text(raw: bytes) -> str:
    return raw[:RAW_TEXT_CAP].decode("utf-8", errors="replace")


def _first_error(exc: ValidationError, tag: str) -> str:
    err = exc.errors(include_url=False)[0]
    parts = [str(p) for p in err["loc"]]
    loc = ".".join(parts[1:] if parts[:1] == [tag] else parts)
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{loc}: {err['msg']}{more}" if loc else f"{err['msg']}{more}"


def _slow_parse(raw: bytes) -> tuple[object, int]:
    """A line the compiled contract refused, judged by pydantic: (event, original version).

    First pydantic's own JSON validation, lax (``"5"``, ``5.0``, other timestamp forms, a
    missing ``schema_version`` taken as the current one); failing that, a full diagnosis
    that upgrades older versions and names the reason for everything else.
    """
    try:
        return EVENT_ADAPTER.validate_json(raw), SCHEMA_VERSION
    except ValueError:
        pass
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text (binary data?)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError("invalid JSON: nested too deeply") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object (got {type(obj).__name__})")
    version = obj.get("schema_version", 0 if ("type" in obj and "event" not in obj) else None)
    try:
        upgraded = upgrade_event(obj)
    except UnsupportedSchemaVersion as exc:
        raise ValueError(str(exc)) from None
    name = upgraded.get("event")
    from runner.events import EVENT_TYPES

    if name not in EVENT_TYPES:
        raise ValueError(f"unknown event type {name!r}")
    try:
        event = EVENT_ADAPTER.validate_python(upgraded)
    except ValidationError as exc:
        raise ValueError(f"{name}: {_first_error(exc, name)}") from None
    return event, version if isinstance(version, int) else SCHEMA_VERSION


def _blocks(
    f, stats: ReadStats, block: int = _BLOCK, *, start: int = 0, end: int | None = None,
    first_line: int = 1, h=None,
) -> Iterator[tuple[int, list[int], list[bytes], bytes | None]]:
    """Yield (number of the first line, byte offset of each line, lines, bytes) per block of complete lines.

    ``bytes`` holds the lines exactly as ``lines`` has them, each followed by a newline,
    starting at ``offsets[0]``; None when a line was changed (a ``\\r`` stripped, an
    over-long line blanked). It lets ``line_array`` build the lines' Arrow array from one
    buffer instead of from thousands of bytes objects.

    Reading a few MB at a time and splitting in C is several times cheaper than one
    ``readline`` per line. Lines come without their newline (and trailing ``\\r``). An
    over-long line is quarantined here and handed on as ``b""`` (skipped like a blank
    line); one that does not fit in a block is skipped in chunks, never held in memory.
    """
    h = h if h is not None else hashlib.sha256()
    n = first_line - 1  # lines completed so far
    pos = start  # offset of the next line
    left = None if end is None else end - start  # bytes of the range not read yet
    if start:
        f.seek(start)
    tail = b""
    while True:
        if left is None:
            chunk = f.read(block)
        else:
            chunk = f.read(min(block, left)) if left > 0 else b""
            left -= len(chunk)
        if chunk:
            h.update(chunk)
            buf = tail + chunk if tail else chunk
        elif b"\n" in tail:  # complete lines left after skipping an over-long one
            buf = tail
        else:
            break
        cut = buf.rfind(b"\n")
        if cut < 0:
            tail = buf
            if len(tail) <= MAX_LINE_BYTES:
                continue
            # Over-long line without its newline yet: keep its head, skip the rest.
            head, total, ended = tail[:RAW_TEXT_CAP], len(tail), False
            tail = b""
            while chunk := f.read(_CHUNK if left is None else min(_CHUNK, max(left, 0))):
                if left is not None:
                    left -= len(chunk)
                h.update(chunk)
                nl = chunk.find(b"\n")
                if nl >= 0:
                    total += nl + 1
                    tail, ended = chunk[nl + 1 :], True
                    break
                total += len(chunk)
            if not ended:
                stats.torn_bytes = total
                break
            n += 1
            stats.quarantine.append(QuarantineRow(
                str(stats.path), n, f"line is {total} bytes, over the {MAX_LINE_BYTES}-byte limit", _raw_text(head)
            ))
            pos += total
            continue
        lines = buf.split(b"\n")  # the complete lines and, last, the start of the next one
        tail = lines.pop()
        offsets = list(accumulate(map(_plus1, map(len, lines)), initial=pos))
        whole = buf  # lines as read: each line's bytes end just before offsets[i + 1] - pos - 1
        if cut > MAX_LINE_BYTES:
            for i, raw in enumerate(lines):
                if len(raw) > MAX_LINE_BYTES:
                    stats.quarantine.append(QuarantineRow(
                        str(stats.path), n + 1 + i,
                        f"line is {len(raw) + 1} bytes, over the {MAX_LINE_BYTES}-byte limit", _raw_text(raw),
                    ))
                    lines[i] = b""
                    whole = None
        if buf.find(b"\r", 0, cut) >= 0:
            lines = [raw.rstrip(b"\r") for raw in lines]
            whole = None
        yield n + 1, offsets, lines, whole
        del whole
        n += len(lines)
        pos += cut + 1
    if tail:  # EOF without newline: a write in progress (torn), left for the next ingest
        stats.torn_bytes = len(tail)
    stats.sha256 = h.hexdigest()
    stats.lines = n - (first_line - 1)
    stats.bytes_read = pos


def line_array(whole: bytes, offsets: list[int]):
    """The lines of a block (``_blocks``) as an Arrow ``large_binary`` array, from its bytes.

    ``whole[offsets[i] - offsets[0] : offsets[i + 1] - offsets[0] - 1]`` is line ``i``: the
    array is made over the buffer with the newlines and sliced one byte short (Arrow, no
    Python object per line). Converting the lines' bytes objects instead
    costs a cache miss each once the block has been validated.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(offsets) - 1
    rel = pc.subtract(pa.array(offsets, pa.int64()), offsets[0])
    arr = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [None, rel.buffers()[1], pa.py_buffer(whole)])
    return pc.binary_slice(arr, 0, -1)


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
    micros: list[int] | None = None
    """Each event's ``ts`` as microseconds since the epoch (UTC; ``fastdecode.decode_block``)."""
    env: list[tuple] | None = None
    """Each event's ``(seq, event, trial_id, run_id)``, read once: every pass over a block's
    models costs a cache miss per model, so consumers use these instead (see ``envelope``)."""
    payload: object = None
    """``raws`` as an Arrow ``large_binary`` array when the reader could build it from the
    block's bytes (``line_array``); the events table's ``payload_json`` of v1 lines."""

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


get_envelope = attrgetter("seq", "event", "trial_id", "run_id")
_first = itemgetter(0)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def exact_micros(t: datetime | None) -> int | None:
    """A datetime as microseconds since the epoch (a naive one read as UTC, like pyarrow)."""
    if t is None:
        return None
    return ((t if t.tzinfo is not None else t.replace(tzinfo=UTC)) - _EPOCH) // _US


def read_blocks(
    path: Path, stats: ReadStats | None = None, *, start: int = 0, end: int | None = None,
    first_line: int = 1, hasher=None,
) -> Iterator[Block]:
    """Every valid event of ``path`` in file order, one ``Block`` per block of lines.

    ``start``/``end`` read one byte range (``start`` on a line boundary, numbered
    ``first_line``) for the two-process split; ``hasher`` is fed every byte read.
    ``stats.min_seq``/``max_seq`` bound the accepted seqs.
    """
    path = Path(path)
    stats = stats if stats is not None else ReadStats(path)
    seen = SeqIndex(path, MAX_LINE_BYTES)
    last_seq = -1
    src = str(path)
    quarantine = stats.quarantine
    v1 = SCHEMA_VERSION
    with path.open("rb", buffering=0) as f:
        stats.size = path.stat().st_size
        for first, offsets, lines, whole in _blocks(
            f, stats, _BLOCK, start=start, end=end, first_line=first_line, h=hasher,
        ):
            events, bad, micros = fastdecode.decode_block(lines)
            idx = None
            versions = None
            if bad:  # blank lines are skipped; the others get a full diagnosis (and upgrades) one by one
                blank = [i for i in bad if not (raw := lines[i]) or (raw[0] in b" \t\r" and not raw.strip())]
                if blank:
                    bad.difference_update(blank)
                    skip = set(blank)
                    idx = [i for i in range(len(lines)) if i not in skip]
                    if not idx:
                        continue
                versions = [v1] * len(lines)
                for i in sorted(bad):
                    raw = lines[i]
                    try:
                        events[i], versions[i] = _slow_parse(raw)
                    except ValueError as exc:
                        quarantine.append(QuarantineRow(src, first + i, str(exc), _raw_text(raw)))
                        continue
                    micros[i] = exact_micros(events[i].ts)
                    if versions[i] != v1:
                        stats.upgraded += 1
            if idx is None:
                raws, nums, offs = lines, list(range(first, first + len(lines))), offsets
            else:
                raws, nums, offs = [lines[i] for i in idx], [first + i for i in idx], [offsets[i] for i in idx]
                events, versions = [events[i] for i in idx], [versions[i] for i in idx]
                micros = [micros[i] for i in idx]
            # lines pydantic accepted at the current version are as good as compiled ones here
            clean = not bad or (idx is None and versions.count(v1) == len(versions) and None not in events)
            if not clean:
                env = None
                seqs = [e.seq if e is not None else -1 for e in events]
            else:
                env = list(map(get_envelope, events))
                seqs = list(map(_first, env))
            s0 = seqs[0]
            n = len(seqs)
            if clean and s0 > last_seq and seqs == list(range(s0, s0 + n)):
                # The common case: consecutive seqs above all earlier ones (no duplicate, none out of order).
                seen.add_run(s0, n, offs[0])
                last_seq = seqs[-1]
                if s0 < stats.min_seq:
                    stats.min_seq = s0
                blk = Block(events, nums, raws, None, micros, env,
                            None if whole is None else line_array(whole, offsets))
            else:
                keep: list[int] = []
                for i, seq in enumerate(seqs):
                    if events[i] is None:
                        continue
                    old = seen.check_add(seq, offs[i])
                    if old is not None:
                        if old == raws[i]:
                            stats.duplicates += 1
                        else:
                            quarantine.append(QuarantineRow(
                                src, nums[i], f"seq {seq} already used by a different event", _raw_text(raws[i])))
                        continue
                    if seq < last_seq:
                        stats.out_of_order += 1
                    else:
                        last_seq = seq
                    if seq < stats.min_seq:
                        stats.min_seq = seq
                    keep.append(i)
                blk = Block(events, nums, raws, versions, micros, env)
                if len(keep) != n:
                    blk = blk.take(keep)
                if blk.versions is not None and blk.versions.count(v1) == len(blk.versions):
                    blk = blk._replace(versions=None)
            # The block owns what it needs; drop the frame's references so the consumer frees it all
            # (the envelope tuples would otherwise outlive the block and be scanned by gc.collect(0)).
            del events, raws, lines, env, seqs, nums, offs, micros
            stats.accepted += len(blk.events)
            stats.max_seq = last_seq
            if blk.events:
                hand = [blk]
                del blk  # the consumer owns the block: it is freed as soon as the consumer drops it
                yield hand.pop()
            del whole, offsets


def read_events(path: Path, stats: ReadStats | None = None) -> Iterator[ReadEvent]:
    """Yield every valid event of ``path`` in file order; bad lines go to ``stats.quarantine``.

    ``stats`` (created when not given) is complete once the iterator is exhausted,
    including the file's sha256 and size.
    """
    for block in read_blocks(path, stats):
        yield from block.read_events()


def file_sha256(path: Path) -> tuple[str, int]:
    """sha256 and size of a file, read in chunks."""
    h = hashlib.sha256()
    size = 0
    with Path(path).open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def peek_run_id(path: Path) -> str | None:
    """run_id of the first line, when it is readable (for the unchanged-input check)."""
    with Path(path).open("rb") as f:
        first = f.readline(64 * 1024)
    try:
        obj = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return None
    rid = obj.get("run_id") if isinstance(obj, dict) else None
    return rid if isinstance(rid, str) else None
