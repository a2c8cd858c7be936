"""Paths a command creates, checked before any work starts.

A warehouse, a run directory, a report's output, a bundle or a reviews file: each command
that writes one calls ``creatable`` first, so a place that cannot be written, or a parent
that is a file, is one line naming the path and what to do (docs/design.md, "Errors"),
never a traceback from deep inside the work after minutes of it. The check writes a probe
file where the command will write and removes it: permission bits say nothing for root, a
read-only mount or a pseudo-filesystem (/proc, /sys), and the probe answers for all of them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from trialhouse.app import CommandError


def _nearest(path: Path) -> Path:
    """The path itself or its nearest ancestor that exists (a link counts as existing)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path.cwd()


def creatable(path: Path, option: str, kind: Literal["file", "dir"]) -> None:
    """Refuse, with one line, a ``kind`` path the command could not create or write in.

    ``option`` names it in the message (``--warehouse``, ``--output``, ``DIR``). An existing
    file is fine for a file, an existing directory for a directory (whether it may be
    reused is the command's own rule); the directory that will hold it must be writable."""
    path = Path(path)
    shown = f"{option} {path}"
    try:
        path.exists()
    except PermissionError:  # a directory on the way that this user may not search
        raise CommandError(f"{shown}: a directory on the way cannot be searched by this user "
                           f"(permission denied); choose a place you can reach for {option}") from None
    if path.exists():
        if kind == "file" and path.is_dir():
            raise CommandError(f"{shown}: is a directory; give a file path inside it, e.g. "
                               f"{path / 'trialhouse.duckdb'}")
        if kind == "dir" and not path.is_dir():
            raise CommandError(f"{shown}: exists and is not a directory; choose another "
                               f"{option} (or move {path} away)")
    anchor = _nearest(path if kind == "dir" else path.parent)
    if not anchor.is_dir():
        raise CommandError(f"{shown}: {anchor} is a file, not a directory, so nothing can be "
                           f"created under it; choose another {option} (or move {anchor} away)")
    try:
        fd, probe = tempfile.mkstemp(prefix=".trialhouse-write-check-", dir=anchor)
    except OSError as exc:
        why = (exc.strerror or type(exc).__name__).lower()
        raise CommandError(f"{shown}: cannot write in {anchor} ({why}); choose a place you "
                           f"can write to for {option}") from None
    os.close(fd)
    os.unlink(probe)
