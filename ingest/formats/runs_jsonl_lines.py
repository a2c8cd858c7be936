"""A runs-jsonl file as an Arrow table of its lines, without a Python object per line."""

from __future__ import annotations

import pyarrow as pa


def read_lines(data: bytes) -> pa.Table:
    """``(lineno, text)`` of every line, numbered as a text-mode ``for line in file`` numbers
    them (``\\r\\n``, ``\\r`` and ``\\n`` end a line; bytes that are not UTF-8 become U+FFFD).
    Each text is a view into the file's bytes, its line break included (JSON allows trailing
    whitespace; the row path strips it): Arrow offsets at each newline, no Python object per line."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        return _split(data)
    except pa.ArrowInvalid:  # not UTF-8 somewhere: decode as the row path did (no newline moves)
        return _split(data.decode("utf-8", errors="replace").encode("utf-8"))


def _split(data: bytes) -> pa.Table:
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
    return pa.table({"lineno": pa.array(np.arange(1, len(ends) + 1, dtype=np.int64)), "text": text})
