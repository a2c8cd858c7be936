"""Walks of an agent's directories that never follow a symlink.

An agent decides which names in its workspace, HOME and TMP are symlinks; the runner
walks them (to size them, to keep their files) with ``lstat`` and
``follow_symlinks=False`` only, so a link never takes it outside (docs/security.md,
"Evidence").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def tree_size(*roots: Path) -> int:
    """Apparent size of every regular file under ``roots`` (symlinks not followed)."""
    total = 0
    stack: list[str | Path] = [r for r in roots if os.path.isdir(r) and not os.path.islink(r)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def lstat_inside(ws: Path, rel: str) -> os.stat_result | None:
    """lstat of ``ws/rel`` if no directory on the way is a symlink (never follow one)."""
    cur = ws
    parts = rel.split("/")
    for part in parts[:-1]:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
    try:
        return os.lstat(ws / rel)
    except OSError:
        return None


def regular_files(root: Path) -> list[Path]:
    """Regular files under ``root``, never following a symlink, skipping ``.git``."""
    out: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if not (d == root and entry.name == ".git"):
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                out.append(Path(entry.path))
    return out
