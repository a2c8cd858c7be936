"""What a sandbox's cgroup does the same way in v1 (``runner.sandbox.limits``) and v2
(``runner.sandbox.cgroup2``): reading and writing control files, the CPU quota, and which
limit the counters say the sandbox reached."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

CPU_PERIOD_US = 100_000


class Limits(Protocol):
    """What a sandbox's cgroup enforces (``runner.sandbox.limits.Limits`` has it)."""

    @property
    def processes(self) -> int: ...
    @property
    def memory_bytes(self) -> int: ...
    @property
    def cpus(self) -> float: ...


def cpu_quota_us(limits: Limits) -> int:
    """CPU time per ``CPU_PERIOD_US`` (at least 1 ms: the kernel's floor)."""
    return max(int(limits.cpus * CPU_PERIOD_US), 1000)


def reached(limits: Limits, before: dict[str, int], now: dict[str, int]) -> tuple[str, str] | None:
    """(kind, reason) of the limit whose counter (``oom_kill``, ``pids_max``) rose between
    ``before`` and ``now``, as a trial records it (None: none)."""
    if now.get("oom_kill", 0) > before.get("oom_kill", 0):
        return "memory", (f"memory limit reached: isolation.limits.memory_mb="
                          f"{limits.memory_bytes / 2**20:g} (a process was killed)")
    if now.get("pids_max", 0) > before.get("pids_max", 0):
        return "processes", (f"process limit reached: isolation.limits.processes={limits.processes} "
                             "(a fork was refused)")
    return None


def write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def read(path: Path) -> str:
    """The file's text ("" when it cannot be read: a cgroup removed meanwhile)."""
    try:
        return path.read_text()
    except OSError:
        return ""
