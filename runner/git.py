"""Git as the runner runs it: a configuration no repository or agent can influence.

Every git process the runner starts gets an environment built here, never the
runner's own: no system or global configuration, no hooks, no fsmonitor, no
untracked cache, no replace objects, no pager, no credential prompts. Repository-
local configuration is only ever read from repositories the runner created itself
(the run's store and each trial's private git directory); a workspace's ``.git`` is
the agent's, and the runner never runs git on it after the agent has started.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from runner.errors import RunnerError

IDENTITY = {
    "GIT_AUTHOR_NAME": "trialhouse",
    "GIT_AUTHOR_EMAIL": "trialhouse@localhost",
    "GIT_COMMITTER_NAME": "trialhouse",
    "GIT_COMMITTER_EMAIL": "trialhouse@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z",
}
"""Fixed identity and dates: a checkpoint of the same tree is the same commit."""

SAFE_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "-c", "core.autocrlf=false",
    "-c", "core.safecrlf=false",
    "-c", "core.symlinks=true",
    "-c", "core.attributesFile=/dev/null",
    "-c", "core.pager=cat",
    "-c", "commit.gpgsign=false",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "protocol.file.allow=always",
    "-c", "advice.detachedHead=false",
    "-c", "init.defaultBranch=main",
)


class GitError(RunnerError):
    """A git operation the runner needed failed (infrastructure, not the agent)."""


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a runner git process (nothing inherited but PATH)."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": "/nonexistent",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_ASKPASS": "/bin/false",
        "GIT_SSH_COMMAND": "/bin/false",
        **IDENTITY,
    }
    env.update(extra or {})
    return env


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
        input_bytes: bytes | None = None, timeout: float | None = None,
        stdout: int | None = None, stdin: Any = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git <SAFE_CONFIG> args`` in ``cwd``; raise ``GitError`` on failure when ``check``.

    ``stdin`` (an open file) is git's standard input, read by git itself: a large file is
    never held in this process (``input_bytes`` is for small inputs)."""
    feed: dict[str, Any] = {"stdin": stdin} if stdin is not None else {"input": input_bytes}
    try:
        proc = subprocess.run(
            ["git", *SAFE_CONFIG, *args], cwd=cwd, env=git_env(env),
            stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
            check=False, timeout=None if timeout is None else max(timeout, 0.01), **feed,
        )
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {' '.join(args[:2])} did not finish within the trial's time budget") from exc
    if check and proc.returncode != 0:
        raise GitError(
            f"git {' '.join(args[:2])} failed in {cwd}: {proc.stderr.decode(errors='replace').strip()}"
        )
    return proc


def git_out(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return git(cwd, *args, env=env).stdout.decode().strip()


def git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False,
                         env=git_env())
    return out.stdout.strip().removeprefix("git version ").strip()


def commit_exists(repo: Path, sha: str) -> bool:
    return git(repo, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def tree_of(repo: Path, sha: str) -> str:
    return git_out(repo, "rev-parse", f"{sha}^{{tree}}")


def is_repository(path: Path) -> bool:
    return path.is_dir() and git(path, "rev-parse", "--git-dir", check=False).returncode == 0


def patch_applies(repo: Path, commit: str, patch: Path) -> tuple[bool, str]:
    """Does ``patch`` apply cleanly to ``commit``? Uses a throwaway index only."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="trialhouse-idx-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", commit, env=env)
        proc = git(repo, "apply", "--cached", "--check", str(patch.resolve()), env=env, check=False)
    return proc.returncode == 0, proc.stderr.decode(errors="replace").strip()
