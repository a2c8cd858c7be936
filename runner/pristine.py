"""Runner-written directories that are proven untouched before they are used again.

A grading copy (the captured tree, the input snapshot, a grader's HOME) used to be
written fresh for every criterion and removed after it. Creating and removing
directories is most of what that costs (an ``rmdir`` is milliseconds on a disk mounted
with online discard), while a grader almost never changes its copy. So the runner
records what it wrote and, before the next use, checks that the directory is exactly
that again; only then is it reused, otherwise it is removed and written afresh.

"Exactly that" is checked without trusting anything a grader controls: the directory is
walked without following symlinks and must hold the recorded entries and nothing else;
every file and symlink must have its recorded ``(device, inode, size, mtime, ctime,
mode)`` and every directory its ``(device, inode, mode)``. An unprivileged process cannot
set a ctime, so a changed file cannot keep its key — except within one tick of the
filesystem clock. A file whose recorded ctime lies within ``RACY_NS`` before the moment
the directory was last handed to a program is therefore also checked by content (the
same "racily clean" rule git applies to its index).
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RACY_NS = 50_000_000
"""Files written this close (ns) before a program got the directory are checked by content:
well above the coarsest filesystem timestamp tick (10 ms at HZ=100)."""


def stat_key(st: os.stat_result) -> tuple[int, ...]:
    # ctime cannot be set by an unprivileged process, so a file whose content changed
    # cannot keep all of these; a match means the content is still the recorded one
    # (racy entries aside, see the module docstring).
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


@dataclass
class Pristine:
    """The record of one runner-written directory (see the module docstring).

    ``content_ok(rel, path)`` says whether the file or symlink at ``path`` still holds
    what the runner wrote for ``rel`` (used for racy entries only).
    """

    root: Path
    content_ok: Callable[[str, Path], bool]
    files: dict[str, tuple[int, ...]] = field(default_factory=dict)
    dirs: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    exposed_ns: int = 0
    """When a program last got the directory (0: never since it was recorded)."""

    def record(self) -> bool:
        """Record the directory as it is now (right after the runner wrote it)."""
        self.files, self.dirs, self.exposed_ns = {}, {}, 0
        return self._walk(self._remember)

    def expose(self) -> None:
        """A program is about to get the directory."""
        self.exposed_ns = time.time_ns()

    def intact(self) -> bool:
        """Whether the directory is still exactly what was recorded."""
        if not self.dirs:
            return False
        seen_files: set[str] = set()
        seen_dirs: set[str] = set()

        def check(rel: str, st: os.stat_result, is_dir: bool) -> bool:
            if is_dir:
                seen_dirs.add(rel)
                return self.dirs.get(rel) == (st.st_dev, st.st_ino, st.st_mode)
            seen_files.add(rel)
            key = self.files.get(rel)
            if key is None or key != stat_key(st):
                return False
            racy = self.exposed_ns and st.st_ctime_ns >= self.exposed_ns - RACY_NS
            return not racy or self.content_ok(rel, self.root / rel)

        return (self._walk(check) and seen_files == self.files.keys()
                and seen_dirs == self.dirs.keys())

    def _remember(self, rel: str, st: os.stat_result, is_dir: bool) -> bool:
        if is_dir:
            self.dirs[rel] = (st.st_dev, st.st_ino, st.st_mode)
        else:
            self.files[rel] = stat_key(st)
        return True

    def _walk(self, visit: Callable[[str, os.stat_result, bool], bool]) -> bool:
        """Visit every entry under ``root`` (root itself as ``""``), never following a
        symlink; False as soon as ``visit`` says so or something is neither a directory,
        a regular file nor a symlink, or cannot be read."""
        try:
            st = os.lstat(self.root)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or not visit("", st, True):
            return False
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            try:
                with os.scandir(self.root / rel_dir if rel_dir else self.root) as it:
                    entries = list(it)
            except OSError:
                return False
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    return False
                if stat.S_ISDIR(st.st_mode):
                    if not visit(rel, st, True):
                        return False
                    stack.append(rel)
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    if not visit(rel, st, False):
                        return False
                else:
                    return False
        return True


def remove_tree(path: Path) -> None:
    """Remove a directory an agent may have made hostile (read-only dirs, symlinks)."""
    if not os.path.lexists(path):
        return
    if os.path.islink(path) or not path.is_dir():
        path.unlink()
        return

    def retry(func: Any, name: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            if not os.path.islink(name):
                os.chmod(name, stat.S_IRWXU)
        except OSError:
            pass
        func(name)

    shutil.rmtree(path, onerror=retry)


class Trash:
    """Directories the runner is done with, removed by one background thread.

    Removing a directory tree costs a trial mostly waiting for the disk (an ``rmdir`` is
    milliseconds on a filesystem mounted with online discard) and little CPU, so a trial
    renames what it is done with into ``root`` (instant, same filesystem) and goes on;
    ``close()`` waits until everything is gone. What a rename cannot move is removed on
    the spot. Nothing in ``root`` is ever read again.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._count = itertools.count()

    def discard(self, path: Path) -> None:
        """``path`` (a directory, file or symlink; never followed) is gone for the caller."""
        if not os.path.lexists(path):
            return
        with self._lock:
            if self._thread is None:
                self.root.mkdir(parents=True, exist_ok=True)
                self._thread = threading.Thread(target=self._work, name="trialhouse-trash",
                                                daemon=True)
                self._thread.start()
            dest = self.root / f"{next(self._count)}"
        try:
            os.rename(path, dest)
        except OSError:
            remove_tree(path)
            return
        self._queue.put(dest)

    def close(self) -> None:
        """Wait until everything discarded so far is removed."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _work(self) -> None:
        while (path := self._queue.get()) is not None:
            try:
                remove_tree(path)
            except OSError:
                pass  # its parent goes with the run's cache (RunStore.close)
