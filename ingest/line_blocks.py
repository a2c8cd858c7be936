"""An ``events.jsonl`` file as blocks of complete lines, a few MB at a time (``ingest.read``).

Why blocks: reading a few MB at a time and splitting in C is several times cheaper than
one ``readline`` per line, and the reader holds one block at a time however large the file.
Lines above ``MAX_LINE_BYTES`` are skipped in chunks, never held in memory, and quarantined
with only their first ``RAW_TEXT_CAP`` bytes; a last line without a newline is a write in
progress (torn), left for the next ingest. Every byte read is hashed on the way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from itertools import accumulate

from ingest.batch import QuarantineRow
from ingest.read_stats import ReadStats

MAX_LINE_BYTES = 8 * 1024 * 1024
"""Longer lines are quarantined without being held in memory."""
RAW_TEXT_CAP = 4096
"""Bytes of a bad line kept in ``quarantine.raw_text``."""
CHUNK = 1024 * 1024
"""Bytes read at a time where a file is read in chunks (over-long lines, the split, hashing)."""
BLOCK = 4 * 1024 * 1024
"""Bytes read and split per block."""
_plus1 = (1).__add__


def raw_text(raw: bytes) -> str:
    """A bad line as ``quarantine.raw_text`` keeps it: its first ``RAW_TEXT_CAP`` bytes, as text."""
    return raw[:RAW_TEXT_CAP].decode("utf-8", errors="replace")


def _too_long(length: int) -> str:
    return f"line is {length} bytes, over the {MAX_LINE_BYTES}-byte limit"


def _skip_rest_of_line(f, h, left: int | None) -> tuple[int, bytes | None, int | None]:
    """Read past the end of an over-long line: (bytes skipped, its newline included; the bytes
    after the newline, None when the file or range ends first; bytes of the range left)."""
    total = 0
    while chunk := f.read(CHUNK if left is None else min(CHUNK, max(left, 0))):
        if left is not None:
            left -= len(chunk)
        h.update(chunk)
        nl = chunk.find(b"\n")
        if nl >= 0:
            return total + nl + 1, chunk[nl + 1 :], left
        total += len(chunk)
    return total, None, left


def _blank_long_lines(lines: list[bytes], n: int, stats: ReadStats) -> bool:
    """Quarantine the lines over ``MAX_LINE_BYTES`` of a block (line ``n + 1`` first) and hand
    them on as ``b""``; whether any was."""
    blanked = False
    for i, raw in enumerate(lines):
        if len(raw) > MAX_LINE_BYTES:
            stats.quarantine.append(QuarantineRow(str(stats.path), n + 1 + i, _too_long(len(raw) + 1), raw_text(raw)))
            lines[i] = b""
            blanked = True
    return blanked


def split_blocks(
    f, stats: ReadStats, block: int, *, start: int = 0, end: int | None = None, first_line: int = 1, h=None,
) -> Iterator[tuple[int, list[int], list[bytes], bytes | None]]:
    """Yield (number of the first line, byte offset of each line, lines, bytes) per block of complete lines.

    ``bytes`` holds the lines exactly as ``lines`` has them, each followed by a newline,
    starting at ``offsets[0]``; None when a line was changed (a ``\\r`` stripped, an
    over-long line blanked). It lets ``line_array`` build the lines' Arrow array from one
    buffer instead of from thousands of bytes objects.

    Lines come without their newline (and trailing ``\\r``). An over-long line is quarantined
    here and handed on as ``b""`` (skipped like a blank line); one that does not fit in a
    block is skipped in chunks. ``start``/``end`` read one byte range (``start`` on a line
    boundary, numbered ``first_line``); ``h`` is fed every byte read. Once exhausted,
    ``stats`` holds the file's sha256, lines, bytes read and torn bytes.
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
            skipped, rest, left = _skip_rest_of_line(f, h, left)
            total, head, tail = len(buf) + skipped, buf[:RAW_TEXT_CAP], rest or b""
            if rest is None:
                stats.torn_bytes = total
                break
            n += 1
            stats.quarantine.append(QuarantineRow(str(stats.path), n, _too_long(total), raw_text(head)))
            pos += total
            continue
        lines = buf.split(b"\n")  # the complete lines and, last, the start of the next one
        tail = lines.pop()
        offsets = list(accumulate(map(_plus1, map(len, lines)), initial=pos))
        whole = buf  # lines as read: each line's bytes end just before offsets[i + 1] - pos - 1
        if cut > MAX_LINE_BYTES and _blank_long_lines(lines, n, stats):
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
    """The lines of a block (``split_blocks``) as an Arrow ``large_binary`` array, from its bytes.

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
