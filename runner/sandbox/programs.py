"""Which program a request starts, and what must be visible inside for it to start.

Checked before starting, because inside bubblewrap a missing program is only a message on
stderr, which the agent could print itself. An agent CLI installed outside the system
directories is made visible by the automatic rule of :func:`program_mounts`, which never
exposes a protected path (docs/security.md, "Agent CLIs").
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox.bubblewrap import outermost, visible
from runner.sandbox.request import Backend, Request, sandbox_path


def resolve_program(argv0: str, req: Request, backend: Backend) -> str | None:
    """Why ``argv0`` cannot start in this sandbox (None when it can).

    Checked before starting, because inside bubblewrap a missing program is only a
    message on stderr, which the agent could print itself.
    """
    env_path = req.env.get("PATH", "")
    search = sandbox_path(env_path) if backend.isolated else env_path
    # A relative path is started from the request's cwd (the workspace), as exec will.
    found = (os.path.join(req.cwd, argv0) if "/" in argv0 else shutil.which(argv0, path=search))
    if found is None or not os.path.exists(found):
        return f"program not found: {argv0}"
    if not os.access(found, os.X_OK) or os.path.isdir(found):
        return f"not an executable program: {found}"
    if backend.isolated and not visible(found, req):
        return (f"{found} is not visible inside the sandbox: add its install directory to "
                "isolation.read_only_paths in the manifest")
    interp = shebang(found)
    if backend.isolated and interp and interp.startswith("/") and not visible(interp, req):
        return (f"{found} runs {interp}, which is not visible inside the sandbox: add it to "
                "isolation.read_only_paths in the manifest")
    return None


def canonical_dir(path: str) -> str:
    """``path`` with its directory resolved (symlinked directories followed), its last
    component kept: what the sandbox can show at the same path by mounting real directories."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _hops(path: str) -> list[str]:
    """``path`` and every symlink on the way to its real file (canonical directories)."""
    out: list[str] = []
    cur = canonical_dir(path)
    for _ in range(40):
        out.append(cur)
        if not os.path.islink(cur):
            break
        cur = canonical_dir(os.path.join(os.path.dirname(cur), os.readlink(cur)))
    real = os.path.realpath(path)
    if real not in out:
        out.append(real)
    return out


def _too_broad(path: Path, protected: tuple[Path, ...]) -> bool:
    """A directory an automatic mount must never be: the root or a top-level directory,
    the user's home or one of its ancestors, or anything holding a protected path (the
    manifest directory with its graders and reference patches, the run directory, the
    source repositories)."""
    if len(path.parts) <= 2:
        return True
    home = Path(os.path.expanduser("~")).resolve()
    if path == home or path in home.parents:
        return True
    return any(q == path or path in q.parents for q in protected)


def install_root(real: Path, protected: tuple[Path, ...] = ()) -> Path:
    """The directory a program's installation lives in (what it needs besides itself).

    In order: inside a ``node_modules`` tree, the directory holding that tree (npm
    ``--prefix`` installs keep the package and its dependencies there), else the
    ``node_modules`` directory itself; inside a Python virtualenv (a ``pyvenv.cfg`` up to
    three levels above), the virtualenv; ``<prefix>/bin/<program>``, the prefix; else the
    program's own directory. A candidate that is too broad (``_too_broad``) gives way to
    the next, narrower one; the program's own directory is the last resort.
    """
    parts = real.parts
    candidates: list[Path] = []
    if "node_modules" in parts:
        i = parts.index("node_modules")
        candidates += [Path(*parts[:i]), Path(*parts[: i + 1])]
    candidates += [a for a in list(real.parents)[:3] if (a / "pyvenv.cfg").is_file()]
    if real.parent.name in ("bin", "sbin", "libexec"):
        candidates.append(real.parent.parent)
    for candidate in candidates:
        if not _too_broad(candidate, protected):
            return candidate
    return real.parent


@dataclass(frozen=True)
class ProgramMounts:
    """Where a program resolved to and the host paths it needs visible inside a sandbox."""

    path: str | None
    mounts: tuple[Path, ...] = ()
    problem: str | None = None


def program_mounts(program: str, path_env: str, protected: tuple[Path, ...] = ()) -> ProgramMounts:
    """The automatic visibility rule for an agent CLI installed outside the system directories.

    ``program`` is resolved on ``path_env`` (or taken as a path). Made visible read-only:
    the directory of every symlink on the way to the real file (so ``tools/bin/claude`` →
    ``…/node_modules/.bin/claude`` → ``…/claude.exe`` resolves inside), the installation
    the real file belongs to (:func:`install_root`), and the same for the interpreter its
    ``#!`` line names (``#!/usr/bin/env node`` resolves ``node`` on the PATH). Paths under
    the system directories are visible anyway and left out. A mount that would expose a
    protected path is refused with the reason. docs/security.md ("Agent CLIs").
    """
    found = program if "/" in program else shutil.which(program, path=path_env)
    if found is None or not os.path.isfile(found):
        return ProgramMounts(None, (), f"program not found: {program}")
    found = canonical_dir(found)  # started by this path: its directories are real ones
    keep = outermost(list(dict.fromkeys(_needed(found, path_env, protected))))  # system dirs are visible anyway
    for m in keep:
        if any(q == m or m in q.parents for q in protected):
            return ProgramMounts(found, tuple(keep), f"{found}: its installation {m} holds {next(q for q in protected if q == m or m in q.parents)}, "
                                 "which agents must not see; install the CLI elsewhere (e.g. `make tools`)")
    return ProgramMounts(found, tuple(keep), None)


def _needed(found: str, path_env: str, protected: tuple[Path, ...]) -> list[Path]:
    """The directories ``found`` and the interpreters its ``#!`` lines name need, in order."""
    mounts: list[Path] = []
    todo, done = [found], set()
    while todo:
        current = todo.pop()
        if current in done:
            continue
        done.add(current)
        hops = _hops(current)
        for hop in hops[:-1]:
            mounts.append(Path(hop).parent)
        real = Path(hops[-1])
        mounts.append(install_root(real, protected))
        interp = shebang(str(real))
        if interp == "/usr/bin/env" or (interp and os.path.basename(interp) == "env"):
            words = _shebang_words(str(real))[1:]
            name = next((w for w in words if not w.startswith("-")), None)
            interp = shutil.which(name, path=path_env) if name else None
        if interp and os.path.isfile(interp):
            todo.append(interp)
    return mounts


def _shebang_words(program: str) -> list[str]:
    try:
        with open(program, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return [os.fsdecode(w) for w in head[2:].split(b"\n", 1)[0].split()]


def shebang(program: str) -> str | None:
    """The interpreter named by a script's ``#!`` line (None for binaries)."""
    try:
        with open(program, "rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    parts = head[2:].split(b"\n", 1)[0].split()
    return os.fsdecode(parts[0]) if parts else None
