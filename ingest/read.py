"""Stream an ``events.jsonl`` file, a block of lines at a time, into validated events.

Why streaming: a run's event file can be gigabytes; the reader holds one block (a few
MB) at a time (lines above ``MAX_LINE_BYTES`` are skipped in chunks and quarantined
with only their first ``RAW_TEXT_CAP`` bytes). Rules:

- a last line without a newline is a write in progress (torn): it is left for the
  next ingest, not quarantined, and reported in ``notes``;
- every line is validated against the event contract, each line its own JSON document:
  first by the contract compiled to msgspec structs (``ingest.fastdecode``, strict); a
  line it refuses goes to pydantic (``_slow_parse``: its lax JSON validation, then
  ``json.loads`` + ``contract.events.upgrade_event``), so lax values and older versions
  are accepted as before and every bad line gets a precise reason (file, line, reason);
- every value is held to the contract's value rules (``contract.values``: 64-bit ints,
  finite floats, valid Unicode, nesting, safe ids), on every path a line can take;
- the file's run is the run with the most valid lines (``choose_run``), never simply the
  first line's; a valid line of another run is quarantined before its seq is compared;
- memory does not grow with the file for the runner's consecutive seqs (``ingest.seen``);
- a repeated ``seq`` holding the same event (identical bytes, or the same values spelled
  otherwise) is dropped and counted; with a different event the later line is
  quarantined, unless it is the one in seq order (then the earlier is: ``SeqConflict``);
- out-of-order events are accepted (consumers order by ``seq``).
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from contract.envelope import SCHEMA_VERSION
from contract.events import EVENT_ADAPTER, EVENT_TYPES, UnsupportedSchemaVersion, upgrade_event
from contract.values import MAX_DEPTH, json_problem
from ingest import fastdecode
from ingest.batch import QuarantineRow
from ingest.chain import ChainFollower
from ingest.seen import SeqIndex

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longer lines are quarantined without being held in memory."""
RAW_TEXT_CAP = 4096
"""Bytes of a bad line kept in ``quarantine.raw_text``."""
CHUNK = 1024 * 1024
"""Bytes read at a time where a file is read in chunks (over-long lines, the split, hashing)."""
_plus1 = (1).__add__
_BLOCK = 4 * 1024 * 1024
"""Bytes read and split per block."""


class ReadEvent(NamedTuple):
    """One accepted line: the validated event plus where it came from (a tuple: cheap to build)."""

    event: Any
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
    run_id: str | None = None
    """The file's run (``read_blocks``)."""
    own: int = 0
    """Valid lines of the file's run (duplicates included)."""
    foreign: dict[str, int] = field(default_factory=dict)
    """Valid lines of other runs (quarantined), per run id."""
    foreign_first: dict[str, int] = field(default_factory=dict)
    foreign_started: dict[str, int] = field(default_factory=dict)
    """Line of the first line / first ``run_started`` of each other run."""
    chain: ChainFollower | None = None
    """Follows the hash chain over the accepted lines, when set (``ingest.chain``)."""

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


def _short(value: object, limit: int = 80) -> str:
    """A value for a message: its JSON (or repr), cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_ID_RULE = "must be a safe id: letters, digits, '.', '_' or '-', starting with a letter or digit"


def _first_error(exc: ValidationError, tag: str) -> str:
    err = exc.errors(include_url=False)[0]
    parts = [str(p) for p in err["loc"]]
    loc = ".".join(parts[1:] if parts[:1] == [tag] else parts)
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    msg = _ID_RULE if err["type"] == "string_pattern_mismatch" else err["msg"]
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


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
        raise ValueError(f"invalid JSON: nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object (got {type(obj).__name__})")
    if why := json_problem(obj):
        raise ValueError(why)
    version = obj.get("schema_version", 0 if ("type" in obj and "event" not in obj) else None)
    try:
        upgraded = upgrade_event(obj)
    except UnsupportedSchemaVersion as exc:
        raise ValueError(str(exc)) from None
    name = upgraded.get("event")
    if not isinstance(name, str):
        raise ValueError(f"event: must be an event name (a string), not {_short(name)}")
    if name not in EVENT_TYPES:
        raise ValueError(f"unknown event type {name[:80]!r}")
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
            while chunk := f.read(CHUNK if left is None else min(CHUNK, max(left, 0))):
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
    micros: list[int | None] | None = None
    """Each event's ``ts`` as microseconds since the epoch (UTC; ``fastdecode.decode_block``)."""
    env: list[tuple] | None = None
    """Each event's ``(seq, event, trial_id, run_id)``, read once: every pass over a block's
    models costs a cache miss per model, so consumers use these instead (see ``envelope``)."""
    payload: Any = None
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


get_envelope = fastdecode.get_envelope
_first = itemgetter(0)
_fourth = itemgetter(3)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def exact_micros(t: datetime | None) -> int | None:
    """A datetime as microseconds since the epoch (a naive one read as UTC, like pyarrow)."""
    if t is None:
        return None
    return ((t if t.tzinfo is not None else t.replace(tzinfo=UTC)) - _EPOCH) // _US


class RunChoiceChanged(Exception):
    """The run guessed from the first line is not the file's run after all (``choose_run``):
    read the file again with ``run_id=winner``."""

    def __init__(self, winner: str) -> None:
        super().__init__(winner)
        self.winner = winner


class SeqConflict(Exception):
    """Lines accepted earlier lost their seq to a later line that is in seq order where they
    are not (``read_blocks``): read the file again with ``reject=lines``."""

    lines: dict[int, str]

    def __init__(self, lines: dict[int, str]) -> None:
        super().__init__(sorted(lines))
        self.lines = lines


class _Placed:
    """Where a line sits among its run's seqs: the seq of the run's valid lines before and after it."""

    __slots__ = ("line", "prev", "next")

    def __init__(self, line: int, prev: int) -> None:
        self.line, self.prev, self.next = line, prev, None

    def in_place(self, seq: int) -> bool:
        return self.prev < seq and (self.next is None or seq < self.next)


def _same_event(raw: bytes, event: Any) -> bool:
    """Whether a line holds ``event`` (the same values, however spelled): a repeat, not a conflict."""
    try:
        other, _version = _slow_parse(raw)
    except ValueError:
        return False
    return fastdecode.to_model(other) == fastdecode.to_model(event)


def choose_run(lines: dict[str, int], started: dict[str, int], first: dict[str, int]) -> str | None:
    """The file's run: the run with the most valid lines; a tie goes to a run with a
    ``run_started`` event (the earliest), then to the run seen first.

    ``lines``: valid lines per run id; ``started``/``first``: line of each run's first
    ``run_started``/first valid line. Never "the first line": a foreign line anywhere, even
    first, only quarantines itself (docs/design.md, "Never lose a good line").
    """
    if not lines:
        return None
    return min(lines, key=lambda r: (-lines[r], r not in started, started.get(r, 0), first[r]))


def _decode(lines: list[bytes], first: int, src: str, stats: ReadStats,
            envelopes: list | None = None) -> tuple[list, list[int] | None, list[int] | None, list]:
    """Validate a block's lines: (events, kept indexes or None for all, versions or None, µs).

    Blank lines are dropped (kept indexes); a refused line is quarantined and its event is None.
    ``envelopes`` receives the events' envelopes when the compiled contract accepted them all.
    """
    events, bad, micros = fastdecode.decode_block(lines, envelopes)
    idx: list[int] | None = None
    versions: list[int] | None = None
    if bad:  # blank lines are skipped; the others get a full diagnosis (and upgrades) one by one
        blank = [i for i in bad if not (raw := lines[i]) or (raw[0] in b" \t\r" and not raw.strip())]
        if blank:
            bad.difference_update(blank)
            skip = set(blank)
            idx = [i for i in range(len(lines)) if i not in skip]
        versions = [SCHEMA_VERSION] * len(lines)
        for i in sorted(bad):
            raw = lines[i]
            try:
                events[i], versions[i] = _slow_parse(raw)
            except ValueError as exc:
                stats.quarantine.append(QuarantineRow(src, first + i, str(exc), _raw_text(raw)))
                continue
            micros[i] = exact_micros(events[i].ts)
            if versions[i] != SCHEMA_VERSION:
                stats.upgraded += 1
    return events, idx, versions, micros


def probe_run(path: Path) -> str | None:
    """run_id of the first line when it is a valid ``run_started`` event (the runner's first line)."""
    with Path(path).open("rb") as f:
        head = f.readline(MAX_LINE_BYTES + 1)
    if not head.endswith(b"\n"):
        return None
    events, _idx, _v, _m = _decode([head.rstrip(b"\n").rstrip(b"\r")], 1, str(path), ReadStats(Path(path)))
    e = events[0] if events else None
    return e.run_id if e is not None and e.event == "run_started" else None


def census(path: Path) -> str | None:
    """The file's run by ``choose_run`` over a full pass (when the first line does not name it)."""
    stats = ReadStats(Path(path))
    lines: dict[str, int] = {}
    started: dict[str, int] = {}
    first: dict[str, int] = {}
    with Path(path).open("rb", buffering=0) as f:
        for n, _offsets, block, _whole in _blocks(f, stats, _BLOCK):
            events, idx, _v, _m = _decode(block, n, str(path), stats)
            for i in range(len(block)) if idx is None else idx:
                e = events[i]
                if e is None:
                    continue
                lines[e.run_id] = lines.get(e.run_id, 0) + 1
                first.setdefault(e.run_id, n + i)
                if e.event == "run_started":
                    started.setdefault(e.run_id, n + i)
    return choose_run(lines, started, first)


def read_blocks(
    path: Path, stats: ReadStats | None = None, *, run_id: str | None = None, start: int = 0,
    end: int | None = None, first_line: int = 1, hasher=None, reject: dict[int, str] | None = None,
) -> Iterator[Block]:
    """Every valid event of the file's run in file order, one ``Block`` per block of lines.

    The file's run is ``run_id`` when given, else decided here (``choose_run``): the run of a
    valid ``run_started`` first line, checked against every line at the end (``RunChoiceChanged``
    when another run wins), or a full ``census`` pass. A valid line of another run is
    quarantined before seqs are compared, so it can never take a good line's seq. Two different
    lines of the run with one seq: the later one is quarantined, unless it sits in seq order
    between its neighbours and the earlier one does not — then the earlier one is the stray
    (``SeqConflict``: the caller reads again with ``reject`` naming it).
    ``start``/``end`` read one byte range (``start`` on a line boundary, numbered ``first_line``)
    for the two-process split; ``hasher`` is fed every byte read. ``stats.min_seq``/``max_seq``
    bound the accepted seqs; ``stats.foreign`` counts the other runs' lines.
    """
    path = Path(path)
    stats = stats if stats is not None else ReadStats(path)
    guessed = run_id is None
    if guessed:
        run_id = probe_run(path)
        if run_id is None:
            run_id, guessed = census(path), False
    stats.run_id = run_id
    seen = SeqIndex(path, MAX_LINE_BYTES)
    last_seq = -1
    prev_seq = -1  # seq of the run's last valid line in file order (for ``_Placed``)
    placed: dict[int, _Placed] = {}  # seq → where its line sits, for lines accepted one by one
    waiting: list[_Placed] = []  # placed lines still waiting for their next neighbour
    conflicts: list[tuple[int, _Placed]] = []
    reject = reject or {}
    reject_at = sorted(reject)
    src = str(path)
    quarantine = stats.quarantine
    foreign = stats.foreign
    v1 = SCHEMA_VERSION
    with path.open("rb", buffering=0) as f:
        stats.size = path.stat().st_size
        for first, offsets, lines, whole in _blocks(
            f, stats, _BLOCK, start=start, end=end, first_line=first_line, h=hasher,
        ):
            decoded: list = []
            events, idx, versions, micros = _decode(lines, first, src, stats, decoded)
            if idx is None:
                raws, nums, offs = lines, list(range(first, first + len(lines))), offsets
            elif not idx:
                continue
            else:
                raws, nums, offs = [lines[i] for i in idx], [first + i for i in idx], [offsets[i] for i in idx]
                events, micros = [events[i] for i in idx], [micros[i] for i in idx]
                versions = None if versions is None else [versions[i] for i in idx]
            # every line decoded by the compiled contract at the current version, none dropped,
            # none to refuse (``reject`` is applied line by line, below)
            clean = idx is None and (versions is None or (versions.count(v1) == len(versions) and None not in events))
            if clean and reject_at and (i := bisect_left(reject_at, first)) < len(reject_at) \
                    and reject_at[i] < first + len(lines):
                clean = False
            env = (decoded or list(map(get_envelope, events))) if clean else None
            if env is not None and len(rids := set(map(_fourth, env))) == 1 and (run_id is None or run_id in rids):
                seqs = list(map(_first, env))
            else:
                clean = False
                seqs = [e.seq if e is not None else -1 for e in events]
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
                stats.own += n
                if waiting:
                    for w in waiting:
                        w.next = s0
                    waiting.clear()
                prev_seq = seqs[-1]
            else:
                keep: list[int] = []
                for i, seq in enumerate(seqs):
                    e = events[i]
                    if e is None:
                        continue
                    if run_id is not None and e.run_id != run_id:  # before its seq can take a good line's
                        rid = e.run_id
                        foreign[rid] = foreign.get(rid, 0) + 1
                        stats.foreign_first.setdefault(rid, nums[i])
                        if e.event == "run_started":
                            stats.foreign_started.setdefault(rid, nums[i])
                        quarantine.append(QuarantineRow(
                            src, nums[i], f"run_id {rid!r} differs from this file's run {run_id!r}",
                            _raw_text(raws[i])))
                        continue
                    stats.own += 1
                    if nums[i] in reject:
                        quarantine.append(QuarantineRow(src, nums[i], reject[nums[i]], _raw_text(raws[i])))
                        continue
                    if waiting:
                        for w in waiting:
                            w.next = seq
                        waiting.clear()
                    old = seen.check_add(seq, offs[i])
                    if old is not None:
                        if old == raws[i] or _same_event(old, e):
                            stats.duplicates += 1
                        else:
                            here = _Placed(nums[i], prev_seq)
                            waiting.append(here)
                            conflicts.append((seq, here))
                            quarantine.append(QuarantineRow(
                                src, nums[i], f"seq {seq} already used by a different event", _raw_text(raws[i])))
                        continue
                    placed[seq] = here = _Placed(nums[i], prev_seq)
                    waiting.append(here)
                    prev_seq = seq
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
            if stats.chain is not None and blk.events:
                stats.chain.feed(blk.lines, blk.raws, blk.events)
            if blk.events:
                hand = [blk]
                del blk  # the consumer owns the block: it is freed as soon as the consumer drops it
                yield hand.pop()
            del whole, offsets
    if guessed and foreign and run_id is not None:
        winner = choose_run({run_id: stats.own, **foreign}, {run_id: first_line, **stats.foreign_started},
                            {run_id: first_line, **stats.foreign_first})
        if winner is not None and winner != run_id:
            raise RunChoiceChanged(winner)
    strays: dict[int, str] = {}
    for seq, later in conflicts:
        earlier = placed.get(seq)  # None: it came in a block of consecutive seqs, so it is in place
        if earlier is not None and later.in_place(seq) and not earlier.in_place(seq) and earlier.line not in strays:
            strays[earlier.line] = (f"seq {seq} belongs to line {later.line}, which is in seq order "
                                    "where this line is not")
    if strays:
        raise SeqConflict(strays)


def read_events(path: Path, stats: ReadStats | None = None) -> Iterator[ReadEvent]:
    """Yield every valid event of ``path`` in file order; bad lines go to ``stats.quarantine``.

    ``stats`` (created when not given) is complete once the iterator is exhausted,
    including the file's sha256 and size.
    """
    for block in read_blocks(path, stats):
        yield from block.read_events()
