"""Which backend runs here: the manifest names one, and it is checked once per process to work.

``bubblewrap`` needs the ``bwrap`` program and permission to create user namespaces; when
either is missing the run stops before any trial with what to do (install it, allow user
namespaces, or opt out with ``"isolation": {"backend": "none"}``, recorded and reported as
not isolated). docs/security.md.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from runner.sandbox.bubblewrap import Bubblewrap
from runner.sandbox.launch import run
from runner.sandbox.request import SANDBOX_PATH, Backend, NoIsolation, Request, SandboxUnavailable

BACKENDS = ("bubblewrap", "none")

_probed: dict[str, Backend] = {}


def backend(name: str) -> Backend:
    """The backend called ``name``, checked once per process to really work here."""
    if name in _probed:
        return _probed[name]
    if name == "none":
        chosen: Backend = NoIsolation()
    elif name == "bubblewrap":
        chosen = _bubblewrap()
    else:
        raise SandboxUnavailable(f"unknown isolation backend {name!r} (known: {', '.join(BACKENDS)})")
    _probed[name] = chosen
    return chosen


def _bubblewrap() -> Bubblewrap:
    """``bwrap`` found on the PATH and seen to start a sandbox running ``true``."""
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
    with tempfile.TemporaryDirectory(prefix="trialhouse-probe-") as tmp:
        err = Path(tmp) / "stderr"
        try:
            done = run(chosen, probe, timeout=30, stderr_path=err)
        except (OSError, subprocess.SubprocessError, SandboxUnavailable) as exc:
            raise SandboxUnavailable(f"isolation backend 'bubblewrap' failed to start: {exc}") from exc
        detail = " ".join(err.read_text(errors="replace").split())[-300:] if err.exists() else ""
    if done.could_not_start or done.exit_code != 0:
        raise SandboxUnavailable(
            "isolation backend 'bubblewrap' cannot create its sandbox here "
            f"({detail or done.error or f'exit {done.exit_code}'}); allow user namespaces (or run as "
            "root), or set \"isolation\": {\"backend\": \"none\"} in the manifest"
        )
    return chosen
