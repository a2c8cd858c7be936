"""Shared grader plumbing: exit 0 = behaviour present, 1 = absent, 2 = grader problem.

Every grader script calls ``run(CHECKS)``; the check name is the only argument.
The code under test is imported from $TRIALHOUSE_WORKSPACE. Anything the workspace
code raises (including a missing module or function) counts as "absent" (exit 1).

The criteria use trialhouse's success token: the runner writes a one-time token to
stdin, read here before any workspace code is importable, and written to
$TRIALHOUSE_RESULT_FILE only after a check passed. Workspace code that ends this
process early (``os._exit(0)``) therefore fails instead of passing.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import tempfile
import threading
from pathlib import Path


def _infra(message: str) -> None:
    print(f"grader error: {message}", file=sys.stderr)
    sys.exit(2)


def _read_token() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.readline().strip()


def run(checks: dict) -> None:
    sys.dont_write_bytecode = True  # never leave __pycache__ in the workspace
    token = _read_token()
    workspace = os.environ.get("TRIALHOUSE_WORKSPACE")
    if not workspace or not os.path.isdir(workspace):
        _infra("TRIALHOUSE_WORKSPACE is not set or is not a directory")
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        _infra(f"usage: {sys.argv[0]} CHECK (one of {', '.join(sorted(checks))})")
    name = sys.argv[1]
    sys.path.insert(0, workspace)
    try:
        checks[name]()
    except AssertionError as exc:
        print(f"FAIL {name}: {exc}")
        sys.exit(1)
    except BaseException as exc:  # the workspace code itself failed: behaviour absent
        print(f"FAIL {name}: workspace code raised {type(exc).__name__}: {exc}")
        sys.exit(1)
    print(f"PASS {name}")
    result = os.environ.get("TRIALHOUSE_RESULT_FILE")
    if token and result:
        with open(result, "w", encoding="utf-8") as fh:
            fh.write(token)
    sys.exit(0)


def raises(exc_type, fn, *args, **kwargs):
    """Assert that fn(*args) raises exc_type; other exceptions propagate (→ exit 1)."""
    try:
        fn(*args, **kwargs)
    except exc_type as exc:
        return exc
    raise AssertionError(f"{getattr(fn, '__name__', fn)}{args!r} did not raise {exc_type.__name__}")


def equal(actual, expected, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


class RacyDict(dict):
    """A dict that makes a read-modify-write race happen on purpose.

    Each thread's ``pause_at``-th read of ``key`` reads the value, then waits (briefly)
    at a barrier until ``parties`` threads have read it too. Without a lock the threads all read the same
    value before anyone writes; with a lock the barrier times out and nothing is lost.
    """

    def __init__(self, data, key, parties: int = 2, pause_at: int = 1, timeout: float = 0.1):
        super().__init__(data)
        self._key = key
        self._pause_at = pause_at
        self._timeout = timeout
        self._barrier = threading.Barrier(parties)
        self._local = threading.local()

    def _maybe_pause(self, key) -> None:
        if key != self._key:
            return
        count = getattr(self._local, "reads", 0) + 1
        self._local.reads = count
        if count == self._pause_at and not self._barrier.broken:
            try:
                self._barrier.wait(self._timeout)
            except threading.BrokenBarrierError:
                pass

    def __getitem__(self, key):
        value = super().__getitem__(key)  # read first, then let the other thread read too
        self._maybe_pause(key)
        return value

    def get(self, key, default=None):
        value = super().get(key, default)
        self._maybe_pause(key)
        return value


def in_threads(fn, threads: int) -> list:
    """Run fn() in `threads` threads at once; return results (re-raise the first error)."""
    results: list = [None] * threads
    errors: list = []

    def work(i: int) -> None:
        try:
            results[i] = fn()
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(5)
    if errors:
        raise errors[0]
    return results


def check_atomic_write(write, read, filename: str, good, bad) -> None:
    """A write that fails half-way must leave the previous file intact and no stray
    temporary files, and the target path must never be opened for writing directly."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / filename
        write(target, good)
        try:
            write(target, bad)
        except Exception:
            pass
        else:
            raise AssertionError("writing an unserialisable value did not fail")
        equal(read(target), good, "content after a failed write")
        leftovers = sorted(p.name for p in Path(tmp).iterdir() if p.name != filename)
        equal(leftovers, [], "stray files after a failed write")

        opened: list[str] = []
        real_open, real_os_open = builtins.open, os.open

        def spy_open(file, mode="r", *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and any(m in mode for m in "wax+"):
                opened.append(os.path.abspath(os.fspath(file)))
            return real_open(file, mode, *args, **kwargs)

        def spy_os_open(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR):
                opened.append(os.path.abspath(os.fspath(path)))
            return real_os_open(path, flags, *args, **kwargs)

        builtins.open = io.open = spy_open
        os.open = spy_os_open
        try:
            write(target, good)
        finally:
            builtins.open = io.open = real_open
            os.open = real_os_open
        equal(read(target), good, "content after a successful write")
        if os.path.abspath(target) in opened:
            raise AssertionError("the target file was opened for writing in place (not atomic)")
