"""The directories a sandbox writes: handed to its id before it starts, reclaimed after it ends.

When the runner is root, a sandbox runs as an id of its own (``runner.sandbox.ids``), so
the directories it may write (the workspace, its HOME, TMP and ``/dev/shm`` directories,
its output directory) are made that id's for the run: every entry, changed with
``lchown`` relative to its parent's descriptor (``runner.walk``), never through a
symlink. After every process of the sandbox is gone the runner reclaims them the same
way: everything becomes the runner's again (set-id bits dropped), and whatever is neither
a directory, a regular file nor a symlink (a FIFO, a socket: what a reader of the
runner's could block on or be tricked by) is removed and named. The same walk measures
what the sandbox left: bytes and entries against its limits (docs/security.md,
"Sandbox user", "Special files").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.walk import DIR_FLAGS, Entry, Tally, is_special, walk


def hand_over(paths: list[Path], uid: int, gid: int) -> None:
    """Make every entry under ``paths`` (and each path) belong to ``uid:gid``."""

    def give(e: Entry) -> bool:
        try:
            os.chown(e.name, uid, gid, dir_fd=e.dir_fd, follow_symlinks=False)
        except OSError:
            pass
        return True

    for path in paths:
        if _chown_root(path, uid, gid):
            walk(path, give)


def reclaim(paths: list[Path], owner: tuple[int, int] | None, *, deadline: float | None = None) -> Tally:
    """Take ``paths`` back after the sandbox ended: special files removed (named in the
    tally), everything given to ``owner`` (the runner's uid, gid; None: ownership stays),
    bytes and entries counted. ``deadline`` (monotonic) cuts the walk short, incomplete."""
    tally = Tally()
    fix = os.geteuid() != 0  # a runner that is not root may have to give itself access back

    def take(e: Entry) -> bool:
        if is_special(e.st):
            try:
                os.unlink(e.name, dir_fd=e.dir_fd)
            except OSError:
                pass
            tally.special.append(e.shown())
            return False
        tally.add(e.st)
        if owner is not None:
            _take_back(e, owner)
        return True

    for path in paths:
        if owner is not None:
            _chown_root(path, *owner)
        done = walk(path, take, deadline=deadline, fix_access=fix)
        tally.complete = tally.complete and done.complete
    return tally


def _take_back(e: Entry, owner: tuple[int, int]) -> None:
    try:
        if (e.st.st_uid, e.st.st_gid) != owner:
            os.chown(e.name, *owner, dir_fd=e.dir_fd, follow_symlinks=False)
        if stat.S_ISREG(e.st.st_mode) and e.st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            os.chmod(e.name, stat.S_IMODE(e.st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID), dir_fd=e.dir_fd)
    except OSError:
        pass


def _chown_root(path: Path, uid: int, gid: int) -> bool:
    """Give the directory ``path`` itself to ``uid:gid`` (False when it is not a directory)."""
    try:
        fd = os.open(path, DIR_FLAGS)
    except OSError:
        return False
    try:
        os.fchown(fd, uid, gid)
    finally:
        os.close(fd)
    return True
