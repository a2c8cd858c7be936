"""What one sandbox start costs: this checkout against another revision, in the same run.

Not a test: nothing here asserts a speed. A sandbox start is ``runner.sandbox.run`` of
``/bin/true`` through the bubblewrap backend, with the directories a stage has (workspace,
HOME, output, TMP) and no network: everything the runner does around it (an id leased and
the directories handed over, a cgroup, bubblewrap, PID 1, ``setpriv``, the reclaim walk)
is in the time. Each side runs in a worker process of its own (the other revision is
exported with ``git archive`` into a temporary directory, never checked out), and the
workers take turns, ``--batch`` starts at a time, so both see the same load on a shared
machine; the medians of the wall times are compared, and the CPU time per start (the
worker's and every process it started, from a cpuacct cgroup of its own when root), which
load on a shared machine disturbs much less.

For this checkout it also prints where the time goes (host-side phases timed around the
functions ``runner.sandbox.launch`` calls; "spawn to exit" is bubblewrap, PID 1,
``setpriv`` and the program) and the start with each PID 1 (bash, or the base
interpreter where a sandbox has no bash: ``runner.sandbox.init``).

    .venv/bin/python bench/sandbox_start.py                  # against main, 200 starts each
    .venv/bin/python bench/sandbox_start.py --against HEAD~3 --starts 100
    .venv/bin/python bench/sandbox_start.py --parts 40        # the chain's CPU, piece by piece
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


# -- the worker (runs in the tree given by PYTHONPATH) -------------------------------------------


def _request(root: Path):
    from runner import sandbox

    for name in ("ws", "home", "out", "tmp"):
        (root / name).mkdir(exist_ok=True)
    (root / "ws" / "a.txt").write_text("x")
    return sandbox.Request(argv=["/bin/true"], cwd=root / "ws", env={"PATH": "/usr/bin:/bin"},
                           read_write=[root / "ws", root / "home", root / "out"], tmp=root / "tmp",
                           network=False)


def _phases() -> dict[str, float]:
    """Time the host-side steps of ``runner.sandbox.launch`` (this checkout's names only)."""
    spent: dict[str, float] = collections.defaultdict(float)
    try:
        from runner.sandbox import launch, limits
    except ImportError:
        return spent
    targets = [(launch, "run_bounded", "spawn to exit (bwrap, PID 1, setpriv, program)"),
               (launch, "hand_over", "hand the directories over"), (launch, "reclaim", "reclaim walk"),
               (launch.ids, "lease", "lease an id"), (limits.Cgroup, "create", "cgroup create"),
               (limits.Cgroup, "close", "cgroup close"), (launch, "resolve_program", "resolve the program")]
    for owner, name, label in targets:
        if not hasattr(owner, name):
            continue
        fn = getattr(owner, name)

        def timed(*a, _fn=fn, _label=label, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                spent[_label] += time.perf_counter() - t

        if name == "lease":  # a context manager: time entering and leaving it
            timed = _timed_cm(fn, spent, label)
        setattr(owner, name, timed)
    return spent


def _timed_cm(fn, spent, label):
    from contextlib import contextmanager

    @contextmanager
    def lease(*a, **k):
        t = time.perf_counter()
        with fn(*a, **k) as value:
            spent[label] += time.perf_counter() - t
            yield value
            t = time.perf_counter()
        spent[label] += time.perf_counter() - t

    return lease


def worker(pid1: str | None) -> None:
    """Read a count per line, answer with that many start times (ms) and the phases' sums."""
    account = _account()
    from runner import sandbox

    if pid1 == "python":  # as on a machine whose sandbox has no bash
        import types

        from runner.sandbox import init

        init.shutil = types.SimpleNamespace(which=lambda *_a, **_k: None)  # type: ignore[assignment]
    spent = _phases()
    backend = sandbox.backend("bubblewrap")
    req = _request(Path(tempfile.mkdtemp(prefix="sandbox-start-")))
    assert sandbox.run(backend, req, timeout=60).ok
    for line in sys.stdin:
        spent.clear()
        times = []
        cpu = _cpu(account)
        for _ in range(int(line)):
            t = time.perf_counter()
            res = sandbox.run(backend, req, timeout=60)
            times.append((time.perf_counter() - t) * 1000)
            assert res.ok, res
        print(json.dumps({"times": times, "cpu": (_cpu(account) - cpu) * 1000,
                          "phases": {k: v * 1000 for k, v in spent.items()}}), flush=True)


CPUACCT = Path("/sys/fs/cgroup/cpuacct")
"""Where a root worker gets a cgroup of its own: its ``cpuacct.usage`` counts every process
it starts, whoever reaps them (``wait4``'s would miss a sandbox process its parent never
waited for)."""


def _account() -> Path | None:
    """A cpuacct cgroup of this worker's own (root with the v1 hierarchy), joined; or None."""
    if os.geteuid() != 0 or not os.access(CPUACCT, os.W_OK):
        return None
    d = CPUACCT / f"sandbox-start-{os.getpid()}"
    d.mkdir()
    (d / "tasks").write_text("0")
    return d


def _leave() -> None:
    """Back to the cpuacct hierarchy's root, and the cgroup ``_account`` made removed."""
    d = CPUACCT / f"sandbox-start-{os.getpid()}"
    if d.is_dir():
        (CPUACCT / "tasks").write_text("0")
        d.rmdir()


def _cpu(account: Path | None) -> float:
    """CPU seconds of this worker and of what it started (``wait4``'s count without a cgroup)."""
    if account is not None:
        return int((account / "cpuacct.usage").read_text()) / 1e9
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _parts_argv(req):
    """This checkout's argv for ``req``, cut into what it chains: the cgroup join (``sh``),
    bubblewrap's options, PID 1, ``setpriv``, the program; and the descriptors it needs."""
    from runner import sandbox
    from runner.sandbox import launch

    inv = launch._Invocation(sandbox.backend("bubblewrap"), req).__enter__()
    argv, env = inv.command()
    fds = inv.pass_fds()
    bw = next(i for i, a in enumerate(argv) if a.endswith("bwrap"))
    join, rest = argv[:bw], argv[bw:]
    opts, prog = rest[:rest.index("--")], rest[rest.index("--") + 1:]
    init = prog[:prog.index("--") + 1]
    after = prog[len(init):]
    setpriv = after[:after.index("--") + 1] if after[0] == "setpriv" else []
    return inv, env, fds, join, opts, init, setpriv


def parts(n: int) -> dict[str, list[float]]:
    """CPU time (ms) of the chain built up one piece at a time, each run ``n`` times (this
    process's own included: measured as ``worker`` measures it)."""
    from runner.sandbox import seccomp

    account = _account()
    req = _request(Path(tempfile.mkdtemp(prefix="sandbox-parts-")))
    out: dict[str, list[float]] = collections.defaultdict(list)
    for _ in range(n):
        inv, env, fds, join, opts, init, setpriv = _parts_argv(req)
        sc = opts.index("--seccomp")
        bare = opts[:sc] + opts[sc + 2:]
        steps = {"bwrap alone": [*bare, "--", "/bin/true"],
                 "+ seccomp filter": [*opts, "--", "/bin/true"],
                 "+ setpriv": [*opts, "--", *setpriv, "/bin/true"],
                 "+ PID 1": [*opts, "--", *init, *setpriv, "/bin/true"],
                 "+ cgroup join (sh): all": [*join, *opts, "--", *init, *setpriv, "/bin/true"]}
        for name, argv in steps.items():
            seccomp_fd = int(opts[sc + 1])
            fresh = seccomp.program_fd()  # bubblewrap reads the filter once: a new pipe each time
            os.dup2(fresh, seccomp_fd, inheritable=False)
            os.close(fresh)
            before = _cpu(account)
            done = subprocess.run(argv, env=env, pass_fds=fds, capture_output=True)
            out[name].append((_cpu(account) - before) * 1000)
            assert done.returncode == 0, (name, done.stderr[-300:])
        inv.__exit__()
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
    return out


# -- the driver ---------------------------------------------------------------------------------


def _export(rev: str, into: Path) -> Path:
    files = subprocess.run(["git", "-C", str(REPO), "archive", rev, "runner", "contract"],
                           check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=files, check=True)
    return into


def _start(tree: Path, pid1: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    argv = [PY, "-P", str(Path(__file__).resolve()), "--worker", *(["--pid1", pid1] if pid1 else [])]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                            cwd=tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", default="main", help="the revision to compare with (default: main)")
    ap.add_argument("--starts", type=int, default=200, help="sandbox starts per side")
    ap.add_argument("--batch", type=int, default=10, help="starts per turn")
    ap.add_argument("--parts", type=int, metavar="N", help="only the chain's CPU piece by piece, N times")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pid1", choices=["bash", "python"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.pid1)
        return
    if args.parts:
        sys.path.insert(0, str(REPO))
        try:
            for name, ts in parts(args.parts).items():
                print(f"{name:30s} CPU median {statistics.median(ts):6.2f} ms  min {min(ts):6.2f} ms")
        finally:
            _leave()
        return
    with tempfile.TemporaryDirectory(prefix="sandbox-start-rev-") as tmp:
        sides = {f"{args.against} (exported)": _start(_export(args.against, Path(tmp))),
                 "this checkout": _start(REPO), "this checkout, python PID 1": _start(REPO, "python")}
        times: dict[str, list[float]] = {k: [] for k in sides}
        cpu: dict[str, float] = dict.fromkeys(sides, 0.0)
        phases: dict[str, float] = collections.defaultdict(float)
        load = os.getloadavg()[0]
        done = 0
        while done < args.starts:
            n = min(args.batch, args.starts - done)
            for name, proc in sides.items():
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{n}\n")
                proc.stdin.flush()
                answer = json.loads(proc.stdout.readline())
                times[name] += answer["times"]
                cpu[name] += answer["cpu"]
                if name == "this checkout":
                    for k, v in answer["phases"].items():
                        phases[k] += v
            done += n
        for proc in sides.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait()
            try:
                (CPUACCT / f"sandbox-start-{proc.pid}").rmdir()
            except OSError:
                pass
    base = statistics.median(times[f"{args.against} (exported)"])
    print(f"sandbox start (/bin/true), {args.starts} each, batches of {args.batch}; "
          f"load {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    base_cpu = cpu[f"{args.against} (exported)"]
    print(f"{'side':34s} {'wall median ms':>14s} {'p10':>6s} {'p90':>6s} {'ratio':>6s} {'CPU ms':>7s} {'ratio':>6s}")
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=10)
        print(f"{name:34s} {statistics.median(ts):14.1f} {q[0]:6.1f} {q[-1]:6.1f} "
              f"{statistics.median(ts) / base:6.2f} {cpu[name] / args.starts:7.1f} {cpu[name] / base_cpu:6.2f}")
    print("\nthis checkout, mean ms per start by phase:")
    for k, v in sorted(phases.items(), key=lambda kv: -kv[1]):
        print(f"  {k:50s} {v / args.starts:7.2f}")


if __name__ == "__main__":
    main()
