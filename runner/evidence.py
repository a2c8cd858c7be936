"""Reading what an agent wrote and writing evidence, without ever following its symlinks.

An agent controls every byte of its workspace and of the output directory it is given,
including which names are symlinks. Evidence is therefore written only into
directories the runner created, through a fresh temporary file renamed into place
(a planted symlink at the final name is replaced, never written through), and agent
files are read with ``O_NOFOLLOW`` and a size cap.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int = 0o644, *, durable: bool = False) -> None:
    """Write ``data`` to ``path`` via a new temporary file in the same directory + rename.

    Readers see the old file or the whole new one, never a part. ``durable`` also syncs
    it to disk before the rename (the events seal); evidence is not synced one file at a
    time: ``events.jsonl``, which names it, is not synced per line either."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read_capped(path: Path, limit: int) -> tuple[bytes | None, bool]:
    """Up to ``limit`` bytes of the regular file ``path`` (not followed if a symlink).

    Returns (content, truncated); content is None when the path is missing, a symlink
    or not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, False
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None, False
        data = fh.read(limit + 1)
    return data[:limit], len(data) > limit
