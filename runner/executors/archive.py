"""The evidence round trip of a remote trial: its directory as a tar stream in chunks.

The worker ``pack``s a trial's directory into chunks of ``CHUNK`` bytes (no process
holds an archive whole) and leaves out the workspace files still byte for byte what the
pinned commit holds; the driver ``unpack``s the stream as it arrives, refusing anything
that would write outside the trial's directory, and ``restore``s the left-out files
from its own run store (docs/scale.md).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from runner.blobs import cat_blobs, same_blob, write_blob
from runner.errors import RunnerError
from runner.git import git

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

