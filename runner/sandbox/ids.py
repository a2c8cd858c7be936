"""The unprivileged ids sandboxes run as when the runner is root: one per running sandbox.

A root runner never lets a sandbox run as root: each sandbox gets a uid (and the same gid)
of its own from ``isolation.sandbox_ids`` (default 2,000,000,000 up, 10,000 of them; no
account uses them), leased for as long as it runs. Two sandboxes running at once never
share an id, whichever runner started them: the lease is an exclusive ``flock`` on a file
named after the id in a root-only directory, which the kernel releases when the runner
dies, however it dies. So sandboxes cannot signal, trace or share a process count with
each other or with anything else on the host, and a file they leave is theirs only
until the runner takes it back (``runner.sandbox.ownership``). A runner that is not root
needs none of this: bubblewrap maps the runner's own unprivileged id (docs/security.md,
"Sandbox user").
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox.request import SandboxUnavailable

LEASE_DIR = Path("/run/trialhouse/sandbox-ids")
"""Where the lease files live (root-only: ``/run`` is root's)."""


@dataclass(frozen=True)
class IdRange:
    """``count`` ids from ``first`` (uid = gid)."""

    first: int = 2_000_000_000
    count: int = 10_000


def lease_dir() -> Path:
    """The lease directory, created root-only (never through a symlink, never someone else's)."""
    for d in (LEASE_DIR.parent, LEASE_DIR):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
            raise SandboxUnavailable(f"{d} is not a directory only root may write: remove it")
    return LEASE_DIR


def reap(uid: int) -> list[int]:
    """Kill every process whose real, effective or saved uid is ``uid``; returns their pids.

    Only a sandbox runs as a leased id, and only while its lease is held: a process of that
    id found by the next holder outlived its runner (the lifeline makes that impossible,
    ``runner.sandbox.init``; this is the second line). ``lease`` looks only when the lease
    file says its last holder never released it (the scan of ``/proc`` costs ~10-90 ms)."""
    killed = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", "rb") as fh:
                line = next((ln for ln in fh if ln.startswith(b"Uid:")), b"")
        except OSError:
            continue
        if str(uid).encode() in line.split()[1:4]:
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                killed.append(int(entry.name))
            except ProcessLookupError:
                pass
    return killed


@contextmanager
def lease(ids: IdRange) -> Iterator[int]:
    """An id of ``ids`` no other running sandbox holds, held until the block ends."""
    where = lease_dir()
    start = random.randrange(ids.count)
    for k in range(ids.count):
        uid = ids.first + (start + k) % ids.count
        fd = os.open(where / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            if os.pread(fd, 1, 0):  # its last holder died holding it: nothing of its sandbox runs on
                reap(uid)
            os.pwrite(fd, b"held\n", 0)
            yield uid
            os.ftruncate(fd, 0)  # a clean release: the next holder need not look
        finally:
            os.close(fd)  # releases the lock
        return
    raise SandboxUnavailable(f"all {ids.count} sandbox ids from {ids.first} are in use: "
                             "raise isolation.sandbox_ids.count in the manifest")
