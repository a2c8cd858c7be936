"""Git objects as the runner handles them: names computed here, blobs streamed, never held whole.

The names (``blob_sha``, ``tree_sha``, ``commit_sha``) are exactly what git gives the same
content, computed in Python so a capture or a checkpoint that git already has costs no
git process (docs/design.md, "A runner near its floor"). Blobs are read through one ``cat-file --batch``
per call and written out chunk by chunk, so a large file never sits in memory.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, BinaryIO

from runner.git import IDENTITY, GitError, git_env

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

FIXED_TIME = 946684800
"""``runner.git.IDENTITY``'s dates as seconds since the epoch."""

_Node = dict[str, "_Node | tuple[str, str]"]
"""A directory of a tree being named: entry name → sub-directory or (mode, sha)."""


def blob_sha(data: bytes) -> str:
    """The object name git gives a blob of ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_blob_sha(fh: BinaryIO) -> str:
    """``blob_sha`` of an open file, read in chunks: a large file is never held whole."""
    size = os.fstat(fh.fileno()).st_size
    digest = hashlib.sha1(b"blob %d\0" % size)
    read = 0
    while chunk := fh.read(1 << 20):
        digest.update(chunk)
        read += len(chunk)
    return digest.hexdigest() if read == size else ""  # a file changing under us is no match


def commit_sha(tree: str, parent: str | None, message: str) -> str:
    """The object name ``git commit-tree tree [-p parent] -m message`` gives with the runner's
    identity and dates (``runner.git.IDENTITY``: 2000-01-01T00:00:00Z, UTC)."""
    person = f"{IDENTITY['GIT_AUTHOR_NAME']} <{IDENTITY['GIT_AUTHOR_EMAIL']}> {FIXED_TIME} +0000"
    who = f"{IDENTITY['GIT_COMMITTER_NAME']} <{IDENTITY['GIT_COMMITTER_EMAIL']}> {FIXED_TIME} +0000"
    body = (f"tree {tree}\n" + (f"parent {parent}\n" if parent else "") + f"author {person}\n"
            f"committer {who}\n\n{message}" + ("" if not message or message.endswith("\n") else "\n")).encode("utf-8")
    return hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest()


def tree_sha(entries: Iterable[tuple[str, str, str]]) -> str | None:
    """The object name git gives the tree of these ``(mode, sha, path)`` rows (blobs,
    symlinks, gitlinks), computed here; None when the paths do not form a tree. Tells a
    capture that its tree already exists (the commonest case: nothing changed), so it
    writes none; a tree it does write is git's own ``write-tree``."""
    root: _Node = {}
    for mode, sha, rel in entries:
        parts = rel.split("/")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                return None
            node = child
        if parts[-1] in node:
            return None
        node[parts[-1]] = (mode, sha)

    def digest(node: _Node) -> str:
        rows = []
        for name, value in node.items():
            raw = name.encode("utf-8", "surrogateescape")
            if isinstance(value, dict):
                rows.append((raw + b"/", b"40000 " + raw + b"\0" + bytes.fromhex(digest(value))))
            else:
                mode, sha = value
                rows.append((raw, mode.encode() + b" " + raw + b"\0" + bytes.fromhex(sha)))
        body = b"".join(row for _key, row in sorted(rows))
        return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()

    try:
        return digest(root)
    except (RecursionError, ValueError):
        return None


def cat_blobs(git_dir: Path, blobs: list[tuple[str, str, str]], timeout: float | None = None
              ) -> Iterator[tuple[str, Iterator[bytes]]]:
    """(path, chunks of its content) for each (path, mode, sha), from one
    ``cat-file --batch`` of ``git_dir``; each chunk iterator must be consumed before the
    next item. No object is held whole."""
    if not blobs:
        return
    proc = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=git_dir, env=git_env({"GIT_DIR": str(git_dir)}),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = "".join(f"{sha}\n" for _r, _m, sha in blobs).encode()
    feeder = threading.Thread(target=_feed, args=(proc.stdin, request), daemon=True)
    feeder.start()
    try:
        for rel, _mode, _sha in blobs:
            header = proc.stdout.readline().split()
            if len(header) != 3 or header[1] != b"blob":
                raise GitError(f"object for {rel} missing from the runner's store")
            chunks = _read_exact(proc.stdout, int(header[2]))
            yield rel, chunks
            for _rest in chunks:  # whatever the consumer left
                pass
            proc.stdout.read(1)  # the newline after each object
    finally:
        proc.stdout.close()
        proc.wait(timeout=timeout)
        feeder.join(timeout=5)


def write_blob(target: Path, mode: str, chunks: Iterable[bytes]) -> None:
    """A blob's content as a new file (or symlink) at ``target``, with git's mode for it;
    never through an existing path."""
    if mode == "120000":
        os.symlink(b"".join(chunks), target)
        return
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o755 if mode == "100755" else 0o644)
    with os.fdopen(fd, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)


def same_blob(path: Path, want: tuple[str, str] | None) -> bool:
    """Whether the file or symlink at ``path`` is the blob ``want`` = (mode, sha)."""
    if want is None:
        return False
    try:
        if want[0] == "120000":
            return blob_sha(os.fsencode(os.readlink(path))) == want[1]
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            return file_blob_sha(fh) == want[1]
    except OSError:
        return False


def _feed(pipe: IO[bytes], data: bytes) -> None:
    try:
        pipe.write(data)
    except (BrokenPipeError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, ValueError):
            pass


def _read_exact(stream: IO[bytes], size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise GitError("the runner's store ended an object early")
        left -= len(chunk)
        yield chunk
