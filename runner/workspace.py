"""A fresh repository per trial at the pinned commit; checkpoints; ``changes.patch``.

The trial repository is created with ``git init`` + a depth-1 fetch of exactly the
initial commit, so it holds that commit only and has no remote: the agent cannot
see later history, and the source repository is only ever read.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from runner.errors import RunnerError

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "trialhouse",
    "GIT_AUTHOR_EMAIL": "trialhouse@localhost",
    "GIT_COMMITTER_NAME": "trialhouse",
    "GIT_COMMITTER_EMAIL": "trialhouse@localhost",
}


class WorkspaceError(RunnerError):
    """A git operation on a trial workspace failed (infrastructure, not the agent)."""


def git(repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
        input_bytes: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    full_env = {**os.environ, **GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0", **(env or {})}
    proc = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", *args],
        cwd=repo, env=full_env, capture_output=True, input=input_bytes, check=False,
    )
    if check and proc.returncode != 0:
        raise WorkspaceError(
            f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.decode(errors='replace').strip()}"
        )
    return proc


def git_out(repo: Path, *args: str) -> str:
    return git(repo, *args).stdout.decode().strip()


def git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().removeprefix("git version ").strip()


def commit_exists(repo: Path, sha: str) -> bool:
    return git(repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def tree_of(repo: Path, sha: str) -> str:
    return git_out(repo, "rev-parse", f"{sha}^{{tree}}")


def create_workspace(source: Path, commit: str, dest: Path) -> None:
    """Make ``dest`` a new repository holding only ``commit`` (detached), no remote."""
    dest.mkdir(parents=True, exist_ok=False)
    git(dest, "init", "-q")
    git(dest, "-c", "protocol.version=2", "fetch", "-q", "--no-tags", "--depth", "1",
        str(source.resolve()), commit)
    git(dest, "checkout", "-q", "--detach", commit)
    git(dest, "update-ref", "-d", "FETCH_HEAD", check=False)
    (dest / ".git" / "FETCH_HEAD").unlink(missing_ok=True)


def is_intact(ws: Path) -> bool:
    """The workspace still exists and is a git repository."""
    return (ws / ".git").is_dir() and git(ws, "rev-parse", "HEAD", check=False).returncode == 0


def apply_patch(ws: Path, patch: Path) -> tuple[bool, str]:
    """Apply a patch file to the working tree; (ok, git's message)."""
    proc = git(ws, "apply", "--whitespace=nowarn", str(patch.resolve()), check=False)
    return proc.returncode == 0, proc.stderr.decode(errors="replace").strip()


def patch_applies(repo: Path, commit: str, patch: Path) -> tuple[bool, str]:
    """Does ``patch`` apply cleanly to ``commit``? Uses a throwaway index only."""
    with tempfile.TemporaryDirectory(prefix="trialhouse-idx-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", commit, env=env)
        proc = git(repo, "apply", "--cached", "--check", str(patch.resolve()), env=env, check=False)
    return proc.returncode == 0, proc.stderr.decode(errors="replace").strip()


def _snapshot_tree(ws: Path) -> str:
    """Tree of the working state (tracked + untracked, minus .gitignored) via a temp index."""
    with tempfile.TemporaryDirectory(prefix="trialhouse-idx-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(ws, "read-tree", "HEAD", env=env)
        git(ws, "add", "-A", ".", env=env)
        return git(ws, "write-tree", env=env).stdout.decode().strip()


@dataclass(frozen=True)
class CheckpointInfo:
    sha: str
    files_changed: int


def checkpoint(ws: Path, message: str) -> CheckpointInfo:
    """Commit all work (new files included, .gitignored excluded) and return the SHA."""
    git(ws, "add", "-A", ".")
    names = git_out(ws, "diff", "--cached", "--name-only")
    changed = len([n for n in names.splitlines() if n])
    git(ws, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return CheckpointInfo(git_out(ws, "rev-parse", "HEAD"), changed)


def changes_patch(ws: Path, initial: str) -> str:
    """Diff from the initial commit to the current state, untracked files included."""
    tree = _snapshot_tree(ws)
    return git(ws, "diff", "--binary", "--no-color", "--no-ext-diff", initial, tree).stdout.decode(
        errors="replace"
    )


