"""How the ``bubblewrap`` backend builds its argv, and what a sandbox built that way can see.

A new mount namespace built from nothing but the paths listed (system directories and
declared tool installs read-only, the workspace and the invocation's private HOME/TMP/output
directories read-write), new PID, IPC, UTS, cgroup and user namespaces with every capability
dropped, the root remounted read-only, and the runner's PID 1 (``runner.sandbox.init``): when
the invocation ends (or the runner dies) every process it started dies with it, ``setsid``
daemons included (docs/security.md).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.sandbox import limits
from runner.sandbox.forwarder import LINK_MOUNT
from runner.sandbox.request import SANDBOX_PATH, Backend, Request, interpreter_paths, sandbox_path

SYSTEM_READ_ONLY = ("/usr", "/etc", "/opt/bin")
"""System directories every sandbox sees read-only (those that exist)."""

SYSTEM_LINK_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Top-level directories that are either symlinks into /usr (merged /usr) or real."""

MASKED = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
    "/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd",
)
"""Files under /etc that hold host credentials: replaced by empty ones in the sandbox."""


@dataclass(frozen=True)
class Session:
    """What one invocation adds to its request (``runner.sandbox.launch``)."""

    ids: tuple[int, int] | None = None
    """The sandbox's own uid and gid when the runner is root (``runner.sandbox.ids``)."""
    seccomp_fd: int | None = None
    tmpfs_bytes: int = 256 * 2**20
    init: tuple[str, ...] = ()
    """PID 1's argv up to the program (``runner.sandbox.init``); none: the program is PID 1."""
    wrap: tuple[str, ...] = ()
    """What the program runs under (``nice``), after it became the sandbox's id."""


class Bubblewrap(Backend):
    """bubblewrap (``bwrap``) namespaces; see the module docstring for what it hides."""

    name = "bubblewrap"
    isolated = True

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.version = bwrap_version(executable)

    def describe(self) -> dict[str, Any]:
        lim, (mech, note) = self.limits, limits.choice()
        root = os.geteuid() == 0
        return {
            "version": self.version, "sandbox_user": "own-id" if root else "runner",
            "sandbox_ids": list(self.id_range) if root else None, "seccomp": True,
            "limits": {"mechanism": mech, "why_no_cgroup": note, "processes": lim.processes, "memory_mb": lim.memory_bytes // 2**20,
                       "cpus": lim.cpus, "tmpfs_mb": lim.tmpfs_bytes // 2**20,
                       "workspace_mb": (lim.write_bytes or 0) / 2**20, "workspace_files": lim.write_entries or 0},
        }

    def command(self, req: Request, session: Session | None = None) -> tuple[list[str], dict[str, str]]:
        s = session or Session()
        args = [self.executable, *_namespaces(req, s), "--as-pid-1", "--new-session"]
        args += _system_mounts()
        args += _kernel_mounts(req, s.tmpfs_bytes)
        args += network_mounts(req)
        for p in outermost(_existing([*interpreter_paths(), *req.read_only])):
            args += [*_parent(p), "--ro-bind", str(p), str(p)]
        for p in _existing(req.read_write):
            args += [*_parent(p), "--bind", str(p), str(p)]
        args += ["--remount-ro", "/", "--chdir", str(req.cwd), "--clearenv"]
        env = dict(req.env)
        env["TMPDIR"] = "/tmp"
        env["PATH"] = sandbox_path(env.get("PATH", ""))
        for key, value in sorted(env.items()):
            args += ["--setenv", key, value]
        if s.seccomp_fd is not None:
            args += ["--seccomp", str(s.seccomp_fd)]
        program = [*s.wrap, *req.argv]
        if s.ids is not None:  # root: the program becomes the sandbox's own id before it starts
            uid, gid = s.ids
            program = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
                       "--bounding-set=-all", "--no-new-privs", "--", *program]
        program = [*s.init, *program]
        # bwrap's own environment is what PID 1 of the sandbox shows in /proc/1/environ:
        # give it nothing but a PATH, so the runner's variables are nowhere inside.
        return [*args, "--", *program], {"PATH": SANDBOX_PATH}


def _namespaces(req: Request, s: Session) -> list[str]:
    """New PID, IPC, UTS, cgroup (and network) namespaces; every capability dropped. A
    runner that is not root also needs a user namespace (which maps its own unprivileged
    id), and then nested ones are disabled. A root runner's PID 1 keeps the three
    capabilities that let its child become the sandbox's own id (``setpriv`` drops them
    all in that child), and stays the runner's id: out of the program's reach."""
    args = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]
    if s.ids is None:
        args[:0] = ["--unshare-user", "--disable-userns"]
    else:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    if not req.network:
        args.append("--unshare-net")
    return args


def _kernel_mounts(req: Request, tmpfs_bytes: int) -> list[str]:
    """``/proc`` with ``/proc/sys`` read-only (no ``/sys`` at all), a ``/dev`` that is
    read-only but for its size-capped ``/dev/shm``, and ``/tmp``: the request's directory
    or a size-capped tmpfs."""
    size = str(tmpfs_bytes)
    args = ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    if req.shm is None:
        args += ["--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"]
    else:
        args += ["--bind", str(req.shm), "/dev/shm"]
    args += ["--remount-ro", "/dev"]
    if req.tmp is None:  # a grader's own cap (``tmp_bytes``) where it has one
        args += ["--perms", "1777", "--size", str(req.tmp_bytes or tmpfs_bytes), "--tmpfs", "/tmp"]
    else:
        args += ["--bind", str(req.tmp), "/tmp"]
    return args


def _parent(p: Path) -> list[str]:
    """Create the directories above a mount point readable by all (bubblewrap 0.8 makes
    them 0700, which only the sandbox's own id could pass, not an id of its own)."""
    parent = str(p.parent)
    return [] if parent == "/" else ["--dir", parent]


def network_mounts(req: Request) -> list[str]:
    """A gateway route's socket directory, read-only at ``LINK_MOUNT`` (own network only):
    connecting to a socket needs no write access, and nothing else of the host's is there."""
    if req.network or req.link is None:
        return []
    return [*_parent(Path(LINK_MOUNT)), "--ro-bind", str(req.link), LINK_MOUNT]


def _system_mounts() -> list[str]:
    """The system directories (read-only, or their merged-/usr symlinks) and the masked files."""
    args: list[str] = []
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
    return args


def outermost(paths: list[Path]) -> list[Path]:
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


def visible(path: str, req: Request) -> bool:
    """Whether a host path exists inside the sandbox ``req`` describes (bubblewrap)."""
    roots = [*SYSTEM_READ_ONLY, *SYSTEM_LINK_DIRS, *(str(p) for p in interpreter_paths()),
             *(str(p) for p in req.read_only), *(str(p) for p in req.read_write)]
    roots = [os.path.abspath(r) for r in roots] + [os.path.realpath(r) for r in roots]

    def under(p: str) -> bool:
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    # The path itself must be mounted, and so must whatever its symlinks lead to.
    return under(os.path.abspath(path)) and under(os.path.realpath(path))


def bwrap_version(executable: str) -> str | None:
    """The version ``bwrap --version`` prints (recorded with the run), or None."""
    try:
        out = subprocess.run([executable, "--version"], capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip().removeprefix("bubblewrap").strip() or None
