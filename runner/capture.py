"""Runner-owned trees: the run's object store, captures of a workspace, materialised copies.

What a trial is graded on and what its ``changes.patch`` shows are both computed from
one *capture*: a git tree the runner builds itself from the workspace files after the
agent's processes are gone, in a git directory the agent never sees. Nothing of the
workspace's own ``.git`` is read (a re-created, rewritten or booby-trapped ``.git``
changes nothing), no attributes, filters or hooks apply (blobs are hashed with
``--no-filters``), symlinks are recorded as symlinks and never followed, and special
files (FIFOs, sockets, devices) are skipped with a note.

Graders then run on a fresh *materialised* copy of that tree (plus the files
``prepare_commands`` produced that git ignores), written from raw blobs, so the state
graded is exactly "initial commit + prepare output + changes.patch" and nothing the
agent left behind can change it while grading runs.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from runner.blobs import (
    EMPTY_TREE,
    blob_sha,
    tree_sha,
)
from runner.git import GitError
from runner.pristine import stat_key
from runner.trees import GitTrees
from runner.walk import lstat_inside

DEFAULT_EXCLUDES = (
    ".env", ".env.*", "*.env", "__pycache__/", "*.pyc", "*.pyo", ".pytest_cache/",
    ".mypy_cache/", ".ruff_cache/", ".tox/", ".nox/", ".venv/", "venv/", "node_modules/",
    ".cache/", ".coverage", ".gradle/", ".DS_Store",
)
"""Private files and runtime state never captured (gitignore syntax); the manifest's
``checkpoint_exclude`` replaces this list."""


class WorkspaceTooLarge(GitError):
    """The workspace (with the trial's HOME and TMP) exceeds ``max_workspace_mb``."""


@dataclass(frozen=True)
class Capture:
    """One runner-built snapshot of a workspace."""

    tree: str
    files: int
    bytes: int
    skipped: tuple[str, ...] = ()
    """Paths not captured, each with the reason (special files, nested repositories)."""


@dataclass
class _Stat:
    key: tuple[int, ...]
    mode: str
    sha: str


def _path_key(row: tuple[str, str, str]) -> bytes:
    """Sort key giving git's order of ``ls-tree -r`` / ``diff-tree -r`` paths."""
    return row[2].encode("utf-8", "surrogateescape")


@dataclass
class TrialGit(GitTrees):
    """A trial's private git directory, and the captures of its workspace into it."""

    _stats: dict[str, _Stat] = field(default_factory=dict)
    _written: set[str] = field(default_factory=set)
    """Trees this directory's ``write-tree`` wrote (and ``tree_sha`` agreed with)."""

    # -- capture ---------------------------------------------------------------
    def remember_checkout(self, ws: Path, tree: str) -> None:
        """Cache the stat of every file of a fresh checkout of ``tree`` (faster captures)."""
        for mode, sha, rel in self.entries(tree):
            try:
                st = os.lstat(ws / rel)
            except OSError:
                continue
            self._stats[rel] = _Stat(stat_key(st), mode, sha)

    def capture(self, ws: Path, base_tree: str, *, excludes: tuple[str, ...] = DEFAULT_EXCLUDES,
                timeout: float | None = None, ignored_only: bool = False) -> Capture:
        """Build a tree from the workspace files as they are now (see the module docstring).

        ``ignored_only`` captures the opposite set: the untracked files git ignores or the
        exclude list leaves out (what ``prepare_commands`` installed, e.g. a virtualenv).

        Git is asked only what only git can say: which untracked files its ignore rules
        keep (``ls-files``, run only when the workspace holds a path the base tree does
        not), the blobs of files whose stat changed (``hash-object``), and a tree no
        earlier capture or pinned commit already has (``update-index`` + ``write-tree``).
        """
        if os.path.islink(ws) or not ws.is_dir():
            raise GitError(f"the workspace {ws} is no longer a directory")
        tmp = self.path / "capture"
        tmp.mkdir(exist_ok=True)
        tracked = [] if ignored_only else [(rel, mode, sha) for mode, sha, rel in self.entries(base_tree)]
        others = self._untracked(ws, base_tree, tracked, excludes, ignored_only, timeout)
        entries: list[tuple[str, str, str]] = []
        to_hash: list[tuple[str, str, Path, os.stat_result | None]] = []
        skipped: list[str] = []
        total = 0
        gitlinks = {rel: sha for rel, mode, sha in tracked if mode == "160000"}
        links = {rel: sha for rel, mode, sha in tracked if mode == "120000"}
        for rel in dict.fromkeys([*(r for r, _m, _s in tracked), *others]):
            if rel in gitlinks:
                entries.append(("160000", gitlinks[rel], rel))
                continue
            if rel.endswith("/"):
                skipped.append(f"{rel}: nested repository (not captured)")
                continue
            st = lstat_inside(ws, rel)
            if st is None:
                continue  # deleted (or behind a symlinked directory: not the workspace's)
            if stat.S_ISLNK(st.st_mode):
                target = os.fsencode(os.readlink(ws / rel))
                sha = blob_sha(target)
                self.blob_sizes[sha] = len(target)
                if links.get(rel) == sha:  # the same link as in the base tree: a known blob
                    entries.append(("120000", sha, rel))
                    continue
                link = tmp / f"link-{len(to_hash)}"
                link.write_bytes(target)
                to_hash.append((rel, "120000", link, None))
            elif stat.S_ISREG(st.st_mode):
                mode = "100755" if st.st_mode & 0o111 else "100644"
                total += st.st_size
                cached = self._stats.get(rel)
                if cached is not None and cached.key == stat_key(st) and cached.mode == mode:
                    entries.append((mode, cached.sha, rel))
                    self.blob_sizes[cached.sha] = st.st_size
                else:
                    to_hash.append((rel, mode, ws / rel, st))
            else:
                skipped.append(f"{rel}: not a regular file or symlink (not captured)")
        if to_hash:
            stdin = "\n".join(os.fsdecode(p) for _r, _m, p, _s in to_hash).encode("utf-8", "surrogateescape")
            if any("\n" in os.fsdecode(p) for _r, _m, p, _s in to_hash):
                shas = [self._hash_one(p, timeout) for _r, _m, p, _s in to_hash]
            else:
                res = self.run_git("hash-object", "-w", "--no-filters", "--stdin-paths",
                                input_bytes=stdin + b"\n", timeout=timeout)
                shas = res.stdout.decode().split()
            for (rel, mode, _p, st), sha in zip(to_hash, shas, strict=True):
                entries.append((mode, sha, rel))
                if st is not None:
                    self._stats[rel] = _Stat(stat_key(st), mode, sha)
                    self.blob_sizes[sha] = st.st_size
        tree = self._tree(entries, tmp / "index", timeout)
        return Capture(tree, len(entries), total, tuple(skipped))

    def _untracked(self, ws: Path, base_tree: str, tracked: list[tuple[str, str, str]],
                   excludes: tuple[str, ...], ignored_only: bool, timeout: float | None) -> list[str]:
        """``ls-files --others`` of the workspace against ``base_tree`` (with ``ignored_only``,
        the ignored ones against nothing); not run when the workspace holds no path
        outside the base tree, where its answer is empty."""
        if not ignored_only and not _has_untracked(ws, {rel for rel, _m, _s in tracked}):
            return []
        tmp = self.path / "capture"
        excl = tmp / "exclude"
        excl.write_text("\n".join(excludes) + "\n")
        listing = ["ls-files", "-z", "--others", "--exclude-standard", f"--exclude-from={excl}"]
        if ignored_only:
            listing.insert(3, "--ignored")
            index = tmp / "no-index"  # never created: an empty index
            index.unlink(missing_ok=True)
        else:
            index = self.store.index_of(base_tree)
        out = self.run_git(*listing, index=index, work_tree=ws, timeout=timeout).stdout
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]

    def _tree(self, entries: list[tuple[str, str, str]], index: Path, timeout: float | None) -> str:
        """The tree of ``entries``: one that exists already, else written by git."""
        rows = tuple(sorted(entries, key=_path_key))
        if not rows:
            return EMPTY_TREE
        guess = tree_sha(rows)
        if guess is not None and (guess in self.store.trees or guess in self._written):
            tree = guess
        else:
            index.unlink(missing_ok=True)
            info = b"".join(f"{m} {s}\t".encode() + r.encode("utf-8", "surrogateescape") + b"\0"
                            for m, s, r in rows)
            self.run_git("update-index", "--add", "-z", "--index-info", input_bytes=info, index=index,
                      timeout=timeout)
            tree = self.run_git("write-tree", index=index, timeout=timeout).stdout.decode().strip()
            index.unlink(missing_ok=True)
            if tree == guess:
                self._written.add(tree)
        self.store.remember(tree, rows)
        return tree

    def cached(self, rel: str, path: Path) -> str | None:
        """The blob of ``rel`` if its file is unchanged since the runner last hashed it."""
        entry = self._stats.get(rel)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return entry.sha if entry is not None and entry.key == stat_key(st) else None

    def _hash_one(self, path: Path, timeout: float | None) -> str:
        """One file's blob, written (a name ``--stdin-paths`` cannot carry): git reads the
        file from its standard input, so a large file is never held whole here."""
        with open(path, "rb") as fh:
            return self.run_git("hash-object", "-w", "--no-filters", "--stdin", stdin=fh,
                             timeout=timeout).stdout.decode().strip()


def _has_untracked(ws: Path, tracked: set[str]) -> bool:
    """Whether the workspace holds anything ``ls-files --others`` could name: a file,
    symlink or special file at a path the base tree does not have, or a nested ``.git``
    (a nested repository). Walked without following symlinks; True when unsure."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(ws / rel_dir if rel_dir else ws) as it:
                found = list(it)
        except OSError:
            return True
        for entry in found:
            if entry.name == ".git":
                if rel_dir:
                    return True
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                return True
            if is_dir:
                stack.append(rel)
            elif rel not in tracked:
                return True
    return False
