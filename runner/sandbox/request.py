"""What a sandboxed invocation is: the request every backend takes, and the backends' shape.

A :class:`Request` says what runs, where, with which environment, and which host paths it
may see; a :class:`Backend` turns it into the argv and environment handed to
``subprocess``. The trial, grading and judge code build requests and never branch on the
backend (docs/security.md).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from runner.errors import RunnerError

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
    """The host's network namespace (``isolation.network: open``); False: loopback only."""
    link: Path | None = None
    """Without the host's network: a gateway route's socket directory (``runner.gateway.links``),
    mounted read-only at ``LINK_MOUNT``; a forwarder on the sandbox's own loopback
    (``runner.sandbox.forwarder``) relays the route's ports to it (docs/security.md, "Network")."""
    tmp_bytes: int | None = None
    """Size cap of the fresh /tmp tmpfs (``tmp`` None); None: the kernel's default."""


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


def sandbox_path(path: str) -> str:
    """The PATH inside an isolated sandbox: the base interpreter's directory first, then the
    caller's PATH entries, then the system ones."""
    parts = [str(Path(interpreter()).parent)]
    parts += [p for p in path.split(os.pathsep) if p]
    parts += SANDBOX_PATH.split(":")
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return os.pathsep.join(seen)
