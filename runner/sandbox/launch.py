"""Running a request: its sandbox set up around it, watched while it runs, its directories taken back.

For bubblewrap, one invocation is: an id of its own when the runner is root
(``runner.sandbox.ids``) with its writable directories handed to that id
(``runner.sandbox.ownership``); a cgroup of its own where the runner may use cgroups
(``runner.sandbox.limits``), joined by its first process before it starts anything; the
seccomp filter (``runner.sandbox.seccomp``); the runner's PID 1 (``runner.sandbox.init``)
holding the sandbox's lifeline and the "ready" pipe; for a sandbox that reaches the model
gateway through a route's sockets, the forwarder (``runner.sandbox.forwarder``) in front of
the program, with a "ready" pipe of its own. While it runs, its writable
directories are measured now and then against the bytes and entries it may leave; over
either, or out of time, its lifeline is closed and PID 1 ends it. Bubblewrap's monitor
exits only once PID 1 has (and with it every process of the sandbox), so when it has
ended every directory is reclaimed (special files removed, ownership back to the runner, sizes
counted once more) and the result names the limit it reached, if any (docs/security.md;
docs/runner.md, "Limits").
"""

from __future__ import annotations

import os
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from runner.procs import OUTPUT_LIMIT, ProcResult, Watch, run_bounded
from runner.sandbox import cgroup2, ids, limits, seccomp
from runner.sandbox.bubblewrap import Session
from runner.sandbox.init import init_argv
from runner.sandbox.ownership import hand_over, reclaim
from runner.sandbox.programs import resolve_program
from runner.sandbox.request import Backend, Request, interpreter
from runner.walk import Tally, measure

JOIN = 'for f; do [ "$f" = -- ] && break; echo 0 > "$f" || exit 125; shift; done; shift; exec "$@"'
"""``sh -c`` that puts itself in the cgroups whose ``tasks`` (v1) or ``cgroup.procs`` (v2) files
it is given, then becomes bubblewrap. In v1 it writes ``0`` (itself) to ``tasks``, not its pid to ``cgroup.procs``: the
kernel moves a single thread that moves itself without the global lock that moving a
thread group takes, which waits for an RCU grace period (milliseconds under load,
``bench/sandbox_start.py``); ``sh`` has one thread."""

def run(backend: Backend, req: Request, *, timeout: float, stdout_path: Path | None = None,
        stderr_path: Path | None = None, limit: int | None = None,
        stdin_bytes: bytes | None = None, reclaim_by: float | None = None) -> ProcResult:
    """Run ``req`` through ``backend`` (see the module docstring). ``reclaim_by`` (monotonic)
    bounds taking its directories back; a reclaim cut short is a limit reached."""
    why = resolve_program(req.argv[0], req, backend) if req.argv else "empty argv"
    if why is not None:
        return ProcResult(None, None, False, True, 0.0, error=why)
    bound = OUTPUT_LIMIT if limit is None else limit
    lim = backend.limits
    writable = writable_dirs(req)
    watch = _watch(writable, lim)
    if not backend.isolated:
        argv, env = backend.command(req)
        res = run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                          stderr_path=stderr_path, stdin_bytes=stdin_bytes, limit=bound, watch=watch)
        return _reclaimed(res, writable, None, lim, reclaim_by)
    with _Invocation(backend, req) as inv:
        argv, env = inv.command()
        res = run_bounded(argv, cwd=req.cwd, env=env, timeout=timeout, stdout_path=stdout_path,
                          stderr_path=stderr_path, stdin_bytes=stdin_bytes, pass_fds=inv.pass_fds(),
                          limit=bound, watch=watch, stop=inv.end)
        ready = inv.ready()
        reached = inv.cgroup.reached() if inv.cgroup is not None else None
        res = _reclaimed(res, writable, inv.owner, lim, reclaim_by)
    if reached is not None and res.limit is None:
        res = replace(res, limit_kind=reached[0], limit=reached[1])
    if ready or res.timed_out or res.limit is not None:
        return res
    detail = _tail(stderr_path)
    return ProcResult(None, None, False, True, res.duration_s,
                      error=f"the sandbox could not start the program: {detail or f'exit {res.exit_code}'}")


def writable_dirs(req: Request) -> list[Path]:
    """Every directory the sandbox may write (its workspace, HOME, output, /tmp, /dev/shm)."""
    extra = [p for p in (req.tmp, req.shm) if p is not None]
    return list(dict.fromkeys(Path(os.path.abspath(p)) for p in [*req.read_write, *extra]))


@dataclass
class _Invocation:
    """The sandbox set up around one bubblewrap invocation (and torn down after it)."""

    backend: Backend
    req: Request
    owner: tuple[int, int] | None = None
    """The runner's (uid, gid) when the sandbox runs as an id of its own."""
    sandbox_ids: tuple[int, int] | None = None
    cgroup: limits.Cgroup | cgroup2.CgroupV2 | None = None
    ulimits: list[str] = field(default_factory=list)
    nice: list[str] = field(default_factory=list)
    _child: list[int] = field(default_factory=list)
    """Descriptors the sandbox inherits: ready (write), lifeline (read), seccomp, and the
    forwarder's ready (write) where the sandbox reaches the gateway through a forwarder."""
    _mine: list[int] = field(default_factory=list)
    """The runner's ends of the ready pipes."""
    _lifeline: int = -1
    """The writing end of the sandbox's lifeline: only this process holds it (``runner.sandbox.init``)."""
    _stack: ExitStack = field(default_factory=ExitStack)

    def __enter__(self) -> _Invocation:
        try:
            self._set_up()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _set_up(self) -> None:
        lim, mech = self.backend.limits, limits.mechanism()
        if os.geteuid() == 0:
            uid = self._stack.enter_context(ids.lease(ids.IdRange(*self.backend.id_range)))
            self.owner, self.sandbox_ids = (0, os.getegid()), (uid, uid)
            hand_over(writable_dirs(self.req), uid, uid)
        name = str(self.sandbox_ids[0]) if self.sandbox_ids else f"p{os.getpid()}-{threading.get_ident()}"
        self.cgroup = limits.sandbox_cgroup(mech, name, lim)
        if self.cgroup is not None:
            self._stack.callback(self.cgroup.close)
            self.cgroup.create()
        ready_r, ready_w = os.pipe()
        life_r, self._lifeline = os.pipe()  # not inherited: closed in every other child at exec
        self._mine = [ready_r]
        self._child = [ready_w, life_r, seccomp.program_fd()]
        if self.req.link is not None and not self.req.network:  # the gateway forwarder's own "ready"
            relay_r, relay_w = os.pipe()
            self._mine.append(relay_r)
            self._child.append(relay_w)
        self.ulimits = limits.rlimit_args(lim, mech)
        self.nice = limits.nice_prefix(mech)

    def command(self) -> tuple[list[str], dict[str, str]]:
        ready_w, life, sc, *relay = self._child
        session = Session(ids=self.sandbox_ids, seccomp_fd=sc,
                          tmpfs_bytes=self.backend.limits.tmpfs_bytes,
                          init=tuple(init_argv(ready_w, life, self.ulimits)), wrap=tuple(self.nice))
        req = self.req
        if relay:  # the program starts behind the forwarder, as the sandbox's id
            req = replace(req, argv=[interpreter(), "-I", "-S", "-c", FORWARDER, str(relay[0]), *req.argv])
        argv, env = self.backend.command(req, session)
        if self.cgroup is not None:
            argv = ["/bin/sh", "-c", JOIN, "trialhouse-join", *self.cgroup.join_files(), "--", *argv]
        return argv, env

    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors the sandbox inherits (``run_bounded`` closes them once it started)."""
        fds, self._child = tuple(self._child), []
        return fds

    def end(self) -> None:
        """Close the lifeline: PID 1 ends the sandbox (its program, every process in it)."""
        if self._lifeline >= 0:
            os.close(self._lifeline)
            self._lifeline = -1

    def ready(self) -> bool:
        """PID 1 reported "ready" (and so did the gateway forwarder, where there is one)."""
        return all(_read_all(fd).startswith(b"ready") for fd in self._mine)

    def __exit__(self, *_exc: object) -> None:
        self.end()
        for fd in [*self._child, *self._mine]:
            os.close(fd)
        self._child, self._mine = [], []
        self._stack.close()


def _read_all(fd: int, limit: int = 4096) -> bytes:
    """What a pipe holds now (its writers are gone or never wrote more), at most ``limit``."""
    os.set_blocking(fd, False)
    try:
        return os.read(fd, limit)
    except BlockingIOError:
        return b""


def _watch(writable: list[Path], lim: limits.Limits) -> Watch | None:
    """The check ``run_bounded`` makes while the sandbox runs: its directories against
    ``lim``'s bytes and entries (None when neither is limited)."""
    if lim.write_bytes is None and lim.write_entries is None:
        return None

    def check(deadline: float) -> tuple[str, str] | None:
        return over(measure(writable, deadline=deadline), lim)

    return check


def over(tally: Tally, lim: limits.Limits) -> tuple[str, str] | None:
    """(kind, reason) when ``tally`` is over ``lim``'s bytes or entries, else None."""
    if lim.write_bytes is not None and tally.bytes > lim.write_bytes:
        return "workspace", (f"workspace grew to {tally.bytes / 2**20:.0f} MB, over "
                             f"max_workspace_mb={lim.write_bytes / 2**20:g}")
    if lim.write_entries is not None and tally.entries > lim.write_entries:
        return "workspace_files", (f"workspace holds {tally.entries} files and directories, over "
                                   f"max_workspace_files={lim.write_entries}")
    return None


def _reclaimed(res: ProcResult, writable: list[Path], owner: tuple[int, int] | None,
               lim: limits.Limits, reclaim_by: float | None) -> ProcResult:
    """``res`` with what reclaiming the sandbox's directories found."""
    tally = reclaim(writable, owner, deadline=reclaim_by)
    res = replace(res, written=(tally.bytes, tally.entries), special=tuple(tally.special))
    if res.limit is not None:
        return res
    found = over(tally, lim)
    if found is None and not tally.complete:
        found = ("time", "time budget exhausted while checking what the sandbox left "
                         f"({tally.entries} entries so far)")
    return res if found is None else replace(res, limit_kind=found[0], limit=found[1])


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
