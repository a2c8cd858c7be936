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
from dataclasses import dataclass
from pathlib import Path
from typing import IO

OUTPUT_LIMIT = 1024 * 1024
"""Bytes of stdout and of stderr kept per process (the rest is read and discarded)."""

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
) -> ProcResult:
    """Run ``argv`` (no shell) in its own session; kill the group on timeout or exit.

    After the main process exits the group is killed too, so forked children cannot
    keep running (or keep writing into the workspace) after their stage ended.
    """
    start = time.monotonic()
    # The output files are opened here, before the program starts: opened later (in the pumps)
    # a program that is not isolated could first swap a parent directory for a symlink.
    sinks = [_open_sink(stdout_path), _open_sink(stderr_path)]
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin_bytes is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except (OSError, ValueError) as exc:
        for sink in sinks:
            if sink is not None:
                sink.close()
        return ProcResult(None, None, False, True, time.monotonic() - start, error=str(exc))
    finally:
        for fd in pass_fds:
            os.close(fd)
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
    timed_out = False
    try:
        timed_out = not wait_exit(proc, max(timeout, 0.001))
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
    )


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
