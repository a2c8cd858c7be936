"""One copy of a run per Ray node, shared by the node's trial hosts (docs/scale.md).

A run's copy on a node (its run store with the pinned commits, its input snapshot) is
``<tmp>/trialhouse-node-<run id>-u<uid>/``, built by the first host process that needs
it and then used by every host of that run on the node. Two lock files beside it say
who uses it, with ``flock`` (released by the kernel when a process dies, however it
dies): every user holds ``.users`` shared for as long as it uses the copy; the builder
holds ``.build`` exclusive while it builds. A copy nobody holds ``.users`` on is stale:
``leave`` removes it when the last user goes, and ``sweep`` removes those whose users
all died (a host killed by Ray runs no clean-up). This module does not import Ray.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.pristine import remove_tree

PREFIX = "trialhouse-node-"
READY = ".ready"


@dataclass
class NodeCopy:
    """A run's copy on this node, held (``.users`` shared) until ``leave``."""

    root: Path
    users_fd: int


def _paths(tmp: Path, run_id: str) -> tuple[Path, Path, Path]:
    base = tmp / f"{PREFIX}{run_id}-u{os.getuid()}"
    return base, base.with_name(base.name + ".users"), base.with_name(base.name + ".build")


def _locked(path: Path, how: int) -> int | None:
    """An open descriptor of ``path`` locked ``how``; None when non-blocking and held. The
    lock is taken again when the file was removed and made anew meanwhile (a sweeper
    unlinks it after locking it), so a lock held is always the current file's."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, how)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def join(tmp: Path, run_id: str, build: Callable[[Path], None]) -> NodeCopy:
    """This node's copy of ``run_id``: built with ``build(root)`` by the first caller, used
    as it is by the others (they wait while it is built)."""
    root, users, building = _paths(tmp, run_id)
    users_fd = _locked(users, fcntl.LOCK_SH)
    assert users_fd is not None
    try:
        build_fd = _locked(building, fcntl.LOCK_EX)
        assert build_fd is not None
        try:
            if not (root / READY).exists():
                remove_tree(root)  # a builder that died half-way left it
                root.mkdir(mode=0o700)
                build(root)
                (root / READY).write_text("")
        finally:
            os.close(build_fd)
    except BaseException:
        os.close(users_fd)
        raise
    return NodeCopy(root, users_fd)


def leave(copy: NodeCopy) -> bool:
    """Stop using ``copy``; the last user removes it. Returns whether this call did."""
    try:
        fcntl.flock(copy.users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(copy.users_fd)
        return False
    _remove(copy.root)
    os.close(copy.users_fd)
    return True


def _remove(root: Path) -> None:
    remove_tree(root)
    for suffix in (".build", ".users"):
        try:
            os.unlink(root.with_name(root.name + suffix))
        except FileNotFoundError:
            pass


def sweep(tmp: Path, keep: str | None = None) -> list[Path]:
    """Remove the copies on this node that no live process uses (all but run ``keep``'s);
    returns what it removed. Never fails: it is housekeeping."""
    gone = []
    for users in tmp.glob(f"{PREFIX}*-u{os.getuid()}.users"):
        root = users.with_name(users.name[: -len(".users")])
        if keep is not None and root.name == f"{PREFIX}{keep}-u{os.getuid()}":
            continue
        try:
            fd = _locked(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if fd is None:
                continue
            try:
                _remove(root)
                gone.append(root)
            finally:
                os.close(fd)
        except OSError:
            continue
    return gone
