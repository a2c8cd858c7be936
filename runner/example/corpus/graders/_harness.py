"""Shared grader plumbing: the verdict is decided by a process that never runs workspace code.

Every grader script ends with ``run(CHECKS)`` and is started as ``grader.py CHECK``. Exit
0 = behaviour present, 1 = absent, 2 = grader problem.

The pattern (docs/security.md, "The verdict channel"):

* The **trusted parent** reads trialhouse's one-time success token from stdin, makes itself
  undumpable (``prctl(PR_SET_DUMPABLE, 0)``: no other process of its user may read its
  memory through ``/proc/<pid>/mem`` or ptrace it), and never imports workspace code.
* It runs the check in a **child** (this same script, ``--observe CHECK FD``): a new
  process that shares no memory with it, has no token, and is the only one that imports
  the code under test. The child records what it *observes* (``see(label, value)``) and
  writes the observations as one JSON line on a pipe.
* The parent compares the observations with what the check **expects** (declared with
  ``@check({...})``), prints PASS/FAIL, and writes the token to ``$TRIALHOUSE_RESULT_FILE``
  only when every expected observation is there and equal.

Whatever the workspace code does in the child — exit early, print, read the child's frames
or memory, replace these helpers with no-ops — it can change what is observed, never the
verdict, and it never holds the token. What it can still do is read this file (it is in
the same sandbox) and report the expected values instead of computing them: code written
against a grader. Patch inspection flags code that names a grader's modules or helpers.
"""

from __future__ import annotations

import builtins
import ctypes
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PR_SET_DUMPABLE = 4
OBSERVATIONS_LIMIT = 1024 * 1024


def _infra(message: str) -> None:
    print(f"grader error: {message}", file=sys.stderr)
    sys.exit(2)


def check(expected: dict):
    """Declare what a check must observe: ``{label: value}``, compared after a JSON round trip."""
    def register(fn):
        fn.expected = expected
        return fn
    return register


def raised(name: str) -> str:
    """The observation of a call that raised ``name`` (see ``outcome``)."""
    return f"raised {name}"


def outcome(exc_type, fn, *args, **kwargs):
    """What a call did: ``raised <exc_type>`` (or a subclass), ``raised <other> …``, or its value."""
    try:
        value = fn(*args, **kwargs)
    except exc_type:
        return raised(exc_type.__name__)
    except Exception as exc:  # noqa: BLE001 - an observation, compared in the parent
        return f"raised {type(exc).__name__}: {exc}"
    return {"returned": value}


# -- the trusted parent ----------------------------------------------------------------


def _undumpable() -> None:
    """No process of this user may read this one's memory or ptrace it (Linux)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _read_token() -> str:
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.readline().strip()


def _observe_in_child(script: str, name: str) -> tuple[dict | None, str]:
    """Run check ``name`` in a child; (its report, or None with why there is none)."""
    read_end, write_end = os.pipe()
    env = {k: v for k, v in os.environ.items() if k != "TRIALHOUSE_RESULT_FILE"}
    try:
        child = subprocess.Popen([sys.executable, script, "--observe", name, str(write_end)],
                                 stdin=subprocess.DEVNULL, pass_fds=(write_end,), env=env)
    finally:
        os.close(write_end)
    data = b""
    with os.fdopen(read_end, "rb") as pipe:
        while len(data) <= OBSERVATIONS_LIMIT and (chunk := pipe.read(65536)):
            data += chunk
    code = child.wait()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and isinstance(report.get("observations"), dict):
            return report, ""
    return None, f"the check reported nothing (the code under test ended it early: exit {code})"


def _decide(name: str, expected: dict, report: dict) -> str | None:
    """Why the observations do not match the expectations, or None when they do."""
    if report.get("error"):
        return f"workspace code raised {report['error']}"
    seen = report["observations"]
    want = json.loads(json.dumps(expected, default=repr))
    for label, value in want.items():
        if label not in seen:
            return f"{label}: not observed"
        if seen[label] != value:
            return f"{label}: expected {value!r}, got {seen[label]!r}"
    return None


def _parent(checks: dict, name: str) -> None:
    _undumpable()  # before the token is read: it is never in a readable process
    token = _read_token()
    workspace = os.environ.get("TRIALHOUSE_WORKSPACE")
    if not workspace or not os.path.isdir(workspace):
        _infra("TRIALHOUSE_WORKSPACE is not set or is not a directory")
    report, why = _observe_in_child(os.path.abspath(sys.argv[0]), name)
    problem = why if report is None else _decide(name, checks[name].expected, report)
    if problem:
        print(f"FAIL {name}: {problem}")
        sys.exit(1)
    print(f"PASS {name}")
    result = os.environ.get("TRIALHOUSE_RESULT_FILE")
    if token and result:
        with open(result, "w", encoding="utf-8") as fh:
            fh.write(token)
    sys.exit(0)


def decide_without_workspace_code(decide) -> None:
    """For a check that never runs workspace code (it only reads files, e.g. with ``ast``):
    this process is the trusted parent and decides by itself. ``decide()`` gives
    ``(passed, message)``; the token is written only when it passed."""
    _undumpable()  # before the token is read, as in ``_parent``
    token = _read_token()
    passed, message = decide()
    print(message)
    result = os.environ.get("TRIALHOUSE_RESULT_FILE")
    if passed and token and result:
        with open(result, "w", encoding="utf-8") as fh:
            fh.write(token)
    sys.exit(0 if passed else 1)


# -- the child: the only process that imports workspace code ------------------------------


def _child(checks: dict, name: str, fd: int) -> None:
    out = os.fdopen(fd, "w", encoding="utf-8")
    observations: dict = {}
    error = None
    sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
    try:
        checks[name](observations.__setitem__)
    except BaseException as exc:  # noqa: BLE001 - the workspace code failed: behaviour absent
        error = f"{type(exc).__name__}: {exc}"
    out.write(json.dumps({"observations": observations, "error": error}, default=repr) + "\n")
    out.flush()
    os._exit(0)


def run(checks: dict) -> None:
    sys.dont_write_bytecode = True  # never leave __pycache__ in the workspace
    if len(sys.argv) == 4 and sys.argv[1] == "--observe" and sys.argv[2] in checks:
        _child(checks, sys.argv[2], int(sys.argv[3]))
    if len(sys.argv) != 2 or sys.argv[1] not in checks:
        _infra(f"usage: {sys.argv[0]} CHECK (one of {', '.join(sorted(checks))})")
    _parent(checks, sys.argv[1])


# -- helpers the checks use inside the child ------------------------------------------------


class RacyDict(dict):
    """A dict that makes a read-modify-write race happen on purpose.

    Each thread's ``pause_at``-th read of ``key`` reads the value, then waits at a barrier
    until ``parties`` threads have read it too. Without a lock the threads all read the same
    value before anyone writes; with a lock the barrier times out and nothing is lost. The
    wait is long enough for a thread that is running (``in_threads`` starts them together) to
    reach its read on a loaded machine: at 0.1 s a null agent's unlocked counter once passed
    while two suites shared the machine's two cores.
    """

    def __init__(self, data, key, parties: int = 2, pause_at: int = 1, timeout: float = 1.0):
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
    """Run fn() in `threads` threads at once (each calls it only when all have started);
    return results (re-raise the first error)."""
    results: list = [None] * threads
    errors: list = []
    start = threading.Barrier(threads)

    def work(i: int) -> None:
        try:
            start.wait()
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


def atomic_write_expected(good) -> dict:
    """What ``see_atomic_write`` must observe for a correct atomic write of ``good``."""
    return {"a failed write failed": True, "content after a failed write": good,
            "stray files after a failed write": [], "content after a successful write": good,
            "target opened for writing in place": False}


def see_atomic_write(see, write, read, filename: str, good, bad) -> None:
    """A write that fails half-way must leave the previous file intact and no stray
    temporary files, and the target path must never be opened for writing directly."""
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / filename
        write(target, good)
        try:
            write(target, bad)
        except Exception:
            see("a failed write failed", True)
        else:
            see("a failed write failed", False)
        see("content after a failed write", read(target))
        see("stray files after a failed write", sorted(p.name for p in Path(tmp).iterdir() if p.name != filename))

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
        see("content after a successful write", read(target))
        see("target opened for writing in place", os.path.abspath(target) in opened)
