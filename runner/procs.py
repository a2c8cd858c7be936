"""Subprocesses the runner can always stop: own process group, group kill, bounded output.

Agents and graders are untrusted programs. Each runs in a new session so a timeout (or
Ctrl-C of the runner) kills the whole group, including children that outlive the
parent. Output is streamed to files and capped so a program printing gigabytes
cannot fill the disk; the cap is recorded as ``truncated``.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout and of stderr kept per process (the rest is read and discarded)."""

Watch = Callable[[float], tuple[str, str] | None]
"""Asked while a program runs: (kind, reason) to stop it now (a limit it went over), or None.
Its argument is the timeout's moment (``time.monotonic``): a check still running then
gives up, so a slow check never holds a timed-out program."""
WATCH_MIN_S = 0.25
"""Shortest pause between two ``watch`` calls; a watch that takes longer waits 4× its time."""
STOP_GRACE_S = 10.0
"""How long a program asked to end (``stop``) has before its process group is killed."""


_live_lock = threading.Lock()
_live_groups: set[int] = set()


@dataclass(frozen=True)
class ProcResult:
    exit_code: int | None
    signal: int | None
    timed_out: bool
    could_not_start: bool
    duration_s: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = None
    pid: int | None = None
    limit: str | None = None
    """Set when the program was stopped by, or ran into, a resource limit: which, and its value."""
    limit_kind: str | None = None
    """The limit's kind (``workspace``, ``workspace_files``, ``processes``, ``memory``, ``time``)."""
    written: tuple[int, int] | None = None
    """(bytes, entries) its writable directories held when it ended (``runner.sandbox``)."""
    special: tuple[str, ...] = ()
    """Special files (FIFOs, sockets, devices) it left there, removed by the runner."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all() -> None:
    """Kill every process group started here that is still running (Ctrl-C path)."""
    with _live_lock:
        groups = list(_live_groups)
    for pgid in groups:
        kill_group(pgid)


def run_bounded(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    limit: int = OUTPUT_LIMIT,
    stdin_bytes: bytes | None = None,
    pass_fds: tuple[int, ...] = (),
    watch: Watch | None = None,
    stop: Callable[[], None] | None = None,
) -> ProcResult:
    """Run ``argv`` (no shell) in its own session; kill the group on timeout or exit.

    After the main process exits the group is killed too, so forked children cannot
    keep running (or keep writing into the workspace) after their stage ended. ``watch``
    is asked now and then while it runs; a reason from it kills the group at once and is
    the result's ``limit``. ``stop`` is how a timed-out or stopped program is asked to end
    (a sandbox's lifeline closed): the group is killed only if it has not ended
    ``STOP_GRACE_S`` later.
    """
    start = time.monotonic()
    # The output files are opened here, before the program starts: opened later (in the pumps)
    # a program that is not isolated could first swap a parent directory for a symlink.
    sinks = [_open_sink(stdout_path), _open_sink(stderr_path)]
    proc = _spawn(argv, cwd, env, stdin_bytes is not None, pass_fds)
    if isinstance(proc, str):
        for sink in sinks:
            if sink is not None:
                sink.close()
        return ProcResult(None, None, False, True, time.monotonic() - start, error=proc)
    pgid = proc.pid
    with _live_lock:
        _live_groups.add(pgid)
    out_flag, err_flag = [False], [False]
    pumps = [
        threading.Thread(target=_copy, args=(proc.stdout, sinks[0], limit, out_flag), daemon=True),
        threading.Thread(target=_copy, args=(proc.stderr, sinks[1], limit, err_flag), daemon=True),
    ]
    for t in pumps:
        t.start()
    if stdin_bytes is not None:
        threading.Thread(target=_feed, args=(proc.stdin, stdin_bytes), daemon=True).start()
    timed_out, stopped = False, None
    try:
        timed_out, stopped = _wait_watched(proc, max(timeout, 0.001), watch)
        if stop is not None and proc.poll() is None:
            stop()
            wait_exit(proc, STOP_GRACE_S)
    finally:
        kill_group(pgid)
        proc.wait()
        with _live_lock:
            _live_groups.discard(pgid)
    for t in pumps:
        t.join(timeout=5)
    rc = proc.returncode
    sig = -rc if rc is not None and rc < 0 else None
    return ProcResult(
        exit_code=None if sig is not None else rc,
        signal=sig,
        timed_out=timed_out,
        could_not_start=False,
        duration_s=time.monotonic() - start,
        stdout_truncated=out_flag[0],
        stderr_truncated=err_flag[0],
        pid=proc.pid,
        limit=stopped[1] if stopped else None,
        limit_kind=stopped[0] if stopped else None,
    )


def _spawn(argv: list[str], cwd: Path, env: dict[str, str], stdin: bool,
           pass_fds: tuple[int, ...]) -> subprocess.Popen[bytes] | str:
    """The program started in a session of its own, or why it could not start; the
    passed descriptors are closed here either way (the child holds its copies)."""
    try:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                pass_fds=pass_fds)
    except (OSError, ValueError) as exc:
        return str(exc)
    finally:
        for fd in pass_fds:
            os.close(fd)


def _wait_watched(proc: subprocess.Popen[bytes], timeout: float,
                  watch: Watch | None) -> tuple[bool, tuple[str, str] | None]:
    """(timed out, the watch's reason) once ``proc`` exits, ``timeout`` passes or the watch objects."""
    if watch is None:
        return not wait_exit(proc, timeout), None
    end = time.monotonic() + timeout
    pause = WATCH_MIN_S
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return True, None
        if wait_exit(proc, min(left, pause)):
            return False, None
        began = time.monotonic()
        reason = watch(end)
        if reason is not None:
            return False, reason
        pause = max(WATCH_MIN_S, 4 * (time.monotonic() - began))


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until ``proc`` exits (True) or ``timeout`` seconds pass (False).

    Wakes when the process exits, through a pidfd: ``Popen.wait(timeout)`` polls with
    sleeps of up to 50 ms, which every short grader would pay (and be measured with).
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux ≥ 5.3: the standard library's loop
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        ready = poller.poll(max(1, int(timeout * 1000)))
    finally:
        os.close(fd)
    if not ready:
        return False
    proc.wait()
    return True


def _feed(pipe: IO[bytes] | None, data: bytes) -> None:
    if pipe is None:
        return
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, OSError, ValueError):
            pass


def _open_sink(dest: Path | None) -> IO[bytes] | None:
    if dest is None:
        return None
    return os.fdopen(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644), "wb")


def _copy(src: IO[bytes], out: IO[bytes] | None, limit: int, flag: list[bool]) -> None:
    """Copy up to ``limit`` bytes from a pipe to ``out`` (then closed); read and discard the rest."""
    written = 0
    try:
        while chunk := src.read1(65536):  # type: ignore[attr-defined]
            room = limit - written
            if room <= 0 or len(chunk) > room:
                flag[0] = True
            if out is not None and room > 0:
                out.write(chunk[:room])
                written += min(room, len(chunk))
    finally:
        if out is not None:
            out.close()
        src.close()


def ordinary_env(extra: dict[str, str] | None = None, pass_env: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """The allow-listed environment: basic variables, named pass-throughs, ``extra``."""
    env = {k: os.environ[k] for k in ALLOWED_ENV if k in os.environ}
    # The interpreter running trialhouse comes first on PATH, so `python3` in a grader
    # or agent argv is that interpreter (and skips slow version-manager shims).
    interpreter_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([interpreter_dir, env.get("PATH", os.defpath)])
    env.update({k: os.environ[k] for k in pass_env if k in os.environ})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


ALLOWED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "SHELL")
