"""Where a run's trials go on Ray: a few trial hosts per node, sized to the node.

``host_plan`` decides, from the cluster's alive nodes, ``--jobs`` and the manifest's
per-trial hint (``resources.num_cpus``), how many trials each node takes at once (its
CPUs over the hint, the run's ``--jobs`` spread over the nodes in that proportion) and
splits them over ``ACTORS_PER_NODE`` hosts with threads for their share. ``HostPool``
starts those hosts (``runner.executors.ray_host.TrialHost``, pinned to their node;
Ray restarts one that dies, on another node if its own is gone) and hands each trial
to the least busy host with a free thread (docs/scale.md).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

ACTORS_PER_NODE = 2
"""Trial hosts per node: a lost host fails only its share of the node's trials in flight,
and a node starts a Python process (Ray, trialhouse: seconds of CPU) this many times per run."""


@dataclass(frozen=True)
class HostShape:
    node_id: str
    threads: int
    num_cpus: float
    memory: int | None


def host_plan(nodes: list[tuple[str, float]], jobs: int, num_cpus: float,
              memory_mb: float | None = None) -> list[HostShape]:
    """Hosts for ``nodes`` = [(node id, CPUs)]: each node takes up to CPUs / ``num_cpus``
    trials at once (the hint caps a node, as it did per Ray task), ``jobs`` in all, spread
    in proportion; a node's share goes to up to ``ACTORS_PER_NODE`` hosts. A host asks Ray
    for its threads' worth of the hint (never more than its part of the node)."""
    caps = [(node, cpus, max(1, math.floor(cpus / num_cpus + 1e-9))) for node, cpus in nodes if cpus > 0]
    room = sum(c for _n, _c, c in caps)
    want = min(jobs, room)
    shares = [min(cap, math.ceil(want * cap / room)) for _n, _c, cap in caps] if room else []
    while sum(shares) > want:  # the rounding up, given back by the largest shares
        shares[shares.index(max(shares))] -= 1
    out = []
    for (node, cpus, _cap), share in zip(caps, shares, strict=True):
        if share <= 0:
            continue
        hosts = min(ACTORS_PER_NODE, share)
        for i in range(hosts):
            threads = share // hosts + (1 if i < share % hosts else 0)
            mem = int(memory_mb * 2**20 * threads) if memory_mb is not None else None
            out.append(HostShape(node, threads, round(min(threads * num_cpus, cpus / hosts), 4), mem))
    return out


class HostPool:
    """The run's trial hosts and how busy each is (the driver's view)."""

    def __init__(self, ray: Any, shapes: list[HostShape]) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from runner.executors.ray_host import TrialHost

        self.ray = ray
        actor = ray.remote(TrialHost)
        self.hosts: list[Any] = []
        self.threads: list[int] = []
        for shape in shapes:
            opts: dict[str, Any] = {
                "num_cpus": shape.num_cpus, "max_concurrency": shape.threads + 1,  # + close()
                "max_restarts": -1, "max_task_retries": 0,
                "scheduling_strategy": NodeAffinitySchedulingStrategy(shape.node_id, soft=True)}
            if shape.memory is not None:
                opts["memory"] = shape.memory
            self.hosts.append(actor.options(**opts).remote())
            self.threads.append(shape.threads)
        self.busy = [0] * len(self.hosts)
        self._free = threading.Condition()

    def take(self) -> int:
        """The least busy host with a free thread (waits for one)."""
        with self._free:
            while True:
                free = [i for i, n in enumerate(self.busy) if n < self.threads[i]]
                if free:
                    i = min(free, key=lambda j: (self.busy[j] / self.threads[j], j))
                    self.busy[i] += 1
                    return i
                self._free.wait()

    def give(self, i: int) -> None:
        with self._free:
            self.busy[i] -= 1
            self._free.notify()

    def close(self, run_id: str, timeout_s: float = 30.0) -> None:
        """End of the run: each host leaves the node's copy, then goes."""
        refs = []
        for h in self.hosts:
            try:
                refs.append(h.close.remote(run_id))
            except Exception:  # noqa: BLE001, S110 - a host already gone (its copy: ``node_copy.sweep``)
                pass
        try:
            self.ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        except Exception:  # noqa: BLE001, S110 - a host that died while closing
            pass
        self.kill()

    def kill(self) -> None:
        for h in self.hosts:
            try:
                self.ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
