"""Walks of an agent's directories that never follow a symlink and never open what is not a directory.

An agent decides which names in its workspace, HOME and TMP are symlinks, FIFOs, sockets
or directories nested deeper than any path can name. The runner walks them (to measure
them, to hand them back, to keep their files) one directory at a time, relative to an open
descriptor of its parent: every directory is opened with ``O_DIRECTORY | O_NOFOLLOW``
(a symlink, a FIFO or a device in its place is refused before anything is opened), checked
to be the inode ``lstat`` saw, and left through ``..`` checked the same way; only one
directory descriptor is open at a time and no path string is ever built, so a tree of any
depth is walked whatever its path length (docs/security.md, "Evidence", "Limits").
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
"""How every directory of a walk is opened: never through a symlink, never anything else."""
SHOWN_PATH = 200
"""Characters of a path kept when a walk names an entry (a path may be longer than PATH_MAX)."""


@dataclass
class Frame:
    """One directory on the way down: its identity, its name, the entries left to visit."""

    ident: tuple[int, int]
    name: str
    names: list[str]


@dataclass
class Entry:
    """One entry met by a walk: its parent directory's descriptor, its name, its ``lstat``."""

    dir_fd: int
    name: str
    st: os.stat_result
    frames: list[Frame]

    def rel(self) -> str:
        """The entry's path below the walk's root (built on demand: it may be very long)."""
        return "/".join([*(f.name for f in self.frames[1:]), self.name])

    def shown(self) -> str:
        """The path for a message: cut to ``SHOWN_PATH`` characters."""
        rel = self.rel()
        return rel if len(rel) <= SHOWN_PATH else rel[:SHOWN_PATH] + f"… ({len(rel)} characters)"

    @property
    def depth(self) -> int:
        return len(self.frames)


Visit = Callable[[Entry], bool]
"""Called for every entry (never the root); for a directory, True descends into it."""


@dataclass
class Walked:
    """How a walk ended: ``complete`` unless it hit its deadline or the tree changed under it."""

    complete: bool = True
    why: str = ""


class _Raced(Exception):
    """A directory was not the one ``lstat`` saw (the tree is changing under the walk)."""


def walk(root: Path, visit: Visit, *, deadline: float | None = None,
         clock: Callable[[], float] = time.monotonic, fix_access: bool = False) -> Walked:
    """Visit every entry under ``root`` (see the module docstring), depth first.

    ``deadline`` (on ``clock``) ends the walk early, incomplete. ``fix_access`` lets the
    walk give a directory it owns but cannot read or enter (an agent's ``chmod 000``) its
    owner's permissions back instead of leaving it out (runners that are not root).
    """
    try:
        fd = os.open(root, DIR_FLAGS)
    except OSError as exc:
        return Walked(exc.errno == 2, "" if exc.errno == 2 else f"{root}: {exc.strerror}")
    try:
        top = os.fstat(fd)
        stack = [Frame((top.st_dev, top.st_ino), "", _listing(fd, fix_access))]
        seen = 0
        while stack:
            frame = stack[-1]
            if not frame.names:
                stack.pop()
                if stack:
                    parent = _up(fd, stack[-1].ident)
                    os.close(fd)
                    fd = parent
                continue
            name = frame.names.pop()
            seen += 1
            if deadline is not None and seen % 256 == 0 and clock() > deadline:
                return Walked(False, "the walk ran out of time")
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone since the listing
            if not visit(Entry(fd, name, st, stack)) or not stat.S_ISDIR(st.st_mode):
                continue
            child = _down(fd, name, st, fix_access)
            if child is None:
                continue
            try:
                names = _listing(child, fix_access)
            except OSError:
                os.close(child)
                continue
            os.close(fd)
            fd = child
            stack.append(Frame((st.st_dev, st.st_ino), name, names))
        return Walked()
    except _Raced:
        return Walked(False, "the tree changed during the walk")
    finally:
        os.close(fd)


def _listing(fd: int, fix_access: bool) -> list[str]:
    try:
        return os.listdir(fd)
    except PermissionError:
        if not fix_access:
            raise
        os.fchmod(fd, stat.S_IRWXU)
        return os.listdir(fd)


def _down(fd: int, name: str, st: os.stat_result, fix_access: bool) -> int | None:
    """The directory ``name`` of ``fd``, opened if it is still the one ``st`` describes."""
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except PermissionError:
        if not fix_access:
            return None
        try:
            os.chmod(name, stat.S_IRWXU, dir_fd=fd, follow_symlinks=False)
            child = os.open(name, DIR_FLAGS, dir_fd=fd)
        except OSError:
            return None
    except OSError:
        return None  # no longer a directory (a symlink, a FIFO...): nothing was opened
    now = os.fstat(child)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        os.close(child)
        return None
    return child


def _up(fd: int, ident: tuple[int, int]) -> int:
    """The parent of ``fd`` through ``..``, which must be the directory the walk came from."""
    try:
        parent = os.open("..", DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _Raced() from exc
    st = os.fstat(parent)
    if (st.st_dev, st.st_ino) != ident:
        os.close(parent)
        raise _Raced()
    return parent


@dataclass
class Tally:
    """What a set of directories holds: bytes (apparent sizes), entries, special files."""

    bytes: int = 0
    entries: int = 0
    special: list[str] = field(default_factory=list)
    """Entries that are neither a directory, a regular file nor a symlink (FIFOs, sockets,
    devices), as ``root: path`` (cut to ``SHOWN_PATH``)."""
    complete: bool = True

    def add(self, st: os.stat_result) -> None:
        self.bytes += max(st.st_size, 0)
        self.entries += 1


def is_special(st: os.stat_result) -> bool:
    """Neither a directory, a regular file nor a symlink: a FIFO, a socket, a device."""
    return not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode))


def measure(roots: list[Path], *, deadline: float | None = None, fix_access: bool = False) -> Tally:
    """Bytes and entries under ``roots`` (every file, directory, symlink and special file)."""
    tally = Tally()

    def count(e: Entry) -> bool:
        tally.add(e.st)
        return True

    for root in roots:
        done = walk(root, count, deadline=deadline, fix_access=fix_access)
        tally.complete = tally.complete and done.complete
    return tally


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
