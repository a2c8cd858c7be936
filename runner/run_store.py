"""The run's object store: exactly the pinned commits, read once from the sources.

Everything a trial's git work needs and every trial would otherwise redo (a workspace's
starting ``.git``, the empty private git directory, an index of a base tree, the
listings of trees) is made here once per run and only ever copied or read
(docs/design.md, "A runner near its floor").
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from runner.git import git, git_out
from runner.pristine import Trash, remove_tree

LISTINGS_KEPT = 64
"""Tree listings a run keeps (oldest dropped first): the initial and prepared trees of
its cases, and the latest captures of running trials."""


class RunStore:
    """A bare repository per run holding exactly the pinned commits, read once from sources.

    Trials never read the source repository: their workspaces are made from here, so
    nothing a trial does can reach (or change) the operator's repository. What every
    trial of a run would otherwise redo is made here once per run (per process) and only
    ever copied: a workspace's starting ``.git`` per pinned commit, the empty private git
    directory, an index of each base tree (for listing untracked files). They live in
    ``<store>.cache/<pid>-<token>/`` and ``close()`` removes them. A ``shared`` store is
    one copy used by several processes at once (the trial hosts of a Ray node,
    docs/scale.md): they share one cache (``<store>.cache/node/``, each piece built once on
    the node, by whichever process asks first) and never remove each other's.
    """

    def __init__(self, path: Path, *, shared: bool = False) -> None:
        self.path = path
        self.listings: dict[str, tuple[tuple[str, str, str], ...]] = {}
        """Tree sha → its ``ls-tree -r`` rows, shared by the run's trials. A tree is named
        by the hash of its content, so its listing never changes: every trial of a case
        lists the same initial and prepared trees, and each is listed once per run."""
        self.trees: set[str] = set()
        """Trees of pinned commits: objects of this store, so present for every trial."""
        self._commit_trees: dict[str, str] = {}
        self._lock = threading.Lock()
        self._built: dict[str, Path] = {}
        cache_root = path.parent / f"{path.name}.cache"
        self.shared = shared
        mine = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.cache = cache_root / ("node" if shared else mine)
        self.trash = Trash(self.cache / (f"trash-{mine}" if shared else "trash"))
        """Where trials put what they are done with (removed in the background)."""
        if cache_root.is_dir() and not shared:  # left by an earlier process (a resumed run): never trusted
            for old in cache_root.iterdir():
                if not old.name.startswith(f"{os.getpid()}-"):
                    remove_tree(old)
        if not (path / "HEAD").exists():
            path.mkdir(parents=True, exist_ok=True)
            git(path, "init", "-q", "--bare")

    def pin(self, source: Path, commit: str) -> None:
        """Copy ``commit`` (depth 1) from ``source`` into the store, once."""
        ref = f"refs/pins/{commit}"
        if git(self.path, "rev-parse", "-q", "--verify", ref, check=False).returncode == 0:
            return
        git(self.path, "fetch", "-q", "--no-tags", "--depth", "1", str(source.resolve()),
            f"{commit}:{ref}")

    def tree_of(self, commit: str) -> str:
        tree = self._commit_trees.get(commit)
        if tree is None:
            tree = git_out(self.path, "rev-parse", f"{commit}^{{tree}}")
            with self._lock:
                self._commit_trees[commit] = tree
                self.trees.add(tree)
        return tree

    def remember(self, tree: str, rows: tuple[tuple[str, str, str], ...]) -> None:
        """Keep ``rows`` as the listing of ``tree`` (bounded: a run's memory stays flat)."""
        with self._lock:
            self.listings[tree] = rows
            while len(self.listings) > LISTINGS_KEPT:
                self.listings.pop(next(iter(self.listings)), None)

    def discard(self, path: Path) -> None:
        """``path`` (in the run directory) is done with: removed in the background."""
        self.trash.discard(path)

    def close(self) -> None:
        """Remove what this process made for its trials (the store itself stays), once
        everything discarded is gone."""
        self.trash.close()
        with self._lock:
            self._built.clear()
        shutil.rmtree(self.trash.root if self.shared else self.cache, ignore_errors=True)

    def _once(self, name: str, build: Callable[[Path], object]) -> Path:
        """``cache/name``, made by ``build(tmp)`` the first time it is asked for."""
        with self._lock:
            done = self._built.get(name)
            if done is not None:
                return done
            self.cache.mkdir(parents=True, exist_ok=True)
            dest = self.cache / name
            if self.shared:
                return self._shared_once(name, dest, build)
            tmp = self.cache / f".{name}.tmp"
            remove_tree(tmp)
            remove_tree(dest)
            build(tmp)
            os.replace(tmp, dest)
            self._built[name] = dest
            return dest

    def _shared_once(self, name: str, dest: Path, build: Callable[[Path], object]) -> Path:
        """``_once`` for a store other processes use too: built under a name of this
        process's own and renamed into place; one built first by another process is used
        as it is (a rename onto a directory that exists fails, and ours is dropped)."""
        if not dest.exists():
            tmp = self.cache / f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
            build(tmp)
            try:
                os.rename(tmp, dest)
            except OSError:
                remove_tree(tmp)
        self._built[name] = dest
        return dest

    def seed(self, commit: str) -> Path:
        """The ``.git`` a new workspace of ``commit`` starts from: what ``git init`` makes,
        the commit's objects in one pack and a ``shallow`` file (a depth-1 history), HEAD
        still unborn. A workspace gets a copy, so nothing an agent does reaches it."""
        self.tree_of(commit)  # raises GitError when the store lacks the commit

        def build(tmp: Path) -> None:
            git(self.path, "init", "-q", str(tmp))
            objects = git(self.path, "rev-list", "--objects", "--no-walk", commit).stdout
            git(self.path, "pack-objects", "-q", str(tmp / ".git" / "objects" / "pack" / "pack"),
                input_bytes=objects)
            (tmp / ".git" / "shallow").write_text(commit + "\n")

        return self._once(f"seed-{commit}", build) / ".git"

    def private_template(self) -> Path:
        """An empty bare repository (no hooks, no samples): what each trial's private git
        directory is copied from."""
        return self._once("private.git", lambda tmp: git(self.path, "init", "-q", "--bare",
                                                          "--template=", str(tmp)))

    def index_of(self, tree: str) -> Path:
        """An index holding ``tree`` (no stat data): what ``ls-files --others`` compares a
        workspace with to list its untracked files. Only ever read."""
        return self._once(f"index-{tree}", lambda tmp: git(
            self.path, "read-tree", tree, env={"GIT_INDEX_FILE": str(tmp)}))
