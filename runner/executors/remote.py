"""The worker side of a trial that runs away from the driver (no shared filesystem).

What a worker needs arrives once per run in a ``RunPayload`` (the manifest, the input
snapshot as bytes with their sha256, and a git bundle of the run store's pinned
commits). A worker process builds its local copy of the run from it once — its own
run store fetched from the bundle, its own input snapshot, the same isolation backend —
and then runs any number of that run's trials with the ordinary ``run_trial``. Each
trial's events go back to the driver through ``emit`` and its evidence directory as a
tar stream in chunks (``pack``/``unpack``), so the driver's run directory ends up exactly
as a local run leaves it. Workspace files still byte for byte what the pinned commit
holds are not shipped: the archive names them and the driver writes them from its own
run store (``restore``), so a large repository crosses the network once per run (the
bundle), not once per trial, and no process holds an archive whole.

This module does not import Ray: the payload, the worker copy and the evidence round
trip are plain Python, tested without a cluster.
"""

from __future__ import annotations

import atexit
import io
import os
import re
import stat
import tarfile
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy

from contract.redact import Redactor
from runner.capture import RunStore, cat_blobs, same_blob, write_blob
from runner.errors import RunnerError
from runner.eventlog import Emit
from runner.git import git
from runner.manifest import Manifest
from runner.paths import Snapshot, sha256_bytes
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
    read-only instead of copying it onto its heap. On the driver it is a ``numpy.memmap``
    of the bundle file: no process holds it on its heap, only the object store has it."""
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
        self._listings: dict[str, dict[str, tuple[str, str, int]]] = {}
        self._lock = threading.Lock()

    def spec(self, t: TrialSlice) -> TrialSpec:
        return TrialSpec(
            run_id=t.run_id, trial_id=t.trial_id, order=t.order, manifest=self.manifest,
            manifest_dir=self.root, case=self.cases[t.case_id], variant=self.variants[t.variant_id],
            config_id=t.config_id, repetition=t.repetition, seed=t.seed,
            initial_commit=t.initial_commit, snapshot=self.snapshot,
            trial_dir=self.root / "trials" / t.trial_id, containment=self.containment,
            instruction_texts=t.instruction_texts, baseline=t.baseline,
            case_fingerprint=t.case_fingerprint, scored=t.scored)

    def run(self, t: TrialSlice, emit: Emit, send: Callable[[bytes], None]) -> tuple[TrialOutcome, list[str]]:
        """Run one trial here; its evidence directory goes to ``send`` as tar chunks (and is
        removed). Returns the outcome and the workspace files left out of the archive
        because they are the pinned commit's own (``restore`` writes them back)."""
        spec = self.spec(t)
        try:
            outcome = run_trial(spec, emit)
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
        sweep_stale(Path(tempfile.gettempdir()))
        root = Path(tempfile.mkdtemp(prefix=f"trialhouse-{run_id}-pid{os.getpid()}-"))
        try:
            _runs[run_id] = WorkerRun(load(), root)
        except BaseException:
            remove_tree(root)
            raise
        return _runs[run_id]


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


@atexit.register
def _cleanup() -> None:
    for run in _runs.values():
        remove_tree(run.root)


# ---------------------------------------------------------------- evidence round trip

CHUNK = 4 << 20
"""Bytes of evidence per object the worker sends (memory per process stays this, whatever
the trial left)."""


def listing(store: Path, commit: str) -> dict[str, tuple[str, str, int]]:
    """Path → (mode, blob sha, size) of every blob and symlink of ``commit`` in ``store``."""
    out = git(store, "ls-tree", "-r", "-l", "-z", "--full-tree", commit).stdout
    rows: dict[str, tuple[str, str, int]] = {}
    for rec in out.split(b"\0"):
        meta, _, name = rec.partition(b"\t")
        if not name:
            continue
        mode, kind, sha, size = meta.decode().split()
        if kind == "blob":
            rows[name.decode("utf-8", "surrogateescape")] = (mode, sha, int(size))
    return rows


def _umask() -> int:
    """This process's umask, read without changing it (``os.umask`` would, for every thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _is_pristine(path: Path, st: os.stat_result, want: tuple[str, str, int] | None, umask: int) -> bool:
    """Whether ``path`` is exactly what a checkout of ``want`` = (mode, sha, size) writes:
    the same bytes and the same permission bits (anything else is shipped as it is)."""
    if want is None:
        return False
    mode, sha, size = want
    if stat.S_ISREG(st.st_mode):
        perm = (0o755 if mode == "100755" else 0o644) & ~umask
        if st.st_size != size or stat.S_IMODE(st.st_mode) != perm:
            return False
    elif not stat.S_ISLNK(st.st_mode):
        return False
    return same_blob(path, (mode, sha))  # a symlink for a file's mode, or the reverse, is not


class _Sink(io.RawIOBase):
    """What ``tarfile`` writes, handed on in ``CHUNK``-sized pieces."""

    def __init__(self, send: Callable[[bytes], None]) -> None:
        self.send, self.buf = send, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self.buf += b
        while len(self.buf) >= CHUNK:
            self.send(bytes(self.buf[:CHUNK]))
            del self.buf[:CHUNK]
        return len(b)

    def flush_all(self) -> None:
        if self.buf:
            self.send(bytes(self.buf))
            self.buf.clear()


def pack(trial_dir: Path, send: Callable[[bytes], None],
         pristine: Mapping[str, tuple[str, str, int]] | None = None) -> list[str]:
    """Send the trial directory to ``send`` as an uncompressed tar stream, in chunks
    (symlinks stay symlinks, never followed).

    A file under ``workspace/`` that is, bytes and mode, the ``pristine`` commit's own is
    left out; the names of those are returned (sorted) for ``restore`` on the other side.
    """
    ws = trial_dir / "workspace"
    umask = _umask()
    omitted: list[str] = []
    sink = _Sink(send)
    with tarfile.open(fileobj=sink, mode="w|") as tar:
        for path in _walk(trial_dir):
            if pristine and ws in path.parents:
                rel = path.relative_to(ws).as_posix()
                st = path.lstat()
                if not stat.S_ISDIR(st.st_mode) and _is_pristine(path, st, pristine.get(rel), umask):
                    omitted.append(rel)
                    continue
            tar.add(path, arcname=path.relative_to(trial_dir).as_posix(), recursive=False)
    sink.flush_all()
    return sorted(omitted)


def pack_bytes(trial_dir: Path) -> bytes:
    """``pack`` into one bytes object, every file included (small directories, tests)."""
    chunks: list[bytes] = []
    pack(trial_dir, chunks.append)
    return b"".join(chunks)


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


class _Chunks(io.RawIOBase):
    """A readable stream over an iterator of byte chunks (nothing joined)."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.it: Iterator[bytes] = iter(chunks)
        self.view, self.pos = memoryview(b""), 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while self.pos >= len(self.view):
            nxt = next(self.it, None)
            if nxt is None:
                return 0
            self.view, self.pos = memoryview(nxt), 0
        n = min(len(b), len(self.view) - self.pos)
        b[:n] = self.view[self.pos:self.pos + n]
        self.pos += n
        return n


def unpack(data: bytes | Iterable[bytes], dest: Path) -> None:
    """Extract a ``pack`` archive (bytes, or its chunks as they arrive) into the new
    directory ``dest``, reading it as a stream.

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

    chunks = [data] if isinstance(data, bytes | bytearray) else data
    with tarfile.open(fileobj=io.BufferedReader(_Chunks(chunks), CHUNK), mode="r|") as tar:
        tar.extractall(dest, filter=keep)
    for _rest in chunks:  # the archive's end padding, if any
        pass


def restore(store: Path, commit: str, names: list[str], ws: Path,
            rows: Mapping[str, tuple[str, str, int]] | None = None) -> None:
    """Write the files ``pack`` left out of a trial's workspace, from ``commit`` in the
    driver's own ``store`` (contents and modes from there, never from the worker).

    Each must be a file of ``commit`` whose directory the archive made (a real directory,
    no symlink on the way); a name that is not is refused: the evidence would not be the
    trial's.
    """
    rows = listing(store, commit) if rows is None else rows
    plan = []
    for rel in names:
        want = rows.get(rel)
        parent = _real_dir(ws, rel)
        if want is None or parent is None or os.path.lexists(ws / rel):
            raise RunnerError(f"the worker's evidence names {rel!r} as the pinned commit's own, "
                              "which it is not")
        plan.append((rel, want))
    for rel, data in cat_blobs(store, [(rel, mode, sha) for rel, (mode, sha, _size) in plan]):
        write_blob(ws / rel, rows[rel][0], data)


def _real_dir(ws: Path, rel: str) -> Path | None:
    """``ws/dirname(rel)`` if ``rel`` is a plain relative path and ``ws`` and every directory
    on the way are real directories (no symlink followed)."""
    parts = rel.split("/")
    if any(p in ("", ".", "..", ".git") for p in parts):
        return None
    cur = ws
    for part in [None, *parts[:-1]]:
        cur = cur / part if part else cur
        try:
            if not stat.S_ISDIR(os.lstat(cur).st_mode):
                return None
        except OSError:
            return None
    return cur

