"""The worker side of a trial that runs away from the driver (no shared filesystem).

What a worker needs arrives once per run in a ``RunPayload`` (the manifest, the input
snapshot as bytes with their sha256, and a git bundle of the run store's pinned
commits). A worker process builds its local copy of the run from it once — its own
run store fetched from the bundle, its own input snapshot, the same isolation backend —
and then runs any number of that run's trials with the ordinary ``run_trial``. Each
trial's events go back to the driver through ``emit`` and its evidence directory as one
tar archive (``pack``/``unpack``), so the driver's run directory ends up exactly as a
local run leaves it.

This module does not import Ray: the payload, the worker copy and the evidence round
trip are plain Python, tested without a cluster.
"""

from __future__ import annotations

import atexit
import io
import os
import tarfile
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from runner.capture import RunStore
from runner.errors import RunnerError
from runner.eventlog import Emit
from runner.git import git
from runner.manifest import Manifest
from runner.paths import Snapshot, sha256_bytes
from runner.redact import Redactor
from runner.trial import Containment, TrialOutcome, TrialSpec, remove_tree, run_trial


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
    read-only instead of copying it onto its heap (one copy per process, not three)."""
    commits: tuple[str, ...] = ()
    shallow: tuple[str, ...] = ()
    """The run store's shallow boundary (pinned commits whose parents it lacks): the worker's
    store must know them, or fetching the bundle fails traversing to the missing parents."""


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
                 commits: list[str]) -> RunPayload:
    """Bundle the run store's pinned commits and pair them with the input snapshot."""
    with tempfile.TemporaryDirectory(prefix="trialhouse-bundle-") as tmp:
        path = Path(tmp) / "pins.bundle"
        git(store.path, "bundle", "create", "-q", str(path), "--all")
        bundle = numpy.fromfile(path, dtype=numpy.uint8)
    shallow = store.path / "shallow"
    boundary = tuple(shallow.read_text().split()) if shallow.exists() else ()
    return RunPayload(run_id, manifest.model_dump(mode="json", exclude_unset=True), dict(snapshot.hashes),
                      dict(snapshot.contents), bundle, tuple(sorted(set(commits))), boundary)


class WorkerRun:
    """One run's inputs materialised on one worker process, built once per process."""

    def __init__(self, payload: RunPayload, root: Path) -> None:
        from runner.run import _containment, run_secrets

        self.root = root
        self.manifest = Manifest.model_validate(payload.manifest)
        bad = sorted(rel for rel, data in payload.input_contents.items()
                     if payload.input_hashes.get(rel) != sha256_bytes(data))
        if bad or set(payload.input_contents) != set(payload.input_hashes):
            raise RunnerError(f"the run's input snapshot arrived damaged on this worker ({', '.join(bad[:3])})")
        self.redactor = Redactor(run_secrets(self.manifest))
        self.containment: Containment = _containment(self.manifest, root, self.redactor)
        bundle = root / ".runner" / "pins.bundle"
        bundle.write_bytes(payload.bundle)
        if payload.shallow:
            (self.containment.store.path / "shallow").write_text("".join(c + "\n" for c in payload.shallow))
        git(self.containment.store.path, "fetch", "-q", "--no-tags", str(bundle), "refs/pins/*:refs/pins/*")
        bundle.unlink()
        for commit in payload.commits:
            self.containment.store.tree_of(commit)  # raises when the bundle lacked it
        self.snapshot = Snapshot(root / "inputs", dict(payload.input_hashes), dict(payload.input_contents))
        self.snapshot.materialise(self.snapshot.root)
        self.cases = {c.id: c for c in self.manifest.cases}
        self.variants = {v.id: v for v in self.manifest.variants}

    def spec(self, t: TrialSlice) -> TrialSpec:
        return TrialSpec(
            run_id=t.run_id, trial_id=t.trial_id, order=t.order, manifest=self.manifest,
            manifest_dir=self.root, case=self.cases[t.case_id], variant=self.variants[t.variant_id],
            config_id=t.config_id, repetition=t.repetition, seed=t.seed,
            initial_commit=t.initial_commit, snapshot=self.snapshot,
            trial_dir=self.root / "trials" / t.trial_id, containment=self.containment,
            instruction_texts=t.instruction_texts, baseline=t.baseline,
            case_fingerprint=t.case_fingerprint, scored=t.scored)

    def run(self, t: TrialSlice, emit: Emit) -> tuple[TrialOutcome, bytes]:
        """Run one trial here; its evidence directory comes back packed (and is removed)."""
        spec = self.spec(t)
        try:
            outcome = run_trial(spec, emit)
            return outcome, pack(spec.trial_dir)
        finally:
            remove_tree(spec.trial_dir)


_runs: dict[str, WorkerRun] = {}
_runs_lock = threading.Lock()


def worker_run(run_id: str, load: Any) -> WorkerRun:
    """This process's copy of run ``run_id``; ``load()`` fetches the payload the first time.

    A worker process keeps one run (a new run replaces the previous one's copy).
    """
    with _runs_lock:
        have = _runs.get(run_id)
        if have is not None:
            return have
        for old in list(_runs.values()):
            remove_tree(old.root)
        _runs.clear()
        root = Path(tempfile.mkdtemp(prefix=f"trialhouse-{run_id}-"))
        try:
            _runs[run_id] = WorkerRun(load(), root)
        except BaseException:
            remove_tree(root)
            raise
        return _runs[run_id]


@atexit.register
def _cleanup() -> None:
    for run in _runs.values():
        remove_tree(run.root)


# ---------------------------------------------------------------- evidence round trip


def pack(trial_dir: Path) -> bytes:
    """The trial directory as an uncompressed tar (symlinks stay symlinks, never followed)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in _walk(trial_dir):
            tar.add(path, arcname=path.relative_to(trial_dir).as_posix(), recursive=False)
    return buf.getvalue()


def _walk(root: Path) -> list[Path]:
    out: list[Path] = []
    stack = [root]
    while stack:
        d = stack.pop()
        for entry in sorted(os.scandir(d), key=lambda e: e.name):
            p = Path(entry.path)
            if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                out.append(p)
            elif entry.is_dir(follow_symlinks=False):
                out.append(p)
                stack.append(p)
    return out


def unpack(data: bytes, dest: Path) -> None:
    """Extract a ``pack`` archive into the new directory ``dest``.

    Only regular files, directories and symlinks inside ``dest`` are written; a member
    below a symlink member, an absolute name or a ``..`` is refused (never written
    through), whatever the archive claims.
    """
    dest.mkdir(parents=True, exist_ok=False)
    links: set[str] = set()

    def keep(member: tarfile.TarInfo, _path: str) -> tarfile.TarInfo | None:
        name = member.name
        parts = Path(name).parts
        if name.startswith("/") or ".." in parts or not parts:
            return None
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            return None
        if member.issym():
            links.add(name)
            return member.replace(uid=os.getuid(), gid=os.getgid(), uname="", gname="", deep=False)
        if not (member.isfile() or member.isdir()):
            return None
        return member.replace(mode=member.mode & 0o755, uid=os.getuid(), gid=os.getgid(),
                              uname="", gname="", deep=False)

    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(dest, filter=keep)
