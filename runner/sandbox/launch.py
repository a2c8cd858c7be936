"""Running a request: the backend's argv through the runner's bounded-process machinery.

Inside bubblewrap a launcher reports "ready" on a pipe just before it execs the program:
an exit without that report is a sandbox failure (infrastructure), never the program's own
exit code, and nothing the program prints can fake either (docs/security.md).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from runner.procs import OUTPUT_LIMIT, ProcResult, run_bounded
from runner.sandbox.programs import resolve_program
from runner.sandbox.request import SANDBOX_PATH, Backend, Request, interpreter


def run(backend: Backend, req: Request, *, timeout: float, stdout_path: Path | None = None,
        stderr_path: Path | None = None, limit: int | None = None,
        stdin_bytes: bytes | None = None) -> ProcResult:
    """Run ``req`` through ``backend`` with the runner's bounded-process machinery."""
    why = resolve_program(req.argv[0], req, backend) if req.argv else "empty argv"
    if why is not None:
        return ProcResult(None, None, False, True, 0.0, error=why)
    bound = OUTPUT_LIMIT if limit is None else limit
    if not backend.isolated:
        argv, env = backend.command(req)
        return run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                           stderr_path=stderr_path, stdin_bytes=stdin_bytes, limit=bound)
    ready_r, ready_w = os.pipe()
    try:
        launch = replace(req, argv=[*launcher(req), str(ready_w), *req.argv])
        argv, env = backend.command(launch)
        res = run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                          stderr_path=stderr_path, stdin_bytes=stdin_bytes, pass_fds=(ready_w,), limit=bound)
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


def launcher(req: Request | None = None) -> list[str]:
    """argv prefix of the launcher: bash where there is one, else the base interpreter; the
    gateway forwarder (``runner.sandbox.forwarder``) for a request with a gateway link."""
    if req is not None and req.link is not None and not req.network:
        return [interpreter(), "-I", "-S", "-c", FORWARDER]
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


FORWARDER = Path(__file__).with_name("forwarder.py").read_text(encoding="utf-8")
"""The forwarder's source, run with ``-c`` (the runner's package is not visible inside)."""


def _tail(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(os.path.getsize(path) - 300, 0))
            return " ".join(fh.read().decode("utf-8", "replace").split())
    except OSError:
        return ""
