"""Stream an ``events.jsonl`` file, a block of lines at a time, into validated events.

Why streaming: a run's event file can be gigabytes; the reader holds one block (a few
MB) at a time (``ingest.line_blocks``: over-long lines skipped and quarantined, a torn
last line left for the next ingest). Rules:

- every line is validated against the event contract, each line its own JSON document,
  compiled first and by pydantic where the compiled contract refuses it
  (``ingest.line_validation``), so every bad line gets a precise reason (file, line, reason);
- the file's run is the run with the most valid lines (``choose_run``), never simply the
  first line's; a valid line of another run is quarantined before its seq is compared;
- memory does not grow with the file for the runner's consecutive seqs (``ingest.seen``);
- a repeated ``seq`` holding the same event (identical bytes, or the same values spelled
  otherwise) is dropped and counted; with a different event the later line is
  quarantined, unless it is the one in seq order (then the earlier is: ``SeqConflict``);
- out-of-order events are accepted (consumers order by ``seq``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path

from contract.envelope import SCHEMA_VERSION
from ingest import line_blocks
from ingest.batch import QuarantineRow
from ingest.block import Block, ReadEvent, get_envelope
from ingest.line_blocks import line_array, raw_text, split_blocks
from ingest.line_validation import decode_lines, same_event
from ingest.read_stats import ReadStats
from ingest.seen import SeqIndex

_first = itemgetter(0)
_fourth = itemgetter(3)


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
        self.line, self.prev = line, prev
        self.next: int | None = None

    def in_place(self, seq: int) -> bool:
        return self.prev < seq and (self.next is None or seq < self.next)


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


def probe_run(path: Path) -> str | None:
    """run_id of the first line when it is a valid ``run_started`` event (the runner's first line)."""
    with Path(path).open("rb") as f:
        head = f.readline(line_blocks.MAX_LINE_BYTES + 1)
    if not head.endswith(b"\n"):
        return None
    events, _idx, _v, _m = decode_lines([head.rstrip(b"\n").rstrip(b"\r")], 1, str(path), ReadStats(Path(path)))
    e = events[0] if events else None
    return e.run_id if e is not None and e.event == "run_started" else None


def census(path: Path) -> str | None:
    """The file's run by ``choose_run`` over a full pass (when the first line does not name it)."""
    stats = ReadStats(Path(path))
    lines: dict[str, int] = {}
    started: dict[str, int] = {}
    first: dict[str, int] = {}
    with Path(path).open("rb", buffering=0) as f:
        for n, _offsets, block, _whole in split_blocks(f, stats, line_blocks.BLOCK):
            events, idx, _v, _m = decode_lines(block, n, str(path), stats)
            for i in range(len(block)) if idx is None else idx:
                e = events[i]
                if e is None:
                    continue
                lines[e.run_id] = lines.get(e.run_id, 0) + 1
                first.setdefault(e.run_id, n + i)
                if e.event == "run_started":
                    started.setdefault(e.run_id, n + i)
    return choose_run(lines, started, first)


class _RunLines:
    """The lines of the file's run as blocks of them are read: which seqs are taken (``SeqIndex``),
    where each line sits among its neighbours' seqs (``_Placed``) and which seqs two lines claim."""

    def __init__(self, path: Path, stats: ReadStats, run_id: str | None, reject: dict[int, str] | None) -> None:
        self.stats, self.run_id, self.src = stats, run_id, str(path)
        self.seen = SeqIndex(path, line_blocks.MAX_LINE_BYTES)
        self.last_seq = -1
        self.prev_seq = -1  # seq of the run's last valid line in file order (for ``_Placed``)
        self.placed: dict[int, _Placed] = {}  # seq → where its line sits, for lines accepted one by one
        self.waiting: list[_Placed] = []  # placed lines still waiting for their next neighbour
        self.conflicts: list[tuple[int, _Placed]] = []
        self.reject = reject or {}
        self.reject_at = sorted(self.reject)

    def block(self, first: int, offsets: list[int], lines: list[bytes], whole: bytes | None) -> Block | None:
        """The run's accepted events of one block of lines (None when every line was blank)."""
        decoded: list = []
        events, idx, versions, micros = decode_lines(lines, first, self.src, self.stats, decoded)
        if idx is None:
            raws, nums, offs = lines, list(range(first, first + len(lines))), offsets
        elif not idx:
            return None
        else:
            raws, nums, offs = [lines[i] for i in idx], [first + i for i in idx], [offsets[i] for i in idx]
            events, micros = [events[i] for i in idx], [micros[i] for i in idx]
            versions = None if versions is None else [versions[i] for i in idx]
        # every line decoded by the compiled contract at the current version, none dropped,
        # none to refuse (``reject`` is applied line by line, in ``_one_by_one``)
        v1 = SCHEMA_VERSION
        clean = idx is None and (versions is None or (versions.count(v1) == len(versions) and None not in events))
        reject_at = self.reject_at
        if clean and reject_at and (i := bisect_left(reject_at, first)) < len(reject_at) \
                and reject_at[i] < first + len(lines):
            clean = False
        env = (decoded or list(map(get_envelope, events))) if clean else None
        run_id = self.run_id
        if env is not None and len(rids := set(map(_fourth, env))) == 1 and (run_id is None or run_id in rids):
            seqs = list(map(_first, env))
        else:
            clean = False
            seqs = [e.seq if e is not None else -1 for e in events]
        s0, n = seqs[0], len(seqs)
        if clean and s0 > self.last_seq and seqs == list(range(s0, s0 + n)):
            # The common case: consecutive seqs above all earlier ones (no duplicate, none out of order).
            self._consecutive(s0, n, offs[0])
            return Block(events, nums, raws, None, micros, env, None if whole is None else line_array(whole, offsets))
        return self._one_by_one(Block(events, nums, raws, versions, micros, env), seqs, offs)

    def _consecutive(self, s0: int, n: int, offset: int) -> None:
        """Take seqs ``s0 … s0 + n - 1``, the lines of one block from ``offset`` on."""
        self.seen.add_run(s0, n, offset)
        self.last_seq = self.prev_seq = s0 + n - 1
        stats = self.stats
        if s0 < stats.min_seq:
            stats.min_seq = s0
        stats.own += n
        if self.waiting:
            for w in self.waiting:
                w.next = s0
            self.waiting.clear()

    def _one_by_one(self, blk: Block, seqs: list[int], offs: list[int]) -> Block:
        """The block's lines judged one at a time: other runs', rejected, repeated and conflicting
        lines left out (quarantined or counted), out-of-order ones counted."""
        stats, run_id, reject, src, seen = self.stats, self.run_id, self.reject, self.src, self.seen
        quarantine, placed, waiting, conflicts = stats.quarantine, self.placed, self.waiting, self.conflicts
        events, nums, raws = blk.events, blk.lines, blk.raws
        last_seq, prev_seq = self.last_seq, self.prev_seq
        keep: list[int] = []
        for i, seq in enumerate(seqs):
            e = events[i]
            if e is None:
                continue
            if run_id is not None and e.run_id != run_id:  # before its seq can take a good line's
                self._foreign(e, nums[i], raws[i])
                continue
            stats.own += 1
            if nums[i] in reject:
                quarantine.append(QuarantineRow(src, nums[i], reject[nums[i]], raw_text(raws[i])))
                continue
            if waiting:
                for w in waiting:
                    w.next = seq
                waiting.clear()
            old = seen.check_add(seq, offs[i])
            if old is not None:
                if old == raws[i] or same_event(old, e):
                    stats.duplicates += 1
                else:
                    here = _Placed(nums[i], prev_seq)
                    waiting.append(here)
                    conflicts.append((seq, here))
                    quarantine.append(QuarantineRow(
                        src, nums[i], f"seq {seq} already used by a different event", raw_text(raws[i])))
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
        self.last_seq, self.prev_seq = last_seq, prev_seq
        if len(keep) != len(seqs):
            blk = blk.take(keep)
        if blk.versions is not None and blk.versions.count(SCHEMA_VERSION) == len(blk.versions):
            blk = blk._replace(versions=None)
        return blk

    def _foreign(self, e, line: int, raw: bytes) -> None:
        """A valid line of another run: counted and quarantined."""
        stats, rid = self.stats, e.run_id
        stats.foreign[rid] = stats.foreign.get(rid, 0) + 1
        stats.foreign_first.setdefault(rid, line)
        if e.event == "run_started":
            stats.foreign_started.setdefault(rid, line)
        stats.quarantine.append(QuarantineRow(
            self.src, line, f"run_id {rid!r} differs from this file's run {self.run_id!r}", raw_text(raw)))

    def strays(self) -> dict[int, str]:
        """Lines accepted earlier whose seq belongs to a later line that is in seq order where they
        are not (line → reason)."""
        strays: dict[int, str] = {}
        for seq, later in self.conflicts:
            earlier = self.placed.get(seq)  # None: it came in a block of consecutive seqs, so it is in place
            if earlier is not None and later.in_place(seq) and not earlier.in_place(seq) \
                    and earlier.line not in strays:
                strays[earlier.line] = (f"seq {seq} belongs to line {later.line}, which is in seq order "
                                        "where this line is not")
        return strays


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
    run = _RunLines(path, stats, run_id, reject)
    with path.open("rb", buffering=0) as f:
        stats.size = path.stat().st_size
        for first, offsets, lines, whole in split_blocks(
            f, stats, line_blocks.BLOCK, start=start, end=end, first_line=first_line, h=hasher,
        ):
            blk = run.block(first, offsets, lines, whole)
            # The block owns what it needs; drop the frame's references so the consumer frees it all.
            del lines
            if blk is None:
                continue
            stats.accepted += len(blk.events)
            stats.max_seq = run.last_seq
            if stats.chain is not None and blk.events:
                stats.chain.feed(blk.lines, blk.raws, blk.events)
            if blk.events:
                hand = [blk]
                del blk  # the consumer owns the block: it is freed as soon as the consumer drops it
                yield hand.pop()
            del whole, offsets
    if guessed and stats.foreign and run_id is not None:
        winner = choose_run({run_id: stats.own, **stats.foreign}, {run_id: first_line, **stats.foreign_started},
                            {run_id: first_line, **stats.foreign_first})
        if winner is not None and winner != run_id:
            raise RunChoiceChanged(winner)
    if strays := run.strays():
        raise SeqConflict(strays)


def read_events(path: Path, stats: ReadStats | None = None) -> Iterator[ReadEvent]:
    """Yield every valid event of ``path`` in file order; bad lines go to ``stats.quarantine``.

    ``stats`` (created when not given) is complete once the iterator is exhausted,
    including the file's sha256 and size.
    """
    for block in read_blocks(path, stats):
        yield from block.read_events()
