"""A trial's private git directory and the trees in it: listed, compared, written out, diffed.

The directory borrows the run store's objects (an ``alternates`` file) and holds what the
trial's captures add (``runner.capture``). Trees are listed once per run (the store keeps
the listings), compared from those listings, written out as fresh copies from raw blobs
(``materialise``, reused while provably untouched: ``runner.pristine``) and diffed into a
bounded ``changes.patch`` (docs/design.md, "A runner near its floor").
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.blobs import cat_blobs, commit_sha, same_blob, write_blob
from runner.git import SAFE_CONFIG, git, git_env
from runner.pristine import Pristine
from runner.run_store import RunStore

PATCH_FILE_LIMIT = 8 * 1024 * 1024
"""A changed file larger than this is summarised in ``changes.patch``, not included."""
PATCH_LIMIT = 32 * 1024 * 1024
"""``changes.patch`` is cut at this many bytes (with a note)."""
REMEMBERED_PATCH = 1024 * 1024
"""A trial's last patch up to this size is kept in memory: asked for again, it is copied."""

Rows = tuple[tuple[str, str, str], ...]
"""A tree's listing: (mode, sha, path) of every blob, symlink and gitlink, in git's order."""


@dataclass(frozen=True)
class PatchInfo:
    bytes: int
    truncated: bool
    summarised: tuple[str, ...] = ()
    """Changed files left out of the patch because of their size (path: size)."""


@dataclass
class GitTrees:
    """A trial's private git directory (objects borrowed from the run store)."""

    path: Path
    store: RunStore
    blob_sizes: dict[str, int] = field(default_factory=dict)
    """Blob sha → size, for the blobs this trial's captures saw (sizes a patch needs)."""
    _copies: dict[Path, tuple[dict[str, tuple[str, str]], Pristine]] = field(default_factory=dict)
    _last_patch: tuple[tuple[str, str, int, int], bytes, PatchInfo] | None = None

    def __post_init__(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.store.private_template(), self.path, dirs_exist_ok=True)
            alt = self.path / "objects" / "info" / "alternates"
            alt.write_text(str((self.store.path / "objects").resolve()) + "\n")

    def run_git(self, *args: str, input_bytes: bytes | None = None, index: Path | None = None,
                work_tree: Path | None = None, timeout: float | None = None,
                stdout: int | None = None, stdin: Any = None) -> subprocess.CompletedProcess[bytes]:
        """Git on this directory (``runner.git``'s environment), with an index and work tree
        only when given."""
        env = {"GIT_DIR": str(self.path)}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return git(self.path, *args, env=env, input_bytes=input_bytes, timeout=timeout,
                   stdout=stdout, stdin=stdin)

    # -- listings ----------------------------------------------------------------
    def entries(self, tree: str) -> Rows:
        """(mode, sha, path) of every blob, symlink and gitlink under ``tree``, in git's order."""
        known = self.store.listings.get(tree)
        if known is None:
            known = self._list(tree)
            self.store.remember(tree, known)
        return known

    def _list(self, tree: str) -> Rows:
        out = self.run_git("ls-tree", "-r", "-z", "--full-tree", tree).stdout
        rows = []
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, _, name = rec.partition(b"\t")
            mode, _kind, sha = meta.decode().split(" ")
            rows.append((mode, sha, name.decode("utf-8", "surrogateescape")))
        return tuple(rows)

    def changed_paths(self, old: str, new: str) -> int:
        """How many paths differ between two trees."""
        return len(self.changed_names(old, new))

    def changed_names(self, old: str, new: str) -> list[str]:
        """The paths that differ between two trees (sorted, as ``git diff-tree -r`` names
        them), from the two listings."""
        return [rel for rel, _sha in self._changes(old, new)]

    def _changes(self, old: str, new: str) -> list[tuple[str, str | None]]:
        """(path, blob sha on the new side or None when deleted) of every changed path."""
        if old == new:
            return []
        before = {rel: (mode, sha) for mode, sha, rel in self.entries(old)}
        after = {rel: (mode, sha) for mode, sha, rel in self.entries(new)}
        names = sorted((rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)),
                       key=lambda rel: rel.encode("utf-8", "surrogateescape"))
        return [(rel, after[rel][1] if rel in after else None) for rel in names]

    def commit(self, tree: str, parent: str | None, message: str) -> str:
        """The name of the checkpoint commit of ``tree`` on ``parent``: exactly what
        ``git commit-tree`` with the runner's fixed identity and dates (``runner.git.IDENTITY``)
        gives. It is named, not written: nothing reads it, and the private git directory
        holding it would be deleted with the trial."""
        return commit_sha(tree, parent, message)

    # -- copies ------------------------------------------------------------------
    def _plan(self, tree: str, overlay: str | None) -> dict[str, tuple[str, str]]:
        plan: dict[str, tuple[str, str]] = {}
        for t in ([overlay] if overlay else []) + [tree]:
            for mode, sha, rel in self.entries(t):
                if _unsafe(rel):
                    continue
                plan[rel] = (mode, sha)
        return plan

    def materialise(self, tree: str, dest: Path, *, overlay: str | None = None,
                    timeout: float | None = None, reuse: bool = False) -> int:
        """Write ``tree``'s files into the empty directory ``dest`` from raw blobs.

        ``overlay`` (a tree of ignored files) is written first, then ``tree`` on top, so a
        path in both takes ``tree``'s content. Returns the number of entries written.

        With ``reuse`` the copy is handed out on return (to a grader): the next call for
        the same ``dest`` and the same trees keeps it when it is provably untouched
        (``runner.pristine``) and writes it afresh otherwise.
        """
        plan = self._plan(tree, overlay)
        if reuse:
            known = self._copies.get(dest)
            if known is not None and known[0] == plan and known[1].intact():
                known[1].expose()
                return len(plan)
            self._copies.pop(dest, None)
            self.store.discard(dest)
        self._write(plan, dest, timeout)
        if reuse:
            record = Pristine(dest, lambda rel, path: same_blob(path, plan.get(rel)))
            if record.record():
                record.expose()
                self._copies[dest] = (plan, record)
        return len(plan)

    def _write(self, plan: dict[str, tuple[str, str]], dest: Path, timeout: float | None) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        blobs = [(rel, mode, sha) for rel, (mode, sha) in plan.items() if mode != "160000"]
        for rel, (mode, _sha) in plan.items():
            if mode == "160000":
                (dest / rel).mkdir(parents=True, exist_ok=True)
        for rel, data in self._blobs(blobs, timeout):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_blob(target, plan[rel][0], data)

    def read_files(self, tree: str, names: list[str], limit: int,
                   timeout: float | None = None) -> dict[str, bytes]:
        """The first ``limit`` bytes of each regular file ``names`` picks from ``tree``
        (symlinks, gitlinks and unsafe paths left out), straight from the objects."""
        wanted = set(names)
        blobs = [(rel, mode, sha) for mode, sha, rel in self.entries(tree)
                 if rel in wanted and mode in ("100644", "100755") and not _unsafe(rel)]
        out: dict[str, bytes] = {}
        for rel, data in self._blobs(blobs, timeout):
            kept, size = [], 0
            for chunk in data:
                if size < limit:
                    kept.append(chunk[: limit - size])
                    size += len(kept[-1])
            out[rel] = b"".join(kept)
        return out

    def _blobs(self, blobs: list[tuple[str, str, str]], timeout: float | None
               ) -> Iterator[tuple[str, Iterator[bytes]]]:
        return cat_blobs(self.path, blobs, timeout)

    # -- patches -----------------------------------------------------------------
    def diff_to_file(self, old: str, new: str, dest: Path, *, timeout: float | None = None,
                     file_limit: int = PATCH_FILE_LIMIT, limit: int = PATCH_LIMIT) -> PatchInfo:
        """Write ``git diff --binary old new`` to ``dest``, bounded.

        Files over ``file_limit`` are listed in a leading note instead of being included
        (the note sits before the first ``diff --git`` line, which ``git apply`` skips, so a
        complete patch stays applicable); the whole patch is cut at ``limit`` bytes.
        Two equal trees give an empty file without running git, and the same pair asked
        for again (a checkpoint's patch is often the final one) is the same bytes.
        """
        key = (old, new, file_limit, limit)
        if old == new:
            return _write_whole(dest, b"", PatchInfo(0, False))
        if self._last_patch is not None and self._last_patch[0] == key:
            return _write_whole(dest, self._last_patch[1], self._last_patch[2])
        big = self._oversized(old, new, file_limit, timeout)
        info, kept = _stream_diff(self.path, old, new, dest, big, limit, timeout)
        if kept is not None:
            self._last_patch = (key, kept, info)
        return info

    def _oversized(self, old: str, new: str, file_limit: int, timeout: float | None) -> list[str]:
        """``path: size`` of each changed file over ``file_limit`` (sizes from the captures,
        else one ``cat-file --batch-check``)."""
        changed = [(rel, sha) for rel, sha in self._changes(old, new) if sha is not None]
        unknown = [sha for _rel, sha in changed if sha not in self.blob_sizes]
        if unknown:
            check = "".join(f"{sha}\n" for sha in unknown).encode()
            rows = self.run_git("cat-file", "--batch-check=%(objectname) %(objectsize)", input_bytes=check,
                                timeout=timeout).stdout.decode().split("\n")
            for row in rows:
                name, _, size_text = row.partition(" ")
                if size_text.isdigit():
                    self.blob_sizes[name] = int(size_text)
        big: list[str] = []
        for rel, sha in changed:
            size = self.blob_sizes.get(sha, 0)
            if size > file_limit:
                big.append(f"{rel}: {size} bytes")
        return big


def _write_whole(dest: Path, data: bytes, info: PatchInfo) -> PatchInfo:
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return info


def _stream_diff(git_dir: Path, old: str, new: str, dest: Path, big: list[str], limit: int,
                 timeout: float | None) -> tuple[PatchInfo, bytes | None]:
    """``git diff`` streamed into ``dest`` (cut at ``limit``), the ``big`` files left out and
    named in a leading note; the bytes too when the whole patch is small enough to keep."""
    args = ["diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv",
            "--no-renames", old, new]
    if big:
        args += ["--", *(f":(exclude,literal){p.rsplit(': ', 1)[0]}" for p in big)]
    note = b""
    if big:
        note = ("# trialhouse: files over the patch size limit are summarised, not included:\n"
                + "".join(f"#   {b}\n" for b in big)).encode()
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    written, truncated = 0, False
    kept: list[bytes] | None = [note]
    proc = subprocess.Popen(["git", *SAFE_CONFIG, *args], cwd=git_dir,
                            env=git_env({"GIT_DIR": str(git_dir)}), stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    with os.fdopen(fd, "wb") as fh:
        fh.write(note)
        written += len(note)
        while chunk := proc.stdout.read(1 << 16):
            room = limit - written
            if room <= 0:
                truncated = True
                continue  # keep reading so git can finish
            piece = chunk[:room]
            fh.write(piece)
            written += len(piece)
            truncated = truncated or len(chunk) > room
            if kept is not None and written <= REMEMBERED_PATCH:
                kept.append(piece)
            else:
                kept = None
        if truncated:
            msg = f"\n# trialhouse: patch cut at {limit} bytes; it is incomplete\n".encode()
            fh.write(msg)
            written += len(msg)
            kept = None
    proc.stdout.close()
    proc.wait(timeout=timeout)
    info = PatchInfo(written, truncated, tuple(big))
    whole = b"".join(kept) if proc.returncode == 0 and kept is not None and written <= REMEMBERED_PATCH else None
    return info, whole


def _unsafe(rel: str) -> bool:
    parts = rel.split("/")
    return rel.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts)
