"""How the ``bubblewrap`` backend builds its argv, and what a sandbox built that way can see.

A new mount namespace built from nothing but the paths listed (system directories and
declared tool installs read-only, the workspace and the invocation's private HOME/TMP/output
directories read-write), new PID, IPC, UTS, cgroup and user namespaces with every capability
dropped, the root remounted read-only, and ``--die-with-parent``: when the invocation ends (or
the runner dies) every process it started dies with it, ``setsid`` daemons included
(docs/security.md).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

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


class Bubblewrap(Backend):
    """bubblewrap (``bwrap``) namespaces; see the module docstring for what it hides."""

    name = "bubblewrap"
    isolated = True

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.version = bwrap_version(executable)

    def command(self, req: Request) -> tuple[list[str], dict[str, str]]:
        args = [
            self.executable,
            "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--cap-drop", "ALL",
            "--die-with-parent", "--new-session",
        ]
        if not req.network:
            args.append("--unshare-net")
        args += _system_mounts()
        args += ["--proc", "/proc", "--dev", "/dev"]
        if req.tmp is None:
            args += [*(["--size", str(req.tmp_bytes)] if req.tmp_bytes else []), "--tmpfs", "/tmp"]
        else:
            args += ["--bind", str(req.tmp), "/tmp"]
        args += network_mounts(req)
        for p in outermost(_existing([*interpreter_paths(), *req.read_only])):
            args += ["--ro-bind", str(p), str(p)]
        for p in _existing(req.read_write):
            args += ["--bind", str(p), str(p)]
        args += ["--remount-ro", "/", "--chdir", str(req.cwd), "--clearenv"]
        env = dict(req.env)
        env["TMPDIR"] = "/tmp"
        env["PATH"] = sandbox_path(env.get("PATH", ""))
        for key, value in sorted(env.items()):
            args += ["--setenv", key, value]
        # bwrap's own environment is what PID 1 of the sandbox shows in /proc/1/environ:
        # give it nothing but a PATH, so the runner's variables are nowhere inside.
        return [*args, "--", *req.argv], {"PATH": SANDBOX_PATH}


def network_mounts(req: Request) -> list[str]:
    """A gateway route's socket directory, read-only at ``LINK_MOUNT`` (own network only):
    connecting to a socket needs no write access, and nothing else of the host's is there."""
    if req.network or req.link is None:
        return []
    return ["--ro-bind", str(req.link), LINK_MOUNT]


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
