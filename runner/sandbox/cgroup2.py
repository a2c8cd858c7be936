"""A cgroup v2 of its own for every sandbox, below a cgroup the runner has to itself.

A v2 cgroup may not both hold processes and give controllers to its children (the "no
internal processes" rule), so the runner first vacates its own cgroup C into a leaf,
``C/trialhouse-runner-<pid>``, and enables ``pids``, ``memory`` and ``cpu`` for C's children;
each sandbox then gets ``C/trialhouse-<name>``, below whatever limits C has. That needs C
to itself, as ``systemd-run --scope -p Delegate=yes trialhouse run ...``, a service with
``Delegate=yes`` or a container whose runner is alone in its cgroup give it. A runner
started by such a runner (a ``trialhouse run`` that a test or a script spawns) finds itself
in the leaf and uses C the same way. Where C holds other processes the runner moves back
and its sandboxes get rlimits; ``why_not`` says why, and the run header records it.
Tested in a guest kernel with only cgroup v2 (tests/vm/cgroup2_vm.py, ``make test-cgroup2``).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from runner.sandbox.cgroupfs import CPU_PERIOD_US, Limits, cpu_quota_us, reached
from runner.sandbox.cgroupfs import read as _read
from runner.sandbox.cgroupfs import write as _write

CONTROLLERS = ("pids", "memory", "cpu")
LEAF = "trialhouse-runner-"
_lock = threading.Lock()


@dataclass(frozen=True)
class Delegation:
    """Where sandbox cgroups go (``base``), or why there is none (``why_not``)."""

    base: Path | None
    why_not: str | None


def delegation() -> Delegation:
    """This process's delegation, set up on first use (it may move the process into a leaf)."""
    with _lock:
        return _delegation(os.getpid())


@functools.cache
def _delegation(_pid: int) -> Delegation:
    own = _own()
    if own is None:
        return Delegation(None, "no cgroup v2 hierarchy holds this process")
    missing = [c for c in CONTROLLERS if c not in _read(own / "cgroup.controllers").split()]
    if missing:
        return Delegation(None, f"cgroup v2: {', '.join(missing)} not available in {own} "
                                "(bound to cgroup v1, or not delegated)")
    if not os.access(own / "cgroup.procs", os.W_OK) or not os.access(own, os.W_OK):
        return Delegation(None, f"cgroup v2: {own} is not writable by this user (not delegated)")
    if own.name.startswith(LEAF) and _enabled(own.parent):
        return Delegation(own.parent, None)  # started by a runner that set its cgroup up
    if _enabled(own):  # only the root of a hierarchy may hold processes and give controllers
        return Delegation(own, None)
    return _vacate(own)


def _vacate(own: Path) -> Delegation:
    """Move this process into a leaf of ``own`` and enable the controllers for its children."""
    sweep(own, time.time())
    leaf = own / f"{LEAF}{os.getpid()}"
    try:
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
    except OSError as e:
        return Delegation(None, f"cgroup v2: cannot make a cgroup of the runner's own in {own} ({e.strerror})")
    try:
        _write(own / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
    except OSError as e:
        _write(own / "cgroup.procs", str(os.getpid()))
        _rmdir(leaf)
        return Delegation(None, f"cgroup v2: {own} holds other processes than the runner ({e.strerror}); "
                                "start it in a cgroup of its own, e.g. systemd-run --scope -p Delegate=yes")
    return Delegation(own, None)


STALE_S = 600
"""An empty ``trialhouse-*`` cgroup older than this was left by a runner that ended (killed):
a sandbox's own cgroup is joined the moment it is made and removed when it ends."""


def sweep(parent: Path, now: float) -> int:
    """Remove the empty ``trialhouse-*`` cgroups in ``parent`` older than ``STALE_S`` (v1 or v2);
    returns how many. Younger ones may be another runner's, made and about to be joined."""
    removed = 0
    for d in parent.glob("trialhouse-*"):
        try:
            st = d.stat()
        except OSError:
            continue
        if d.is_dir() and now - max(st.st_mtime, st.st_ctime) > STALE_S and not _read(d / "cgroup.procs").strip():
            removed += _rmdir(d)
    return removed


def _own() -> Path | None:
    """This process's cgroup directory in the v2 hierarchy (None: not mounted or not in one)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    path = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), None)
    for m in mounts:
        fields = m.split()
        sep = fields.index("-")
        if path is not None and fields[sep + 1] == "cgroup2":
            root, point = fields[3], Path(fields[4])
            rel = os.path.relpath(path, root) if path.startswith(root) else None
            if rel is not None and not rel.startswith(".."):
                d = point if rel == "." else point / rel
                return d if (d / "cgroup.procs").exists() else None
    return None


def _enabled(d: Path) -> bool:
    return set(CONTROLLERS) <= set(_read(d / "cgroup.subtree_control").split())


@dataclass
class CgroupV2:
    """One sandbox's cgroup: made, joined by its first process, read, removed."""

    name: str
    limits: Limits
    base: Path
    dir: Path = field(init=False)
    _before: dict[str, int] = field(default_factory=dict)

    def create(self) -> None:
        self.dir = self.base / f"trialhouse-{self.name}"
        self.dir.mkdir(exist_ok=True)
        self._kill_all()  # a cgroup left by a runner that died: nothing of it may run on
        _write(self.dir / "pids.max", str(self.limits.processes))
        _write(self.dir / "memory.max", str(self.limits.memory_bytes))
        if (self.dir / "memory.swap.max").exists():
            _write(self.dir / "memory.swap.max", "0")  # no escape into swap
        _write(self.dir / "cpu.max", f"{cpu_quota_us(self.limits)} {CPU_PERIOD_US}")
        self._before = self._counters()

    def join_files(self) -> list[str]:
        """The file the sandbox's first process writes itself (``0``) into before it starts anything."""
        return [str(self.dir / "cgroup.procs")]

    def reached(self) -> tuple[str, str] | None:
        """(kind, reason) of the limit the sandbox ran into, as a trial records it (None: none)."""
        return reached(self.limits, self._before, self._counters())

    def close(self) -> None:
        """Kill whatever is left in the cgroup and remove it."""
        self._kill_all()
        _rmdir(self.dir)

    def _kill_all(self) -> None:
        if not _read(self.dir / "cgroup.procs").strip():
            return
        _write(self.dir / "cgroup.kill", "1")  # every process, atomically (Linux 5.14)
        for _ in range(200):
            if "populated 0" in _read(self.dir / "cgroup.events"):
                return
            time.sleep(0.01)

    def _counters(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, key, label in (("memory.events", "oom_kill", "oom_kill"), ("pids.events", "max", "pids_max")):
            for line in _read(self.dir / name).splitlines():
                k, _, v = line.partition(" ")
                if k == key and v.strip().isdigit():
                    out[label] = int(v)
        return out


def _rmdir(d: Path) -> bool:
    try:
        d.rmdir()
    except OSError:
        return False  # still busy: removed when the name is used again, or by the next runner's sweep
    return True
