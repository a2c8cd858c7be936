"""The paths in a ``command`` agent's argv, resolved the way the runner will run them.

A command agent runs with cwd = the trial's workspace (the repository at the case's
initial commit), the allow-listed PATH (the interpreter running trialhouse first) and,
isolated, the sandbox's PATH (docs/runner.md, "Agents"). A script named relative to the
manifest therefore does not exist where it runs: every trial would end ``target_failed``
with no warning. ``trialhouse validate`` refuses such a path up front, naming the argv
element, and says where the file is when it sits next to the manifest.

Which elements are paths: the program (``argv[0]``) always; any other element that
starts with ``/``, ``./``, ``../`` or ``~/`` or ends with a script suffix, and holds no
placeholder, whitespace or ``=``. Absolute arguments without a script suffix may be
output files the agent creates, and are not checked.
"""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from runner.git import git
from runner.manifest import Manifest
from runner.procs import ordinary_env
from runner.sandbox import sandbox_path

SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl")
"""An argv element ending with one of these names a file the agent needs."""


def _path_like(arg: str) -> bool:
    if not arg or "{" in arg or arg.startswith("-") or "=" in arg or any(c.isspace() for c in arg):
        return False
    return arg.startswith(("/", "./", "../", "~/")) or arg.endswith(SCRIPT_SUFFIXES)


def _in_tree(repo: Path, commit: str, rel: str) -> tuple[bool, bool]:
    """(exists, executable) of ``rel`` in ``commit``'s tree (what the workspace holds)."""
    done = git(repo, "ls-tree", "-z", "--full-tree", commit, "--", rel, check=False)
    row = done.stdout.split(b"\0")[0] if done.returncode == 0 else b""
    if not row:
        return False, False
    mode = row.split(b" ", 1)[0]
    return True, mode in (b"100755", b"120000")


def _workspace_problem(rel: str, sources: list[tuple[str, Path, str]], base: Path,
                       program: bool, prepared: bool) -> str | None:
    """Why the workspace-relative ``rel`` will not be there (None when every case has it)."""
    norm = PurePosixPath(rel)
    if ".." in norm.parts or rel.startswith("~"):
        where = "the trial's workspace (its repository)" if ".." in norm.parts else "a private HOME"
        return (f"{rel}: resolves outside the workspace ({where}) when the agent runs; "
                "give an absolute path")
    for case_id, repo, commit in sources:
        exists, executable = _in_tree(repo, commit, str(norm))
        if exists and (executable or not program):
            continue
        if exists:
            return f"{rel}: not executable in case {case_id}'s repository at {commit[:12]}"
        if prepared:
            return None  # prepare_commands may create it: not knowable before a run
        hint = base / rel
        found = f"; it exists at {hint.resolve()}: give that absolute path" if _lookup_problem(hint) is None else ""
        return (f"{rel}: does not exist in the workspace, where the agent runs (case {case_id}'s "
                f"repository at {commit[:12]}){found}")
    return None


def _program_problem(program: str, isolated: bool) -> str | None:
    """Why ``program`` (no ``/``) is not found on the PATH the agent gets."""
    env_path = ordinary_env()["PATH"]
    search = sandbox_path(env_path) if isolated else env_path
    if shutil.which(program, path=search) is None:
        return f"{program}: program not found on the agent's PATH ({search})"
    return None


def command_path_problems(manifest: Manifest, base: Path, sources: list[tuple[str, Path, str]],
                          agents_here: bool = True) -> list[tuple[str, str]]:
    """(location, message) of every argv path of a ``command`` variant that will not resolve
    where the agent runs. ``sources``: (case id, repository, initial commit) of every case.
    ``agents_here=False`` (a Ray cluster): an absolute path names a worker's file system, not
    this one's, so it is not checked here; a missing one is the trial's ``infra_error``."""
    problems: list[tuple[str, str]] = []
    isolated = manifest.isolation.backend == "bubblewrap"
    prepared = bool(manifest.prepare_commands)
    for i, v in enumerate(manifest.variants):
        if v.agent.kind != "command" or not v.agent.argv:
            continue
        for j, arg in enumerate(v.agent.argv):
            program = j == 0
            if not program and not _path_like(arg):
                continue
            if program and "{" in arg:
                continue
            if arg.startswith("/"):
                checked = agents_here and (program or arg.endswith(SCRIPT_SUFFIXES))  # else maybe a file it writes
                why = _absent(arg) if checked else None
            elif program and "/" not in arg:
                why = _program_problem(arg, isolated)
            else:
                why = _workspace_problem(arg, sources, base, program, prepared)
            if why:
                problems.append((f"variants[{i}].agent.argv[{j}]", why))
    return problems


def _absent(arg: str) -> str | None:
    """Why the absolute path ``arg`` will not run here (None: it exists)."""
    why = _lookup_problem(Path(arg))
    return None if why is None else f"{arg}: {why}"


def _lookup_problem(path: Path) -> str | None:
    """None when ``path`` exists; else why not. ``Path.exists`` raises for a directory on the way
    this user may not search and for a name the system refuses (too long): both are answers."""
    try:
        return None if path.exists() else "does not exist on this machine"
    except PermissionError:  # below a directory this user may not search (another user's home)
        return "this user cannot reach it (permission denied on the way); give a path the runner's user can read"
    except OSError as e:
        return f"cannot be looked up here ({(e.strerror or type(e).__name__).lower()})"
