"""Resource limits of every sandbox: processes, memory, CPU, size-capped tmpfs, bytes and files written.

A runner that may use cgroup v2 (a cgroup with ``pids``, ``memory`` and ``cpu`` it has to
itself: ``runner.sandbox.cgroup2``) puts each sandbox in a cgroup of its own there. Else a
runner that may use cgroup v1 (root, with the v1 ``pids``, ``memory`` and ``cpu``
hierarchies mounted writable) puts each sandbox in a cgroup of its own, below the
runner's own cgroup in each hierarchy (so whatever limits the runner already has still
apply): ``pids.max`` bounds its processes and threads, ``memory.limit_in_bytes`` (with
swap) its memory, page cache and tmpfs pages, ``cpu.cfs_quota_us`` its CPU time per
period. The cgroup's own counters say afterwards which limit was reached. Any other
runner (an ordinary user has no cgroup delegation) falls back to rlimits set by the
sandbox's first process: ``RLIMIT_NPROC`` (counted per user namespace, or per sandbox id
when the runner is root: per sandbox either way), ``RLIMIT_DATA`` for memory and a lower
priority (``nice``) instead of a CPU share; those refuse what is over the limit but
cannot tell the runner afterwards. Both cap the size of every tmpfs the sandbox gets. The
bytes and entries a sandbox may leave in its writable directories are measured while it
runs and after (``runner.sandbox.launch``): over either, it is stopped and the limit named.
The run header records which mechanism applied (docs/runner.md, "Limits").
"""

from __future__ import annotations

import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runner.sandbox import cgroup2
from runner.sandbox.cgroupfs import CPU_PERIOD_US, cpu_quota_us, reached
from runner.sandbox.cgroupfs import read as _read
from runner.sandbox.cgroupfs import write as _write

Mechanism = Literal["cgroup-v2", "cgroup-v1", "rlimit"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("pids", "memory", "cpu")
NICE = 10
"""The priority sandboxes run at when no cgroup gives them a CPU share (``nice``)."""


@dataclass(frozen=True)
class Limits:
    """What every sandbox of a run may use (``isolation.limits`` and the workspace caps)."""

    processes: int = 1024
    """Processes and threads at once."""
    memory_bytes: int = 4096 * 2**20
    cpus: float = 1.0
    """CPU time per wall-clock second, in cores."""
    tmpfs_bytes: int = 256 * 2**20
    """Size of each tmpfs a sandbox gets (``/tmp`` where it has no directory of its own, ``/dev/shm``)."""
    write_bytes: int | None = None
    """Bytes the sandbox's writable directories may hold (the trial's ``max_workspace_mb``)."""
    write_entries: int | None = None
    """Files, directories and other entries they may hold (``max_workspace_files``)."""

    def caps(self) -> dict[str, float]:
        """The values a trial's ``budget`` event names by kind (``runner.budget``; memory in MB)."""
        caps = {"processes": float(self.processes), "memory": self.memory_bytes / 2**20}
        return caps | ({} if self.write_entries is None else {"workspace_files": float(self.write_entries)})


def mechanism() -> Mechanism:
    """``cgroup-v2`` where this process has a delegated v2 cgroup, else ``cgroup-v1`` when it
    may create cgroups in the three v1 hierarchies, else ``rlimit``."""
    return choice()[0]


def choice() -> tuple[Mechanism, str | None]:
    """The mechanism, and why no cgroup is used when it is ``rlimit`` (for the run header)."""
    v2 = cgroup2.delegation()
    if v2.base is not None:
        return "cgroup-v2", None
    if os.geteuid() != 0:
        return "rlimit", f"{v2.why_not}; cgroup v1: needs a root runner"
    for ctrl in CONTROLLERS:
        base = _own(ctrl)
        if base is None or not os.access(base, os.W_OK):
            return "rlimit", f"{v2.why_not}; cgroup v1: no writable {ctrl} hierarchy"
    return "cgroup-v1", None


def sandbox_cgroup(mech: Mechanism, name: str, limits: Limits) -> Cgroup | cgroup2.CgroupV2 | None:
    """The cgroup a sandbox gets under ``mech`` (None under ``rlimit``), not yet created."""
    if mech == "cgroup-v2":
        base = cgroup2.delegation().base
        assert base is not None, "cgroup v2 delegation vanished"
        return cgroup2.CgroupV2(name, limits, base)
    return Cgroup(name, limits) if mech == "cgroup-v1" else None


def _own(ctrl: str) -> Path | None:
    """This process's cgroup directory in the v1 hierarchy ``ctrl`` (None when not mounted),
    looked up once per process: every sandbox start asks (``mechanism``, ``Cgroup.create``)."""
    return _own_in(ctrl, os.getpid())


@functools.cache
def _own_in(ctrl: str, _pid: int) -> Path | None:
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _num, names, path = line.split(":", 2)
        if ctrl in names.split(","):
            base = CGROUP_ROOT / ctrl / path.lstrip("/")
            return base if (base / "cgroup.procs").exists() else None
    return None


@functools.cache
def _swept(base: Path, _pid: int) -> int:
    """Once per process and hierarchy: the stale cgroups killed runners left (``cgroup2.sweep``)."""
    return cgroup2.sweep(base, time.time())


def rlimit_args(limits: Limits, mech: Mechanism) -> list[str]:
    """``ulimit`` options for the sandbox's first process (``runner.sandbox.init``)."""
    if mech == "rlimit":
        return ["-u", str(limits.processes), "-d", str(max(limits.memory_bytes // 1024, 1))]
    return []


def nice_prefix(mech: Mechanism) -> list[str]:
    """What runs the program at a lower priority when no cgroup gives it a CPU share."""
    return ["nice", "-n", str(NICE)] if mech == "rlimit" else []


@dataclass
class Cgroup:
    """One sandbox's cgroup in each v1 hierarchy: made, joined by its first process, read, removed."""

    name: str
    limits: Limits
    dirs: dict[str, Path] = field(default_factory=dict)
    _before: dict[str, int] = field(default_factory=dict)

    def create(self) -> None:
        for ctrl in CONTROLLERS:
            base = _own(ctrl)
            assert base is not None, f"the {ctrl} cgroup hierarchy vanished"
            _swept(base, os.getpid())
            # Directly below the runner's own: a shared parent would make every sandbox of the
            # host one scheduling entity, weighted as one process (measured: starved at load 20).
            d = base / f"trialhouse-{self.name}"
            d.mkdir(exist_ok=True)
            self.dirs[ctrl] = d
        self._kill_all()  # a cgroup left by a runner that died: nothing of it may run on
        mem = self.limits.memory_bytes
        _write(self.dirs["pids"] / "pids.max", str(self.limits.processes))
        if (self.dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
            _write(self.dirs["memory"] / "memory.memsw.limit_in_bytes", "-1")  # may not go below the next
        _write(self.dirs["memory"] / "memory.limit_in_bytes", str(mem))
        if (self.dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
            _write(self.dirs["memory"] / "memory.memsw.limit_in_bytes", str(mem))  # no escape into swap
        _write(self.dirs["cpu"] / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(self.dirs["cpu"] / "cpu.cfs_quota_us", str(cpu_quota_us(self.limits)))
        self._before = self._counters()

    def join_files(self) -> list[str]:
        """The files the sandbox's first process writes itself into (before it starts anything)."""
        return [str(d / "tasks") for d in self.dirs.values()]

    def reached(self) -> tuple[str, str] | None:
        """(kind, reason) of the limit the sandbox ran into, as a trial records it (None: none)."""
        return reached(self.limits, self._before, self._counters())

    def close(self) -> None:
        """Kill whatever is left in the cgroup and remove it."""
        self._kill_all()
        for d in self.dirs.values():
            try:
                d.rmdir()
            except OSError:
                pass  # still busy: removed (after a kill) when the name is used again

    def _kill_all(self) -> None:
        for _ in range(50):
            pids = [int(p) for d in self.dirs.values() for p in _read(d / "cgroup.procs").split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def _counters(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for line in _read(self.dirs["memory"] / "memory.oom_control").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit():
                out["oom_kill"] = int(value)
        events = _read(self.dirs["pids"] / "pids.events").split()
        if len(events) == 2 and events[0] == "max" and events[1].isdigit():
            out["pids_max"] = int(events[1])
        return out
