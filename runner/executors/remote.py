"""The worker side of a trial that runs away from the driver (no shared filesystem).

What a worker needs arrives once per run in a ``RunPayload`` (the manifest, the input
snapshot as bytes with their sha256, the resolved harnesses and a git bundle of the run
store's pinned commits). The node's first trial host to meet the run builds the node's
copy of it (``build_copy``: a run store fetched from the bundle, the input snapshot;
shared by the node's hosts, ``node_copy``); each host process adds its own containment,
gateway and judges over that copy (``WorkerRun``) and runs any number of the run's trials
with the ordinary ``run_trial``. Each
trial's events go back to the driver through ``emit`` and its evidence directory as a
tar stream in chunks (``runner.executors.archive``), so the driver's run directory ends
up exactly as a local run leaves it. Workspace files still byte for byte what the pinned
commit holds are not shipped: the archive names them and the driver writes them from its
own run store, so a large repository crosses the network once per run (the bundle), not
once per trial, and no process holds an archive whole (docs/scale.md).

The worker's containment comes from ``runner.containment``, as the driver's does. This
module does not import Ray: the payload, the worker copy and the evidence round trip are
plain Python, tested without a cluster.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from contract.redact import Redactor
from runner import sandbox
from runner.containment import Containment, build_containment, run_secrets
from runner.errors import RunnerError
from runner.eventlog import Emit
from runner.executors import node_copy, node_services
from runner.executors.archive import listing, pack
from runner.git import git
from runner.manifest import Manifest
from runner.paths import Snapshot, sha256_bytes
from runner.pristine import remove_tree
from runner.run_store import RunStore
from runner.trial import TrialOutcome, TrialSpec, run_trial


@dataclass(frozen=True)
class RunPayload:
    """Everything of a run a worker needs, put in the object store once per run."""

    run_id: str
    manifest: dict[str, Any]
    input_hashes: dict[str, str]
    input_contents: dict[str, bytes] = field(repr=False)
    bundle: Any = field(repr=False)
    """``git bundle`` of the run store: every pinned commit (depth 1), nothing else. A numpy
    ``uint8`` array, not ``bytes``: Ray stores arrays out of band, so ``ray.put`` copies it
    into the object store without a pickled copy and a worker's ``ray.get`` maps it
    read-only instead of copying it onto its heap. On the driver it is a ``numpy.memmap``
    of the bundle file: no process holds it on its heap, only the object store has it."""
    commits: tuple[str, ...] = ()
    shallow: tuple[str, ...] = ()
    """The run store's shallow boundary (pinned commits whose parents it lacks): the worker's
    store must know them, or fetching the bundle fails traversing to the missing parents."""
    harnesses: dict[str, Any] = field(default_factory=dict)
    """Variant id → its ``ResolvedHarness`` as the driver resolved it (the CLI at the same
    absolute path on every node, docs/scale.md)."""


@dataclass(frozen=True)
class TrialSlice:
    """One trial's part of the manifest: ids and plain data (the manifest travels once)."""

    run_id: str
    trial_id: str
    order: int
    case_id: str
    variant_id: str
    config_id: str
    repetition: int
    seed: int
    initial_commit: str
    instruction_texts: dict[str, str]
    baseline: dict[str, str]
    case_fingerprint: str | None
    scored: bool


def slice_of(spec: TrialSpec) -> TrialSlice:
    return TrialSlice(spec.run_id, spec.trial_id, spec.order, spec.case.id, spec.variant.id,
                      spec.config_id, spec.repetition, spec.seed, spec.initial_commit,
                      dict(spec.instruction_texts), dict(spec.baseline), spec.case_fingerprint,
                      spec.scored)


def make_payload(run_id: str, manifest: Manifest, snapshot: Snapshot, store: RunStore,
                 commits: list[str], harnesses: Mapping[str, Any] | None = None) -> RunPayload:
    """Bundle the run store's pinned commits and pair them with the input snapshot."""
    with tempfile.TemporaryDirectory(prefix="trialhouse-bundle-") as tmp:
        path = Path(tmp) / "pins.bundle"
        git(store.path, "bundle", "create", "-q", str(path), "--all")
        # Mapped, not read: ``ray.put`` copies the pages straight from the file into the
        # object store, so the driver never holds the bundle on its heap (the mapping
        # outlives the file's removal and goes with the payload, once it is put). A plain
        # ndarray view: numpy pickles a ``memmap`` subclass in band (a full copy).
        size = path.stat().st_size
        bundle = (numpy.memmap(path, dtype=numpy.uint8, mode="r").view(numpy.ndarray) if size
                  else numpy.zeros(0, dtype=numpy.uint8))
    shallow = store.path / "shallow"
    boundary = tuple(shallow.read_text().split()) if shallow.exists() else ()
    return RunPayload(run_id, manifest.model_dump(mode="json", exclude_unset=True), dict(snapshot.hashes),
                      dict(snapshot.contents), bundle, tuple(sorted(set(commits))), boundary,
                      dict(harnesses or {}))


def build_copy(payload: RunPayload, root: Path) -> None:
    """Write the run's copy into ``root``: the run store fetched from the bundle (every
    pinned commit checked present) and the input snapshot, each input checked against its
    hash first (a damaged payload is refused). Once per node (``node_copy.join``)."""
    bad = sorted(rel for rel, data in payload.input_contents.items()
                 if payload.input_hashes.get(rel) != sha256_bytes(data))
    if bad or set(payload.input_contents) != set(payload.input_hashes):
        raise RunnerError(f"the run's input snapshot arrived damaged on this worker ({', '.join(bad[:3])})")
    store = RunStore(root / ".runner" / "store.git", shared=True)
    bundle = root / ".runner" / "pins.bundle"
    bundle.write_bytes(payload.bundle)
    if payload.shallow:
        (store.path / "shallow").write_text("".join(c + "\n" for c in payload.shallow))
    git(store.path, "fetch", "-q", "--no-tags", str(bundle), "refs/pins/*:refs/pins/*")
    bundle.unlink()
    for commit in payload.commits:
        store.tree_of(commit)  # raises when the bundle lacked it
    Snapshot(root / "inputs", dict(payload.input_hashes), dict(payload.input_contents)).materialise(root / "inputs")


class WorkerRun:
    """One run on one worker process: the node's copy of it (``build_copy``; built here
    unless ``built``), and this process's containment, gateway and judges over it."""

    def __init__(self, payload: RunPayload, root: Path, *, built: bool = False,
                 private: Path | None = None) -> None:
        if not built:
            root.mkdir(parents=True, exist_ok=True)
            build_copy(payload, root)
        self.root = root
        self.private = private or root / ".runner" / f"host-{os.getpid()}"
        self.private.mkdir(parents=True, exist_ok=True)
        self.manifest = Manifest.model_validate(payload.manifest)
        secrets = run_secrets(self.manifest)
        self.redactor = Redactor(secrets)
        box = build_containment(self.manifest, root, self.redactor, shared_store=True)
        self.snapshot = Snapshot(root / "inputs", dict(payload.input_hashes), dict(payload.input_contents))
        self.gateway = self.judges = None
        try:
            self.gateway = node_services.start_gateway(self.manifest, self.snapshot, self.private, secrets)
            box = dataclasses.replace(box, gateway=self.gateway)
            self.judges = node_services.start_judges(self.manifest, self.snapshot, box, secrets)
        except BaseException:
            self.close()
            raise
        self.containment: Containment = dataclasses.replace(box, judges=self.judges)
        self.harnesses = dict(payload.harnesses)
        self.cases = {c.id: c for c in self.manifest.cases}
        self.variants = {v.id: v for v in self.manifest.variants}
        self._listings: dict[str, dict[str, tuple[str, str, int]]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Stop this process's gateway and judges."""
        node_services.stop(self.judges)
        node_services.stop(self.gateway)
        self.gateway = self.judges = None

    def spec(self, t: TrialSlice) -> TrialSpec:
        variant = self.variants[t.variant_id]
        return TrialSpec(
            run_id=t.run_id, trial_id=t.trial_id, order=t.order, manifest=self.manifest,
            manifest_dir=self.root, case=self.cases[t.case_id], variant=variant,
            config_id=t.config_id, repetition=t.repetition, seed=t.seed,
            initial_commit=t.initial_commit, snapshot=self.snapshot,
            trial_dir=self.root / "trials" / t.trial_id, containment=self.containment,
            instruction_texts=t.instruction_texts, baseline=t.baseline,
            case_fingerprint=t.case_fingerprint, scored=t.scored,
            harness=self.harnesses.get(t.variant_id), uses_gateway=self.manifest.uses_gateway(variant))

    def run(self, t: TrialSlice, emit: Emit, send: Callable[[bytes], None]) -> tuple[TrialOutcome, list[str]]:
        """Run one trial here; its evidence directory goes to ``send`` as tar chunks (and is
        removed). Returns the outcome and the workspace files left out of the archive
        because they are the pinned commit's own (``restore`` writes them back)."""
        spec = self.spec(t)
        try:
            outcome = run_trial(spec, emit)
            node_services.take_recordings(self.gateway, t.trial_id, spec.trial_dir)
            return outcome, pack(spec.trial_dir, send, self.pristine(t.initial_commit))
        finally:
            remove_tree(spec.trial_dir)

    def pristine(self, commit: str) -> Mapping[str, tuple[str, str, int]]:
        """``commit``'s files as path → (mode, blob, size), listed once per process."""
        with self._lock:
            rows = self._listings.get(commit)
            if rows is None:
                rows = self._listings[commit] = listing(self.containment.store.path, commit)
            return rows


_runs: dict[str, tuple[WorkerRun, node_copy.NodeCopy]] = {}
_runs_lock = threading.RLock()


def worker_run(run_id: str, load: Any) -> WorkerRun:
    """This process's run ``run_id`` over the node's shared copy of it; ``load()`` fetches
    the payload the first time (the node's first host to meet the run builds the copy).

    A process keeps one run (a new run's arrival releases the previous one's copy)."""
    with _runs_lock:
        have = _runs.get(run_id)
        if have is not None:
            return have[0]
        release_all()
        tmp = Path(tempfile.gettempdir())
        sweep_stale(tmp)
        node_copy.sweep(tmp, keep=run_id)
        payload = load()
        # A node that cannot contain agents says so before it copies a repository.
        sandbox.backend(Manifest.model_validate(payload.manifest).isolation.backend)
        held = node_copy.join(tmp, run_id, lambda root: build_copy(payload, root))
        try:
            _runs[run_id] = (WorkerRun(payload, held.root, built=True), held)
        except BaseException:
            node_copy.leave(held)
            raise
        return _runs[run_id][0]


def release(run_id: str) -> None:
    """This process is done with run ``run_id``: its services stop, the node's copy is left
    (and removed by its last user)."""
    with _runs_lock:
        have = _runs.pop(run_id, None)
    if have is not None:
        run, held = have
        run.close()
        run.containment.store.close()
        remove_tree(run.private)
        node_copy.leave(held)


def release_all() -> None:
    for run_id in list(_runs):
        release(run_id)


_OWNER = re.compile(r"-pid(\d+)-[^-]+$")


def sweep_stale(tmp: Path) -> None:
    """Remove the scratch copies (``trialhouse-<run id>-pid<pid>-…``) of this user's
    worker processes that are gone: a worker killed by Ray (``ray.shutdown``, a lost
    task, out of memory) runs no ``atexit`` and would leave its copy of the run — the
    run store with the whole repository — behind for good.

    Workers that start together sweep together: each copy is first claimed by renaming it
    to a name of this process's own (one rename wins; the others find it gone and go on),
    and a sweep never fails the trial that runs it — it is housekeeping. A claimed copy
    whose sweeper dies is a copy of a dead process again, swept by the next one."""
    for d in tmp.glob("trialhouse-*-pid*-*"):
        m = _OWNER.search(d.name)
        try:
            if m is None or d.is_symlink() or d.stat().st_uid != os.getuid():
                continue
            os.kill(int(m.group(1)), 0)
        except ProcessLookupError:
            claimed = tmp / f"trialhouse-sweep-pid{os.getpid()}-{uuid.uuid4().hex[:12]}"
            try:
                os.rename(d, claimed)
                remove_tree(claimed)
            except OSError:  # claimed by another worker first, or left for the next sweep
                continue
        except OSError:  # alive under another user, or gone already
            continue


atexit.register(release_all)
