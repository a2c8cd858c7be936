"""The isolation seam: every agent invocation and every grader runs through a backend.

A backend turns "run this argv with this environment, seeing only these paths" into
the argv/env handed to ``subprocess``. Two backends exist:

* ``bubblewrap`` (the default): a new mount namespace built from nothing but the paths
  listed (system directories and declared tool installs read-only, the workspace and
  the invocation's private HOME/TMP/output directories read-write), new PID, IPC, UTS,
  cgroup and user namespaces with every capability dropped, the root remounted
  read-only, and ``--die-with-parent``: when the invocation ends (or the runner dies)
  every process it started dies with it, ``setsid`` daemons included. Nothing of the
  runner is visible: not its environment, its interpreter's virtualenv, the input
  snapshot, other trials, the run directory or the source repository.
* ``none``: a plain subprocess in its own session (the process group is killed at the
  end). It hides nothing; runs that use it are recorded and reported as not isolated.

Both share one request shape, so the trial and grading code never branch on the
backend. docs/security.md states what each backend hides and what it does not.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import RunnerError
from runner.procs import ProcResult, run_bounded

BACKENDS = ("bubblewrap", "none")

SYSTEM_READ_ONLY = ("/usr", "/etc", "/opt/bin")
"""System directories every sandbox sees read-only (those that exist)."""

SYSTEM_LINK_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Top-level directories that are either symlinks into /usr (merged /usr) or real."""

MASKED = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd",
)
"""Files under /etc that hold host credentials: replaced by empty ones in the sandbox."""

SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"


class SandboxUnavailable(RunnerError):
    """The configured backend cannot run here (bwrap missing or not permitted)."""


@dataclass
class Request:
    """One sandboxed invocation: what runs, where, and which host paths it may see."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    read_only: list[Path] = field(default_factory=list)
    """Host paths visible read-only, at the same path."""
    read_write: list[Path] = field(default_factory=list)
    """Host paths visible read-write, at the same path (workspace, HOME, TMP, output)."""
    tmp: Path | None = None
    """Host directory mounted at /tmp (private to this trial); a fresh tmpfs when None."""
    network: bool = True


class Backend:
    """Base class: ``command`` wraps a request; ``isolated`` says whether it hides anything."""

    name = "none"
    isolated = False
    version: str | None = None

    def command(self, req: Request) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def describe(self) -> dict[str, object]:
        return {"backend": self.name, "isolated": self.isolated, "version": self.version}


class NoIsolation(Backend):
    """Runs the argv as is (own session, group-killed by ``procs.run_bounded``)."""

    name = "none"
    isolated = False

    def command(self, req: Request) -> tuple[list[str], dict[str, str]]:
        env = dict(req.env)
        if req.tmp is not None:
            env["TMPDIR"] = str(req.tmp)
        return list(req.argv), env


def _outermost(paths: list[Path]) -> list[Path]:
    """Drop paths already visible through a listed ancestor (or a system directory)."""
    system = [os.path.realpath(d) for d in (*SYSTEM_READ_ONLY, *SYSTEM_LINK_DIRS) if os.path.isdir(d)]
    keep: list[Path] = []
    for p in sorted(paths, key=lambda q: len(str(q))):
        text = str(p)
        covered = [*system, *(str(k) for k in keep)]
        if any(text == c or text.startswith(c.rstrip("/") + "/") for c in covered):
            continue
        keep.append(p)
    return keep


def _existing(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        key = os.path.abspath(p)
        if key not in seen and os.path.lexists(key):
            seen.add(key)
            out.append(Path(key))
    return out


class Bubblewrap(Backend):
    """bubblewrap (``bwrap``) namespaces; see the module docstring for what it hides."""

    name = "bubblewrap"
    isolated = True

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.version = _bwrap_version(executable)

    def command(self, req: Request) -> tuple[list[str], dict[str, str]]:
        args = [
            self.executable,
            "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--cap-drop", "ALL",
            "--die-with-parent", "--new-session",
        ]
        if not req.network:
            args.append("--unshare-net")
        for d in SYSTEM_LINK_DIRS:
            if os.path.islink(d):
                args += ["--symlink", os.readlink(d), d]
            elif os.path.isdir(d):
                args += ["--ro-bind", d, d]
        for d in SYSTEM_READ_ONLY:
            if os.path.isdir(d):
                args += ["--ro-bind", d, d]
        for m in MASKED:
            if os.path.isdir(m):
                args += ["--tmpfs", m]
            elif os.path.exists(m):
                args += ["--ro-bind", "/dev/null", m]
        args += ["--proc", "/proc", "--dev", "/dev"]
        if req.tmp is None:
            args += ["--tmpfs", "/tmp"]
        else:
            args += ["--bind", str(req.tmp), "/tmp"]
        for p in _outermost(_existing([*interpreter_paths(), *req.read_only])):
            args += ["--ro-bind", str(p), str(p)]
        for p in _existing(req.read_write):
            args += ["--bind", str(p), str(p)]
        args += ["--remount-ro", "/", "--chdir", str(req.cwd), "--clearenv"]
        env = dict(req.env)
        env["TMPDIR"] = "/tmp"
        env["PATH"] = _sandbox_path(env.get("PATH", ""))
        for key, value in sorted(env.items()):
            args += ["--setenv", key, value]
        # bwrap's own environment is what PID 1 of the sandbox shows in /proc/1/environ:
        # give it nothing but a PATH, so the runner's variables are nowhere inside.
        return [*args, "--", *req.argv], {"PATH": SANDBOX_PATH}


def interpreter_paths() -> list[Path]:
    """The base Python installation (read-only), so ``python3`` works inside."""
    prefix = Path(sys.base_prefix)
    return [] if str(prefix).startswith("/usr") else [prefix]


def interpreter() -> str:
    """The base interpreter (not the virtualenv) for runner-owned helpers inside a sandbox."""
    base = Path(sys.base_prefix) / "bin"
    for name in (f"python{sys.version_info.major}.{sys.version_info.minor}", "python3"):
        if (base / name).exists():
            return str(base / name)
    return os.path.realpath(sys.executable)


def _sandbox_path(path: str) -> str:
    """Keep the caller's PATH entries, then the system ones; the base interpreter first."""
    parts = [str(Path(interpreter()).parent)]
    parts += [p for p in path.split(os.pathsep) if p]
    parts += SANDBOX_PATH.split(":")
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return os.pathsep.join(seen)


def _bwrap_version(executable: str) -> str | None:
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().removeprefix("bubblewrap").strip() or None


_probed: dict[str, Backend] = {}


def backend(name: str) -> Backend:
    """The backend called ``name``, checked once per process to really work here."""
    if name in _probed:
        return _probed[name]
    if name == "none":
        chosen: Backend = NoIsolation()
    elif name == "bubblewrap":
        exe = shutil.which("bwrap")
        if exe is None:
            raise SandboxUnavailable(
                "isolation backend 'bubblewrap' needs the bwrap program, which is not installed: "
                "install it (Debian/Ubuntu: apt-get install bubblewrap; `make tools` does it), "
                "or set \"isolation\": {\"backend\": \"none\"} in the manifest to run without "
                "isolation (recorded and reported as not isolated)"
            )
        chosen = Bubblewrap(exe)
        probe = Request(argv=["true"], cwd=Path("/"), env={"PATH": SANDBOX_PATH})
        argv, env = chosen.command(probe)
        try:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30,
                                  check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxUnavailable(f"isolation backend 'bubblewrap' failed to start: {exc}") from exc
        if done.returncode != 0:
            raise SandboxUnavailable(
                "isolation backend 'bubblewrap' cannot create namespaces here "
                f"({done.stderr.strip() or f'exit {done.returncode}'}); allow user namespaces, "
                "or set \"isolation\": {\"backend\": \"none\"} in the manifest"
            )
    else:
        raise SandboxUnavailable(f"unknown isolation backend {name!r} (known: {', '.join(BACKENDS)})")
    _probed[name] = chosen
    return chosen


def visible(path: str, req: Request) -> bool:
    """Whether a host path exists inside the sandbox ``req`` describes (bubblewrap)."""
    roots = [*SYSTEM_READ_ONLY, *SYSTEM_LINK_DIRS, *(str(p) for p in interpreter_paths()),
             *(str(p) for p in req.read_only), *(str(p) for p in req.read_write)]
    roots = [os.path.abspath(r) for r in roots] + [os.path.realpath(r) for r in roots]

    def under(p: str) -> bool:
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    # The path itself must be mounted, and so must whatever its symlinks lead to.
    return under(os.path.abspath(path)) and under(os.path.realpath(path))


def resolve_program(argv0: str, req: Request, backend: Backend) -> str | None:
    """Why ``argv0`` cannot start in this sandbox (None when it can).

    Checked before starting, because inside bubblewrap a missing program is only a
    message on stderr, which the agent could print itself.
    """
    env_path = req.env.get("PATH", "")
    search = _sandbox_path(env_path) if backend.isolated else env_path
    found = argv0 if "/" in argv0 else shutil.which(argv0, path=search)
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
    keep = _outermost(list(dict.fromkeys(mounts)))  # system directories are visible anyway
    for m in keep:
        if any(q == m or m in q.parents for q in protected):
            return ProgramMounts(found, tuple(keep), f"{found}: its installation {m} holds {next(q for q in protected if q == m or m in q.parents)}, "
                                 "which agents must not see; install the CLI elsewhere (e.g. `make tools`)")
    return ProgramMounts(found, tuple(keep), None)


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


def run(backend: Backend, req: Request, *, timeout: float, stdout_path: Path | None = None,
        stderr_path: Path | None = None, limit: int | None = None,
        stdin_bytes: bytes | None = None) -> ProcResult:
    """Run ``req`` through ``backend`` with the runner's bounded-process machinery."""
    why = resolve_program(req.argv[0], req, backend) if req.argv else "empty argv"
    if why is not None:
        return ProcResult(None, None, False, True, 0.0, error=why)
    kwargs = {} if limit is None else {"limit": limit}
    if not backend.isolated:
        argv, env = backend.command(req)
        return run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                           stderr_path=stderr_path, stdin_bytes=stdin_bytes, **kwargs)
    # Inside bubblewrap a launcher reports "ready" on a pipe just before it execs the
    # program: an exit without that report is a sandbox failure (infrastructure), never
    # the program's own exit code, and nothing the program prints can fake either.
    ready_r, ready_w = os.pipe()
    try:
        launch = Request(**{**req.__dict__, "argv": [*launcher(), str(ready_w), *req.argv]})
        argv, env = backend.command(launch)
        res = run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                          stderr_path=stderr_path, stdin_bytes=stdin_bytes, pass_fds=(ready_w,),
                          **kwargs)
        os.set_blocking(ready_r, False)
        try:
            ready = os.read(ready_r, 64).startswith(b"ready")
        except BlockingIOError:
            ready = False
    finally:
        os.close(ready_r)
    if ready or res.timed_out:
        return res
    detail = _tail(stderr_path)
    return ProcResult(None, None, False, True, res.duration_s,
                      error=f"the sandbox could not start the program: {detail or f'exit {res.exit_code}'}")


BASH_LAUNCHER = 'fd=$1; shift; printf ready >&"$fd"; eval "exec $fd>&-"; exec "$@"'
"""The same in bash (2 ms instead of 13 ms of interpreter start-up per invocation)."""


def launcher() -> list[str]:
    """argv prefix of the launcher: bash where there is one, else the base interpreter."""
    bash = shutil.which("bash", path=SANDBOX_PATH)
    if bash:
        return [bash, "--norc", "--noprofile", "-c", BASH_LAUNCHER, "trialhouse-launch"]
    return [interpreter(), "-I", "-S", "-c", LAUNCHER]


LAUNCHER = (
    "import os,sys\n"
    "fd=int(sys.argv[1]); os.write(fd,b'ready\\n'); os.close(fd)\n"
    "try: os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e:\n"
    "    sys.stderr.write(f'trialhouse: cannot start {sys.argv[2]}: {e}\\n'); os._exit(127)\n"
)
"""Runs as the sandbox's first program (base interpreter, ``-I -S``)."""


def _tail(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(os.path.getsize(path) - 300, 0))
            return " ".join(fh.read().decode("utf-8", "replace").split())
    except OSError:
        return ""
