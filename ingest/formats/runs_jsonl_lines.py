"""A runs-jsonl file as Arrow tables of its lines, a block at a time, without a Python object
per line.

The file is read in blocks of whole lines (``line_blocks``, at most ``BLOCK_BYTES`` each), so
memory follows the block, not the file; a line longer than a block is skipped as it is read
(never held whole) and one longer than ``LINE_MAX`` is set aside before it is parsed
(``long_lines``): both are quarantined with an excerpt (docs/security.md, "Foreign files").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, NamedTuple

import pyarrow as pa

MiB = 1024 * 1024
BLOCK_BYTES = 32 * MiB
"""Most bytes of lines typed at once (more than ``LINE_MAX``: a line longer than a block is
one longer than ``LINE_MAX``)."""
LINE_MAX = 1 * MiB
"""Longest line parsed (a runs-jsonl line is a few hundred bytes)."""
EXCERPT = 10_000
"""Characters of a set-aside line kept as its quarantined text (``runs_jsonl_row.RAW_MAX``)."""


class LongLine(NamedTuple):
    """A line too long to parse: its number, its size in bytes (newline included) and an excerpt."""

    lineno: int
    size: int
    excerpt: str


def read_lines(data: bytes, first: int = 1) -> pa.Table:
    """``(lineno, text)`` of every line, numbered from ``first`` as a text-mode ``for line in
    file`` numbers them (``\\r\\n``, ``\\r`` and ``\\n`` end a line; bytes that are not UTF-8
    become U+FFFD). Each text is a view into the bytes, its line break included (JSON allows
    trailing whitespace; the row path strips it): Arrow offsets at each newline, no Python
    object per line."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        return _split(data, first)
    except pa.ArrowInvalid:  # not UTF-8 somewhere: decode as the row path did (no newline moves)
        return _split(data.decode("utf-8", errors="replace").encode("utf-8"), first)


def _split(data: bytes, first: int) -> pa.Table:
    import numpy as np

    # newlines found a few MB at a time: one comparison over the whole file allocates a mask
    # as large as the file, and its page faults cost more than the search
    raw = np.frombuffer(data, np.uint8)
    step = 1 << 22
    ends = np.concatenate([np.zeros(0, np.int64)] + [np.flatnonzero(raw[i:i + step] == 10) + (i + 1)
                                                     for i in range(0, len(raw), step)]).astype(np.int64)
    if data and not data.endswith(b"\n"):
        ends = np.append(ends, len(data))
    offsets = np.concatenate([np.zeros(1, np.int64), ends.astype(np.int64)])
    text = pa.LargeStringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data))
    text.validate(full=True)
    return pa.table({"lineno": pa.array(np.arange(first, first + len(ends), dtype=np.int64)), "text": text})


def long_lines(lines: pa.Table, limit: int | None = None) -> tuple[pa.Table, list[LongLine]]:
    """``lines`` without those longer than ``limit`` (``LINE_MAX``) bytes, and those as
    ``LongLine``s (the table is copied only when there is one)."""
    import pyarrow.compute as pc

    limit = limit or LINE_MAX
    sizes = pc.binary_length(lines.column("text"))
    over = pc.greater(sizes, limit)
    if not pc.any(over).as_py():
        return lines, []
    long = lines.filter(over)
    found = [LongLine(n, size, text[:EXCERPT]) for n, size, text in zip(
        long.column("lineno").to_pylist(), pc.binary_length(long.column("text")).to_pylist(),
        long.column("text").to_pylist(), strict=True)]
    return lines.filter(pc.invert(over)), found


def line_blocks(f: IO[bytes], feed: Callable[[bytes], object],
                block: int | None = None) -> Iterator[tuple[int, bytes, list[LongLine]]]:
    """``(number of the block's first line, its whole lines, lines skipped before it)`` for the
    file, a block of at most ``block`` (``BLOCK_BYTES``) bytes at a time; every byte read is given to ``feed``
    (the file's hash). A line with no end inside a whole block is skipped to its end, keeping
    only an excerpt."""
    block = block or BLOCK_BYTES
    carry, first, after_cr = b"", 1, False
    while True:
        chunk = f.read(block - len(carry))
        feed(chunk)
        data = carry + chunk
        if after_cr and data.startswith(b"\n"):  # the second half of a \r\n cut at a block's end
            data = data[1:]
        after_cr = False
        if not chunk:
            if data:
                yield first, data, []
            return
        cut = _last_break(data)
        if cut == 0 and len(data) < block:  # the file's last line, unended: the next read says so
            carry = data
            continue
        if cut == 0:  # no line ends within a whole block: an over-long line
            size, carry = _skip_line(f, feed, len(data), min(MiB, block))
            yield first, b"", [LongLine(first, size, data[:EXCERPT].decode("utf-8", errors="replace"))]
            first += 1
            continue
        body, carry = data[:cut], data[cut:]
        after_cr = not carry and body.endswith(b"\r")
        yield first, body, []
        first += body.count(b"\n") + body.count(b"\r") - body.count(b"\r\n")


def _last_break(data: bytes) -> int:
    """Where the block's whole lines end: after its last line break (0: none)."""
    return max(data.rfind(b"\n"), data.rfind(b"\r")) + 1


def _skip_line(f: IO[bytes], feed: Callable[[bytes], object], seen: int, step: int) -> tuple[int, bytes]:
    """Read past the rest of an over-long line, ``step`` bytes at a time: (its size in bytes,
    what follows its end, less than ``step`` bytes)."""
    size = seen
    while chunk := f.read(step):
        feed(chunk)
        ends = [i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0]
        if not ends:
            size += len(chunk)
            continue
        end = min(ends) + 1
        if chunk[end - 1:end] == b"\r":
            if end == len(chunk) and (more := f.read(1)):  # is the \r the first half of \r\n?
                feed(more)
                chunk += more
            end += chunk[end:end + 1] == b"\n"
        return size + end, chunk[end:]
    return size, b""
