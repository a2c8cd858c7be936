"""The Ray executor: trials as calls on a few trial hosts per node, the driver still the
single writer.

``RayExecutor.work(spec)`` replaces ``run_trial(spec, emit)`` in the driver's thread
pool (``--jobs`` threads, so ``--jobs`` caps the trials in flight). Each call hands the
trial to the least busy trial host (``runner.executors.host_pool``; the hosts are Ray
actors, ``runner.executors.ray_host``, started when the run connects, never retrying a
call: Ray re-running a trial whose host died would record it twice). The call is a
streaming generator: the host runs the ordinary ``run_trial`` (``runner.executors.remote``)
and yields its events in batches as they happen, then the trial's evidence as a tar
stream in chunks (the repository's untouched files left out, ``archive.pack``); the
driver thread emits each event through the run's ``EventLog``, unpacks the evidence into
``trials/<id>/`` as it arrives, writes the left-out files from its own run store, moves
any gateway recordings into the run's, and only then emits the trial's
``trial_finished``. Paths the host's events name (the node's copy of the run) are
rewritten to the driver's run directory, so ``events.jsonl`` and the trial directories
have the shape of a local run.

The run's payload (manifest, input bytes with hashes, resolved harnesses, git bundle of
the pinned commits) is ``ray.put`` once per run and handed to calls inside a list, so Ray
does not resolve it per call: a host ``ray.get``s it only when it first meets the run.
Credentials never travel in it: hosts read the variables a variant's ``pass_env`` /
``secret_env`` and the gateway's key variables name from their node's environment
(docs/scale.md).

A host that dies (process killed, node lost, out of memory) makes each trial it had in
flight ``infra_error`` with the reason; ``--resume --rerun infra_error`` runs them again.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contract.events import EVENT_CLASSES
from contract.run_events import ExecutorInfo
from contract.trial_events import TrialStarted
from runner.errors import RunnerError
from runner.executors.archive import listing, restore, unpack
from runner.executors.host_pool import HostPool, host_plan
from runner.executors.node_services import place_recordings
from runner.executors.remote import RunPayload, slice_of
from runner.manifest import Manifest
from runner.pristine import remove_tree
from runner.trial import TrialInterrupted, TrialOutcome, TrialSpec

INSTALL_HINT = "pip install 'trialhouse[ray]'"
PROBE_TIMEOUT_S = 5.0
class TrialLost(RunnerError):
    """The Ray task running a trial ended without a result (worker or node died)."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RunnerError(
            f"--executor ray needs Ray, which is not installed here ({exc}); install the "
            f"extra with: {INSTALL_HINT}  (or run with --executor local)") from exc
    return ray


INIT_OPTIONS: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                "configure_logging": False}


def local_options(jobs: int) -> dict[str, Any]:
    """``ray.init`` options for a local instance serving ``jobs`` trials at once."""
    return {**INIT_OPTIONS,
            "_system_config": {"num_workers_soft_limit": max(jobs, os.cpu_count() or 1)}}


def connect(address: str | None, jobs: int = 1) -> Any:
    """Join the cluster at ``address`` (or start a local Ray instance when None).

    A local instance keeps up to ``jobs`` idle worker processes (``local_options``; from
    when a worker ran each trial; trial hosts need a few per node, docs/scale.md).
    """
    ray = import_ray()
    if ray.is_initialized():
        return ray
    if address is not None and address != "auto":
        _probe(address)
    try:
        ray.init(address=address, **(local_options(jobs) if address is None else INIT_OPTIONS))
    except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError…
        if address is None:
            raise RunnerError(f"could not start a local Ray instance: {exc}") from exc
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RunnerError(
            f"--ray-address {address}: no Ray cluster reachable there ({first}); start one with "
            "'ray start --head' on the head node and pass its address (host:6379), or drop "
            "--ray-address to start a local instance") from exc
    return ray


def describe(ray: Any, address: str | None) -> ExecutorInfo:
    """What ``run_started`` records of the cluster the trials go to."""
    try:
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        cpus = ray.cluster_resources().get("CPU")
    except Exception:  # noqa: BLE001 - the description must not fail the run
        nodes, cpus = None, None
    return ExecutorInfo(kind="ray", address=address, ray_version=ray.__version__,
                           nodes=nodes, cpus=float(cpus) if cpus is not None else None)


def _probe(address: str) -> None:
    """Fail fast (Ray itself retries a dead address for minutes) when nothing listens there."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise RunnerError(f"--ray-address {address}: expected host:port (the address "
                          "'ray start --head' prints, e.g. 10.0.0.5:6379)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise RunnerError(
            f"--ray-address {address}: no Ray cluster reachable there ({exc.strerror or exc}); "
            "start one with 'ray start --head' on the head node and pass the address it "
            "prints, or drop --ray-address to start a local instance") from exc


def _evidence(first: bytes, items: Any, after: list[Any]) -> Iterator[bytes]:
    """The evidence chunks of a task's stream from ``first`` on; the first item that is
    not one goes to ``after``."""
    yield first
    for kind, root, item in items:
        if kind != "evidence":
            after.append((kind, root, item))
            return
        yield item


def _rewrite(value: Any, old: str, new: str) -> Any:
    """Worker paths → driver paths in an event's fields (strings, lists, dicts)."""
    if isinstance(value, str):
        return new + value[len(old):] if value.startswith(old) else value
    if isinstance(value, list):
        return [_rewrite(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(_rewrite(v, old, new) for v in value)
    if isinstance(value, dict):
        return {k: _rewrite(v, old, new) for k, v in value.items()}
    return value


def start_hosts(ray: Any, manifest: Manifest, jobs: int) -> HostPool:
    """The run's trial hosts on the cluster's alive nodes (``host_pool.host_plan``)."""
    nodes = [(n["NodeID"], float(n.get("Resources", {}).get("CPU", 0))) for n in ray.nodes() if n.get("Alive")]
    shapes = host_plan(nodes, jobs, manifest.resources.num_cpus, manifest.resources.memory_mb)
    if not shapes:
        raise RunnerError("--executor ray: the Ray cluster has no alive node with a CPU to run trials on")
    return HostPool(ray, shapes)


class RayExecutor:
    """Hands each trial of one run to a trial host and relays it to the driver's log."""

    def __init__(self, ray: Any, payload: RunPayload, run_dir: Path, emit: Any, stop: threading.Event,
                 pool: HostPool) -> None:
        self.ray = ray
        self.run_id = payload.run_id
        self.run_dir = run_dir
        self.emit = emit
        self.stop = stop
        self.payload_ref = ray.put(payload)
        self.pool = pool
        self._lock = threading.Lock()
        self._listings: dict[str, Any] = {}

    def cancel(self) -> None:
        """Ctrl-C: the hosts go (running agents die with them: bubblewrap's ``--die-with-parent``)."""
        self.pool.kill()

    def close(self) -> None:
        """The run is over: every host stops its services and leaves its node's copy."""
        self.pool.close(self.run_id)

    def work(self, spec: TrialSpec) -> TrialOutcome:
        if self.stop.is_set():
            raise TrialInterrupted(spec.trial_id)
        remove_tree(spec.trial_dir)
        i = self.pool.take()
        try:
            gen = self.pool.hosts[i].run.options(num_returns="streaming").remote(
                slice_of(spec), [self.payload_ref])
            return self.relay(spec, (self.ray.get(ref) for ref in gen))
        finally:
            self.pool.give(i)

    def relay(self, spec: TrialSpec, items: Any) -> TrialOutcome:
        """Emit a task's event batches in order, unpack its evidence and write back the
        workspace files it left out; then its ``trial_finished``, held back until the
        trial directory is whole (as a local trial's is when it finishes). A task that fails
        or dies raises ``TrialLost`` (after recording a start, if none came)."""
        seen = {"started": False}
        try:
            return self._relay(spec, iter(items), seen)
        except TrialLost as exc:
            self._lost(spec, seen["started"], str(exc))
            raise
        except RunnerError as exc:  # evidence that does not fit the trial
            self._lost(spec, seen["started"], str(exc))
            raise TrialLost(str(exc)) from exc
        except self.ray.exceptions.RayError as exc:
            if self.stop.is_set():
                raise TrialInterrupted(spec.trial_id) from exc
            why = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            reason = f"Ray worker lost ({type(exc).__name__}{': ' + why if why else ''})"
            self._lost(spec, seen["started"], reason)
            raise TrialLost(reason) from exc

    def _relay(self, spec: TrialSpec, items: Any, seen: dict[str, bool]) -> TrialOutcome:
        finish: tuple[str, dict[str, Any]] | None = None
        unpacked = False
        nxt = next(items, None)
        while nxt is not None:
            kind, root, item = nxt
            nxt = None
            if kind == "events":
                for name, fields in item:
                    fields = _rewrite(fields, root, str(self.run_dir))
                    seen["started"] = seen["started"] or name == "TrialStarted"
                    if name == "TrialFinished":
                        finish = (name, fields)
                    else:
                        self.emit(EVENT_CLASSES[name], **fields)
            elif kind == "evidence":
                after: list[Any] = []
                unpack(_evidence(item, items, after), spec.trial_dir)
                unpacked = True
                nxt = after[0] if after else None
                continue
            elif kind == "result":
                outcome, omitted = item
                if not unpacked:
                    spec.trial_dir.mkdir(parents=True)
                restore(spec.containment.store.path, spec.initial_commit, omitted,
                        spec.trial_dir / "workspace", self._listing(spec))
                place_recordings(spec.trial_dir, self.run_dir)
                if finish is not None:
                    self.emit(EVENT_CLASSES[finish[0]], **finish[1])
                return outcome
            else:
                raise TrialLost(f"the trial failed on its Ray worker: {item}")
            nxt = next(items, None)
        raise TrialLost("the Ray task ended without a result")

    def _listing(self, spec: TrialSpec) -> Any:
        """The driver's own listing of the trial's pinned commit (a few kept per run)."""
        with self._lock:
            rows = self._listings.get(spec.initial_commit)
        if rows is None:
            rows = listing(spec.containment.store.path, spec.initial_commit)
            with self._lock:
                while len(self._listings) >= 4:
                    self._listings.pop(next(iter(self._listings)))
                self._listings[spec.initial_commit] = rows
        return rows

    def _lost(self, spec: TrialSpec, started: bool, reason: str) -> None:
        """Before the driver records ``infra_error``: a start it can attach to, and the
        evidence directory present (empty) as a local trial's always is."""
        if self.stop.is_set():
            raise TrialInterrupted(spec.trial_id)
        if not started:
            self.emit(TrialStarted, trial_id=spec.trial_id, case_id=spec.case.id,
                      variant=spec.variant.id, config_id=spec.config_id,
                      repetition=spec.repetition, seed=spec.seed,
                      workspace=str(spec.trial_dir / "workspace"), order=spec.order,
                      case_fingerprint=spec.case_fingerprint)
        remove_tree(spec.trial_dir)
        spec.trial_dir.mkdir(parents=True)
        (spec.trial_dir / "lost.txt").write_text(reason + "\n")
