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
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from runner.git import SAFE_CONFIG, GitError, git, git_env, git_out

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

    Trials never read the source repository: their workspaces are fetched from here, so
    nothing a trial does can reach (or change) the operator's repository.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listings: dict[str, tuple[tuple[str, str, str], ...]] = {}
        """Tree sha → its ``ls-tree -r`` rows, shared by the run's trials. A tree is named
        by the hash of its content, so its listing never changes: every trial of a case
        lists the same initial and prepared trees, and each is listed once per run."""
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
        return git_out(self.path, "rev-parse", f"{commit}^{{tree}}")


@dataclass
class _Stat:
    key: tuple[int, ...]
    mode: str
    sha: str


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    # ctime cannot be set by an unprivileged process, so a file whose content changed
    # cannot keep all of these; a match means the cached blob is still the content.
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


@dataclass
class TrialGit:
    """A trial's private git directory (objects borrowed from the run store)."""

    path: Path
    store: RunStore
    _stats: dict[str, _Stat] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (self.path / "HEAD").exists():
            self.path.mkdir(parents=True, exist_ok=True)
            git(self.path, "init", "-q", "--bare")
            alt = self.path / "objects" / "info" / "alternates"
            alt.write_text(str((self.store.path / "objects").resolve()) + "\n")

    def _git(self, *args: str, input_bytes: bytes | None = None, index: Path | None = None,
             work_tree: Path | None = None, timeout: float | None = None,
             stdout: int | None = None) -> subprocess.CompletedProcess[bytes]:
        env = {"GIT_DIR": str(self.path)}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        return git(self.path, *args, env=env, input_bytes=input_bytes, timeout=timeout,
                   stdout=stdout)

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
        """
        if os.path.islink(ws) or not ws.is_dir():
            raise GitError(f"the workspace {ws} is no longer a directory")
        tmp = self.path / "capture"
        tmp.mkdir(exist_ok=True)
        index = tmp / "index"
        index.unlink(missing_ok=True)
        excl = tmp / "exclude"
        excl.write_text("\n".join(excludes) + "\n")
        listing = ["ls-files", "-z", "--others", "--exclude-standard", f"--exclude-from={excl}"]
        if ignored_only:
            listing.insert(3, "--ignored")
            tracked: list[str] = []
        else:
            tracked = [(rel, mode, sha) for mode, sha, rel in self.entries(base_tree)]
        self._git("read-tree", EMPTY_TREE if ignored_only else base_tree, index=index,
                  timeout=timeout)
        out = self._git(*listing, index=index, work_tree=ws, timeout=timeout).stdout
        others = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
        entries: list[tuple[str, str, str]] = []
        to_hash: list[tuple[str, str, Path, os.stat_result | None]] = []
        skipped: list[str] = []
        total = 0
        gitlinks = {rel: sha for rel, mode, sha in tracked if mode == "160000"}
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
                target = os.readlink(ws / rel)
                link = tmp / f"link-{len(to_hash)}"
                link.write_bytes(os.fsencode(target))
                to_hash.append((rel, "120000", link, None))
            elif stat.S_ISREG(st.st_mode):
                mode = "100755" if st.st_mode & 0o111 else "100644"
                total += st.st_size
                cached = self._stats.get(rel)
                if cached is not None and cached.key == _stat_key(st) and cached.mode == mode:
                    entries.append((mode, cached.sha, rel))
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
        index.unlink(missing_ok=True)
        if entries:
            info = b"".join(f"{m} {s}\t".encode() + r.encode("utf-8", "surrogateescape") + b"\0"
                            for m, s, r in entries)
            self._git("update-index", "--add", "-z", "--index-info", input_bytes=info, index=index,
                      timeout=timeout)
            tree = self._git("write-tree", index=index, timeout=timeout).stdout.decode().strip()
        else:
            tree = EMPTY_TREE
        index.unlink(missing_ok=True)
        return Capture(tree, len(entries), total, tuple(skipped))

    def cached(self, rel: str, path: Path) -> str | None:
        """The blob of ``rel`` if its file is unchanged since the runner last hashed it."""
        entry = self._stats.get(rel)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return entry.sha if entry is not None and entry.key == _stat_key(st) else None

    def _hash_one(self, path: Path, timeout: float | None) -> str:
        return self._git("hash-object", "-w", "--no-filters", "--stdin", input_bytes=path.read_bytes(),
                         timeout=timeout).stdout.decode().strip()

    # -- trees -----------------------------------------------------------------
    def entries(self, tree: str) -> tuple[tuple[str, str, str], ...]:
        """(mode, sha, path) of every blob, symlink and gitlink under ``tree``."""
        listings = self.store.listings
        known = listings.get(tree)
        if known is None:
            known = listings[tree] = self._list(tree)
            while len(listings) > LISTINGS_KEPT:  # bounded: a run's memory stays flat
                listings.pop(next(iter(listings)), None)
        return known

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
        """The paths that differ between two trees (sorted, as git names them)."""
        out = self._git("diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new).stdout
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def commit(self, tree: str, parent: str | None, message: str) -> str:
        args = ["commit-tree", tree, "-m", message]
        if parent:
            args += ["-p", parent]
        return self._git(*args).stdout.decode().strip()

    def materialise(self, tree: str, dest: Path, *, overlay: str | None = None,
                    timeout: float | None = None) -> int:
        """Write ``tree``'s files into the empty directory ``dest`` from raw blobs.

        ``overlay`` (a tree of ignored files) is written first, then ``tree`` on top, so a
        path in both takes ``tree``'s content. Returns the number of entries written.
        """
        dest.mkdir(parents=True, exist_ok=True)
        plan: dict[str, tuple[str, str]] = {}
        for t in ([overlay] if overlay else []) + [tree]:
            for mode, sha, rel in self.entries(t):
                if _unsafe(rel):
                    continue
                plan[rel] = (mode, sha)
        blobs = [(rel, mode, sha) for rel, (mode, sha) in plan.items() if mode != "160000"]
        for rel, (mode, _sha) in plan.items():
            if mode == "160000":
                (dest / rel).mkdir(parents=True, exist_ok=True)
        if not blobs:
            return len(plan)
        proc = subprocess.Popen(
            ["git", "cat-file", "--batch"], cwd=self.path, env=git_env({"GIT_DIR": str(self.path)}),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None and proc.stdout is not None
        request = "".join(f"{sha}\n" for _r, _m, sha in blobs).encode()
        feeder = threading.Thread(target=_feed, args=(proc.stdin, request), daemon=True)
        feeder.start()
        try:
            for rel, mode, _sha in blobs:
                header = proc.stdout.readline().split()
                if len(header) != 3 or header[1] != b"blob":
                    raise GitError(f"object for {rel} missing from the runner's store")
                size = int(header[2])
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                if mode == "120000":
                    os.symlink(proc.stdout.read(size), target)
                else:
                    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                                 0o755 if mode == "100755" else 0o644)
                    with os.fdopen(fd, "wb") as fh:
                        for chunk in _read_exact(proc.stdout, size):
                            fh.write(chunk)
                proc.stdout.read(1)  # the newline after each object
        finally:
            proc.stdout.close()
            proc.wait(timeout=timeout)
            feeder.join(timeout=5)
        return len(plan)

    def diff_to_file(self, old: str, new: str, dest: Path, *, timeout: float | None = None,
                     file_limit: int = PATCH_FILE_LIMIT, limit: int = PATCH_LIMIT) -> PatchInfo:
        """Write ``git diff --binary old new`` to ``dest``, bounded.

        Files over ``file_limit`` are listed in a leading note instead of being included
        (the note sits before the first ``diff --git`` line, which ``git apply`` skips, so a
        complete patch stays applicable); the whole patch is cut at ``limit`` bytes.
        """
        raw = self._git("diff-tree", "-r", "-z", "--no-renames", old, new, timeout=timeout).stdout
        big: list[str] = []
        fields = raw.split(b"\0")
        changed: list[tuple[str, str]] = []
        for i in range(0, len(fields) - 1, 2):
            meta = fields[i].decode()
            if not meta.startswith(":"):
                continue
            parts = meta[1:].split(" ")
            changed.append((parts[3], fields[i + 1].decode("utf-8", "surrogateescape")))
        if changed:
            check = "".join(f"{sha}\n" for sha, _p in changed if set(sha) != {"0"}).encode()
            sizes = self._git("cat-file", "--batch-check=%(objectsize)", input_bytes=check,
                              timeout=timeout).stdout.split()
            it = iter(sizes)
            for sha, path in changed:
                if set(sha) == {"0"}:
                    continue
                size = int(next(it))
                if size > file_limit:
                    big.append(f"{path}: {size} bytes")
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
                fh.write(chunk[:room])
                written += min(room, len(chunk))
                truncated = truncated or len(chunk) > room
            if truncated:
                msg = f"\n# trialhouse: patch cut at {limit} bytes; it is incomplete\n".encode()
                fh.write(msg)
                written += len(msg)
        proc.stdout.close()
        proc.wait(timeout=timeout)
        return PatchInfo(written, truncated, tuple(big))


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
