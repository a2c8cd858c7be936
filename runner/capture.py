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

import hashlib
import os
import secrets
import shutil
import stat
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from runner.git import IDENTITY, SAFE_CONFIG, GitError, git, git_env, git_out
from runner.pristine import Pristine, Trash, remove_tree, stat_key

DEFAULT_EXCLUDES = (
    ".env", ".env.*", "*.env", "__pycache__/", "*.pyc", "*.pyo", ".pytest_cache/",
    ".mypy_cache/", ".ruff_cache/", ".tox/", ".nox/", ".venv/", "venv/", "node_modules/",
    ".cache/", ".coverage", ".gradle/", ".DS_Store",
)
"""Private files and runtime state never captured (gitignore syntax); the manifest's
``checkpoint_exclude`` replaces this list."""

PATCH_FILE_LIMIT = 8 * 1024 * 1024
"""A changed file larger than this is summarised in ``changes.patch``, not included."""
PATCH_LIMIT = 32 * 1024 * 1024
"""``changes.patch`` is cut at this many bytes (with a note)."""

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
LISTINGS_KEPT = 64
"""Tree listings a run keeps (oldest dropped first): the initial and prepared trees of
its cases, and the latest captures of running trials."""
REMEMBERED_PATCH = 1024 * 1024
"""A trial's last patch up to this size is kept in memory: asked for again, it is copied."""


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


@dataclass(frozen=True)
class PatchInfo:
    bytes: int
    truncated: bool
    summarised: tuple[str, ...] = ()
    """Changed files left out of the patch because of their size (path: size)."""


class RunStore:
    """A bare repository per run holding exactly the pinned commits, read once from sources.

    Trials never read the source repository: their workspaces are made from here, so
    nothing a trial does can reach (or change) the operator's repository. What every
    trial of a run would otherwise redo is made here once per run (per process) and only
    ever copied: a workspace's starting ``.git`` per pinned commit, the empty private git
    directory, an index of each base tree (for listing untracked files). They live in
    ``<store>.cache/<pid>-<token>/`` and ``close()`` removes them.
    """

    def __init__(self, path: Path) -> None:
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
        self.cache = cache_root / f"{os.getpid()}-{secrets.token_hex(4)}"
        self.trash = Trash(self.cache / "trash")
        """Where trials put what they are done with (removed in the background)."""
        if cache_root.is_dir():  # left by an earlier process (a resumed run): never trusted
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
        shutil.rmtree(self.cache, ignore_errors=True)

    def _once(self, name: str, build: Callable[[Path], None]) -> Path:
        """``cache/name``, made by ``build(tmp)`` the first time it is asked for."""
        with self._lock:
            done = self._built.get(name)
            if done is not None:
                return done
            self.cache.mkdir(parents=True, exist_ok=True)
            dest = self.cache / name
            tmp = self.cache / f".{name}.tmp"
            remove_tree(tmp)
            remove_tree(dest)
            build(tmp)
            os.replace(tmp, dest)
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


@dataclass
class _Stat:
    key: tuple[int, ...]
    mode: str
    sha: str


_stat_key = stat_key


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


FIXED_TIME = 946684800
"""``runner.git.IDENTITY``'s dates as seconds since the epoch."""


def tree_sha(entries: Iterable[tuple[str, str, str]]) -> str | None:
    """The object name git gives the tree of these ``(mode, sha, path)`` rows (blobs,
    symlinks, gitlinks), computed here; None when the paths do not form a tree. Tells a
    capture that its tree already exists (the commonest case: nothing changed), so it
    writes none; a tree it does write is git's own ``write-tree``."""
    root: dict[str, object] = {}
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

    def digest(node: dict[str, object]) -> str:
        rows = []
        for name, value in node.items():
            raw = name.encode("utf-8", "surrogateescape")
            if isinstance(value, dict):
                rows.append((raw + b"/", b"40000 " + raw + b"\0" + bytes.fromhex(digest(value))))
            else:
                mode, sha = value  # type: ignore[misc]
                rows.append((raw, mode.encode() + b" " + raw + b"\0" + bytes.fromhex(sha)))
        body = b"".join(row for _key, row in sorted(rows))
        return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()

    try:
        return digest(root)
    except (RecursionError, ValueError):
        return None


def _path_key(row: tuple[str, str, str]) -> bytes:
    """Sort key giving git's order of ``ls-tree -r`` / ``diff-tree -r`` paths."""
    return row[2].encode("utf-8", "surrogateescape")


@dataclass
class TrialGit:
    """A trial's private git directory (objects borrowed from the run store)."""

    path: Path
    store: RunStore
    _stats: dict[str, _Stat] = field(default_factory=dict)
    _sizes: dict[str, int] = field(default_factory=dict)
    """Blob sha → size, for the blobs this trial's captures saw (sizes a patch needs)."""
    _written: set[str] = field(default_factory=set)
    """Trees this directory's ``write-tree`` wrote (and ``tree_sha`` agreed with)."""
    _copies: dict[Path, tuple[dict[str, tuple[str, str]], Pristine]] = field(default_factory=dict)
    _last_patch: tuple[tuple[str, str, int, int], bytes, PatchInfo] | None = None

    def __post_init__(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.store.private_template(), self.path, dirs_exist_ok=True)
            alt = self.path / "objects" / "info" / "alternates"
            alt.write_text(str((self.store.path / "objects").resolve()) + "\n")

    def _git(self, *args: str, input_bytes: bytes | None = None, index: Path | None = None,
             work_tree: Path | None = None, timeout: float | None = None,
             stdout: int | None = None, stdin: Any = None) -> subprocess.CompletedProcess[bytes]:
        env = {"GIT_DIR": str(self.path)}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return git(self.path, *args, env=env, input_bytes=input_bytes, timeout=timeout,
                   stdout=stdout, stdin=stdin)

    # -- capture ---------------------------------------------------------------
    def remember_checkout(self, ws: Path, tree: str) -> None:
        """Cache the stat of every file of a fresh checkout of ``tree`` (faster captures)."""
        for mode, sha, rel in self.entries(tree):
            try:
                st = os.lstat(ws / rel)
            except OSError:
                continue
            self._stats[rel] = _Stat(_stat_key(st), mode, sha)

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
            st = _lstat_inside(ws, rel)
            if st is None:
                continue  # deleted (or behind a symlinked directory: not the workspace's)
            if stat.S_ISLNK(st.st_mode):
                target = os.fsencode(os.readlink(ws / rel))
                sha = blob_sha(target)
                self._sizes[sha] = len(target)
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
                if cached is not None and cached.key == _stat_key(st) and cached.mode == mode:
                    entries.append((mode, cached.sha, rel))
                    self._sizes[cached.sha] = st.st_size
                else:
                    to_hash.append((rel, mode, ws / rel, st))
            else:
                skipped.append(f"{rel}: not a regular file or symlink (not captured)")
        if to_hash:
            stdin = "\n".join(os.fsdecode(p) for _r, _m, p, _s in to_hash).encode("utf-8", "surrogateescape")
            if any("\n" in os.fsdecode(p) for _r, _m, p, _s in to_hash):
                shas = [self._hash_one(p, timeout) for _r, _m, p, _s in to_hash]
            else:
                res = self._git("hash-object", "-w", "--no-filters", "--stdin-paths",
                                input_bytes=stdin + b"\n", timeout=timeout)
                shas = res.stdout.decode().split()
            for (rel, mode, _p, st), sha in zip(to_hash, shas, strict=True):
                entries.append((mode, sha, rel))
                if st is not None:
                    self._stats[rel] = _Stat(_stat_key(st), mode, sha)
                    self._sizes[sha] = st.st_size
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
        out = self._git(*listing, index=index, work_tree=ws, timeout=timeout).stdout
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
            self._git("update-index", "--add", "-z", "--index-info", input_bytes=info, index=index,
                      timeout=timeout)
            tree = self._git("write-tree", index=index, timeout=timeout).stdout.decode().strip()
            index.unlink(missing_ok=True)
            if tree == guess:
                self._written.add(tree)
        self._remember(tree, rows)
        return tree

    def cached(self, rel: str, path: Path) -> str | None:
        """The blob of ``rel`` if its file is unchanged since the runner last hashed it."""
        entry = self._stats.get(rel)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return entry.sha if entry is not None and entry.key == _stat_key(st) else None

    def _hash_one(self, path: Path, timeout: float | None) -> str:
        """One file's blob, written (a name ``--stdin-paths`` cannot carry): git reads the
        file from its standard input, so a large file is never held whole here."""
        with open(path, "rb") as fh:
            return self._git("hash-object", "-w", "--no-filters", "--stdin", stdin=fh,
                             timeout=timeout).stdout.decode().strip()

    # -- trees -----------------------------------------------------------------
    def entries(self, tree: str) -> tuple[tuple[str, str, str], ...]:
        """(mode, sha, path) of every blob, symlink and gitlink under ``tree``, in git's order."""
        known = self.store.listings.get(tree)
        if known is None:
            known = self._list(tree)
            self._remember(tree, known)
        return known

    def _remember(self, tree: str, rows: tuple[tuple[str, str, str], ...]) -> None:
        self.store.remember(tree, rows)

    def _list(self, tree: str) -> tuple[tuple[str, str, str], ...]:
        out = self._git("ls-tree", "-r", "-z", "--full-tree", tree).stdout
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
        if old == new or (self._last_patch is not None and self._last_patch[0] == key):
            data, info = (b"", PatchInfo(0, False)) if old == new else self._last_patch[1:]  # type: ignore[misc]
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            return info
        changed = [(rel, sha) for rel, sha in self._changes(old, new) if sha is not None]
        unknown = [sha for _rel, sha in changed if sha not in self._sizes]
        if unknown:
            check = "".join(f"{sha}\n" for sha in unknown).encode()
            sizes = self._git("cat-file", "--batch-check=%(objectname) %(objectsize)", input_bytes=check,
                              timeout=timeout).stdout.decode().split("\n")
            for row in sizes:
                name, _, size = row.partition(" ")
                if size.isdigit():
                    self._sizes[name] = int(size)
        big: list[str] = []
        for rel, sha in changed:
            size = self._sizes.get(sha, 0)
            if size > file_limit:
                big.append(f"{rel}: {size} bytes")
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
        proc = subprocess.Popen(["git", *SAFE_CONFIG, *args], cwd=self.path,
                                env=git_env({"GIT_DIR": str(self.path)}), stdout=subprocess.PIPE,
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
        if proc.returncode == 0 and kept is not None and written <= REMEMBERED_PATCH:
            self._last_patch = (key, b"".join(kept), info)
        return info


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


def _feed(pipe, data: bytes) -> None:  # noqa: ANN001 - a binary pipe
    try:
        pipe.write(data)
    except (BrokenPipeError, ValueError):
        pass
    finally:
        try:
            pipe.close()
        except (BrokenPipeError, ValueError):
            pass


def _read_exact(stream, size: int) -> Iterator[bytes]:  # noqa: ANN001 - a binary pipe
    left = size
    while left > 0:
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
            raise GitError("the runner's store ended an object early")
        left -= len(chunk)
        yield chunk


def _unsafe(rel: str) -> bool:
    parts = rel.split("/")
    return rel.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts)


def _lstat_inside(ws: Path, rel: str) -> os.stat_result | None:
    """lstat of ``ws/rel`` if no directory on the way is a symlink (never follow one)."""
    cur = ws
    parts = rel.split("/")
    for part in parts[:-1]:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except OSError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
    try:
        return os.lstat(ws / rel)
    except OSError:
        return None


def tree_size(*roots: Path) -> int:
    """Apparent size of every regular file under ``roots`` (symlinks not followed)."""
    total = 0
    stack = [r for r in roots if os.path.isdir(r) and not os.path.islink(r)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total
