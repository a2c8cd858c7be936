"""A Ray trial host: a long-lived actor that runs a run's trials as calls on its threads.

A few hosts per node (``runner.executors.on_ray.host_plan``), each a threaded actor
(``max_concurrency`` = its share of the node's trials): one Python process per host, not
one per trial, so a node pays Ray's and trialhouse's start-up a few times per run. The
hosts of a node share one copy of the run (``node_copy``); each runs its own gateway and
judges (``node_services``) over it. ``run`` is a streaming generator: the trial's events
in batches as they happen, then its evidence as a tar stream in chunks, then its result
(docs/scale.md). A host that dies fails the trials it had in flight (the driver records
each ``infra_error``); Ray starts it again for the next ones.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterator
from typing import Any

from contract.envelope import BaseEvent
from runner.executors.remote import TrialSlice, release, worker_run
from runner.trial import TrialInterrupted

BATCH_WAIT_S = 0.05
"""How long the host gathers events before yielding a batch (fewer, larger objects)."""
EVIDENCE_IN_FLIGHT = 2
"""Evidence chunks (``archive.CHUNK`` bytes each) a trial holds before the stream takes them.
The stream itself has no backpressure (``_generator_backpressure_num_objects``): measured,
it cost the workers CPU at 32 trials in flight on 2 cores, and what it would bound — a
trial's unread chunks in the object store — is at most that trial's evidence, which
leaves the repository's untouched files behind (``archive.pack``) and spills to disk."""


class TrialHost:
    """The actor's class (``ray.remote(TrialHost)`` on the driver; it imports no Ray itself
    but for ``ray.get`` of the run's payload)."""

    def pid(self) -> int:
        return os.getpid()

    def close(self, run_id: str) -> None:
        """The run is over: stop this host's gateway and judges, leave the node's copy."""
        release(run_id)

    def run(self, t: TrialSlice, box: list[Any]) -> Iterator[tuple[str, str, Any]]:
        """One trial: ('events', root, [...]) batches, ('evidence', root, chunk)s, then
        ('result', root, (outcome, names left out of the evidence)) or ('error', root, why)."""
        yield from trial_stream(t, box)


def trial_stream(t: TrialSlice, box: list[Any]) -> Iterator[tuple[str, str, Any]]:
    import ray

    try:
        run = worker_run(t.run_id, lambda: ray.get(box[0]))
    except Exception as exc:  # noqa: BLE001 - no bwrap, a damaged payload…: the trial's reason
        yield ("error", "", f"{type(exc).__name__}: {exc}")
        return
    q: queue.Queue[tuple[str, Any]] = queue.Queue()
    gate = threading.Semaphore(EVIDENCE_IN_FLIGHT)
    gone = threading.Event()

    def emit(cls: type[BaseEvent], **fields: Any) -> None:
        q.put(("event", (cls.__name__, fields)))

    def send(chunk: bytes) -> None:  # at most EVIDENCE_IN_FLIGHT chunks held here at once
        while not gate.acquire(timeout=1.0):
            if gone.is_set():
                raise TrialInterrupted(t.trial_id)
        q.put(("evidence", chunk))

    def body() -> None:
        try:
            q.put(("done", run.run(t, emit, send)))
        except BaseException as exc:  # noqa: BLE001 - reported to the driver as the reason
            q.put(("error", f"{type(exc).__name__}: {exc}"))

    threading.Thread(target=body, name=f"trial-{t.trial_id}", daemon=True).start()
    try:
        yield from _relay_queue(q, gate, str(run.root))
    finally:
        gone.set()


def _relay_queue(q: queue.Queue[tuple[str, Any]], gate: threading.Semaphore,
                 root: str) -> Iterator[tuple[str, str, Any]]:
    """The host side of the stream: events gathered into batches, evidence chunks one by one."""
    while True:
        kind, item = q.get()
        batch = []
        while kind == "event":
            batch.append(item)
            try:
                kind, item = q.get(timeout=BATCH_WAIT_S if len(batch) < 64 else 0)
            except queue.Empty:
                kind, item = "flush", None
        if batch:
            yield ("events", root, batch)
        if kind == "evidence":
            yield ("evidence", root, item)
            gate.release()
        elif kind == "done":
            yield ("result", root, item)
            return
        elif kind == "error":
            yield ("error", root, item)
            return
