"""Runner benchmarks: own overhead vs a git-clone floor, concurrency, Ray vs local, memory.

Not a test: nothing here asserts a speed. Each section prints a ratio against a baseline
measured in the same run (absolute times on a shared 2-core machine are noisy), and the
whole report is written as markdown (``make bench`` writes it to docs/performance.md).

    .venv/bin/python bench/runner_bench.py --output docs/performance.md
    .venv/bin/python bench/runner_bench.py --only overhead --only concurrency
    .venv/bin/python bench/runner_bench.py --quick      # smaller sizes, a smoke run

Sections (targets from issue 19):

* overhead — the example corpus with the ``null`` agent and the Build stage only, one
  trial per case at ``--jobs 1``: the runner's own time per trial (trial duration minus
  agent, grader and judge process time: a judge criterion's host is its grader) vs the floor of a bare ``git clone --no-local --depth 1``
  of the same repository plus one ``python -c pass`` per criterion (target ≤ 1.5×);
* concurrency — 64 trials of an agent that sleeps 2 s, ``--jobs 1`` vs ``--jobs 32``
  (target ≥ 20×);
* ray — the same 64 trials on a local 2-CPU Ray instance with 32 in flight (trial hosts) vs the
  local executor at ``--jobs 32``, run before and after the Ray runs (target ≥ 0.8× its
  throughput), the machine's CPU seconds during each, and the per-trial time Ray adds
  (16 quick trials at ``--jobs 1`` under each executor);
* memory — the driver's RSS over 1,000 quick trials (mean of the first vs the last 100);
* ray_gateway, ray_disk — a gateway-backed harness trial under Ray vs local, and the disk
  a Ray node holds for a large repository (issue 33; ``bench/ray_bench.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.runner_common import git, start_local_ray  # noqa: E402
from contract.stage_events import Judgment  # noqa: E402
from contract.trial_events import TrialFinished  # noqa: E402
from runner.controls import run_controls  # noqa: E402
from runner.eventlog import read_events  # noqa: E402
from runner.run import run_trials  # noqa: E402

PY = sys.executable


def _finished(run_dir: Path) -> list[TrialFinished]:
    return [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, TrialFinished)]


# ---------------------------------------------------------------- overhead


class _Started:
    """Counts the processes the runner starts itself (direct children: git, bwrap) per kind."""

    def __init__(self) -> None:
        self.kinds: dict[str, int] = {}
        self._orig = subprocess.Popen.__init__

    def __enter__(self) -> _Started:
        orig, kinds = self._orig, self.kinds

        def init(popen, args, *a, **k):  # noqa: ANN001, ANN202 - subprocess's own signature
            name = os.path.basename(str(args[0]))
            if name == "git":
                name += " " + next((str(x) for x in args[1:] if not str(x).startswith("-")
                                    and "=" not in str(x)), "")
            kinds[name] = kinds.get(name, 0) + 1
            orig(popen, args, *a, **k)

        subprocess.Popen.__init__ = init  # type: ignore[method-assign]
        return self

    def __exit__(self, *_exc: object) -> None:
        subprocess.Popen.__init__ = self._orig  # type: ignore[method-assign]


def overhead(work: Path, quick: bool) -> list[str]:
    from runner.example import write_example

    manifest = write_example(work / "corpus")
    data = json.loads(manifest.read_text())
    data["variants"] = [v for v in data["variants"] if v["agent"]["kind"] == "null"]
    data.update(stages=["build"], repetitions=1, control_repeats=1)
    if quick:
        data["cases"] = data["cases"][:6]
    small = manifest.parent / "overhead.json"
    small.write_text(json.dumps(data))
    run_controls(small, work / "ctl", jobs=2, progress=False)
    with _Started() as started:
        run_trials(small, work / "run", jobs=1, progress=False, controls_dir=work / "ctl")
    events = read_events(work / "run" / "events.jsonl")
    fins = [e for e in events if isinstance(e, TrialFinished)]
    judged: dict[str, float] = {}
    for e in events:
        if isinstance(e, Judgment) and e.trial_id:
            judged[e.trial_id] = judged.get(e.trial_id, 0.0) + (e.duration_s or 0.0)
    graders = [(f.agent_s or 0) + (f.verification_s or 0) for f in fins]
    own = [f.duration_s - g - judged.get(f.trial_id, 0.0) for f, g in zip(fins, graders, strict=True)]
    with_judge = [f.duration_s - g for f, g in zip(fins, graders, strict=True)]
    floors = []
    for case in data["cases"]:
        repo = (manifest.parent / (case.get("repository") or data["repository"])).resolve()
        t0 = time.perf_counter()
        dest = work / "floor" / case["id"]
        subprocess.run(["git", "clone", "-q", "--no-local", "--depth", "1", str(repo), str(dest)],
                       check=True, capture_output=True)
        for _crit in case["criteria"]:
            subprocess.run([PY, "-c", "pass"], check=True)
        floors.append(time.perf_counter() - t0)
    ratio = statistics.mean(own) / statistics.mean(floors)
    per_trial = sum(started.kinds.values()) / len(fins)
    kinds = ", ".join(f"{k} {v / len(fins):.1f}" for k, v in sorted(started.kinds.items(), key=lambda kv: -kv[1]))
    attempts = statistics.mean(f.attempts for f in fins)
    return [
        f"trials: {len(fins)} (example corpus, null agent, build stage only, --jobs 1; "
        f"{attempts:.1f} attempts per trial)",
        f"runner's own time per trial: mean {statistics.mean(own):.3f} s, median "
        f"{statistics.median(own):.3f} s (duration − agent − grader − judge process time; "
        f"{statistics.mean(with_judge):.3f} s with the judge's time counted as the runner's)",
        f"floor per trial: mean {statistics.mean(floors):.3f} s (git clone --no-local --depth 1 "
        "+ one python -c pass per criterion)",
        f"ratio: {ratio:.2f}× the floor (target ≤ 1.5×: {'met' if ratio <= 1.5 else 'MISSED by ' + format(ratio / 1.5, '.2f') + '×'})",
        f"processes the runner starts per trial (incl. the run's one-time setup, spread): "
        f"{per_trial:.1f} ({kinds})",
    ]


# ---------------------------------------------------------------- sleeping trials


def sleepy_corpus(root: Path, seconds: float, trials: int, num_cpus: float = 1.0) -> tuple[Path, Path]:
    """One case, 8 variants × N repetitions of an agent that sleeps; controls run once."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README").write_text("bench\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "initial")
    sha = git(repo, "rev-parse", "HEAD")
    (repo / "done.txt").write_text("done\n")
    git(repo, "add", "-N", "done.txt")
    (root / "done.patch").write_text(git(repo, "diff") + "\n")
    (repo / "done.txt").unlink()
    check = [PY, "-c", "import os, sys; sys.exit(0 if os.path.exists("
             "os.path.join(os.environ['TRIALHOUSE_WORKSPACE'], 'done.txt')) else 1)"]
    variants = 8 if trials >= 8 else trials
    manifest = {
        "schema_version": 1, "id": "bench-sleep", "repository": "repo", "initial_commit": sha,
        "repetitions": max(1, trials // variants), "control_repeats": 1, "stages": ["build"],
        "timeout_seconds": 120, "resources": {"num_cpus": num_cpus},
        "cases": [{"id": "done", "prompt": "create done.txt", "reference_patch": "done.patch",
                   "criteria": [{"id": "has_done", "layer": "target", "command": check}]}],
        "variants": [{"id": f"sleep{i}", "agent": {"kind": "command", "argv": [
            PY, "-c", f"import time; time.sleep({seconds})"]}} for i in range(variants)],
    }
    path = root / "manifest.json"
    path.write_text(json.dumps(manifest))
    run_controls(path, root / "ctl", jobs=2, progress=False)
    return path, root / "ctl"


def _timed(manifest: Path, out: Path, ctl: Path, **kw) -> float:
    t0 = time.perf_counter()
    res = run_trials(manifest, out, progress=False, controls_dir=ctl, **kw)
    wall = time.perf_counter() - t0
    assert sum(res.outcomes.values()) == len(_finished(out)), res.outcomes
    return wall


def concurrency(work: Path, quick: bool) -> list[str]:
    n = 16 if quick else 64
    manifest, ctl = sleepy_corpus(work / "c", 2.0, n)
    serial = _timed(manifest, work / "j1", ctl, jobs=1)
    wide = _timed(manifest, work / "j32", ctl, jobs=32)
    ratio = serial / wide
    return [f"{n} trials of a 2 s sleeping agent: --jobs 1 {serial:.1f} s, --jobs 32 {wide:.1f} s",
            f"speed-up: {ratio:.1f}× (target ≥ 20×: {'met' if ratio >= 20 else 'MISSED by ' + format(20 / ratio, '.2f') + '×'})"]


def _busy_s() -> float:
    """CPU seconds the whole machine has spent busy (all processes: Ray's workers, raylet and
    object store included, and whatever else shares the machine), from /proc/stat."""
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def _timed_cpu(manifest: Path, out: Path, ctl: Path, **kw) -> tuple[float, float]:
    b0 = _busy_s()
    wall = _timed(manifest, out, ctl, **kw)
    return wall, _busy_s() - b0


def ray_section(work: Path, quick: bool) -> list[str]:
    import ray

    n = 16 if quick else 64
    startup = start_local_ray(ray, 32)
    try:
        # A sleeping agent uses next to no CPU: its num_cpus hint is what it uses, so Ray
        # admits 32 at once on 2 CPUs (with the default 1 it would run 2 at a time).
        manifest, ctl = sleepy_corpus(work / "r", 2.0, n, num_cpus=2 / 32)
        local, local_cpu = _timed_cpu(manifest, work / "local32", ctl, jobs=32)
        remote, remote_cpu = _timed_cpu(manifest, work / "ray32", ctl, jobs=32, executor="ray")
        again, again_cpu = _timed_cpu(manifest, work / "ray32-warm", ctl, jobs=32, executor="ray")
        local_b, local_b_cpu = _timed_cpu(manifest, work / "local32-b", ctl, jobs=32)
        quick_manifest, quick_ctl = sleepy_corpus(work / "q", 0.0, 16, num_cpus=2 / 32)
        _timed(quick_manifest, work / "q-warmup", quick_ctl, jobs=1, executor="ray")
        local1 = _timed(quick_manifest, work / "q-local", quick_ctl, jobs=1)
        ray1 = _timed(quick_manifest, work / "q-ray", quick_ctl, jobs=1, executor="ray")
    finally:
        ray.shutdown()
    ratio = local / remote
    warm = (local + local_b) / 2 / again
    per_trial = (ray1 - local1) / 16

    def verdict(r: float) -> str:
        return "met" if r >= 0.8 else "MISSED by " + format(0.8 / r, ".2f") + "×"

    return [
        f"local 2-CPU Ray instance started in {startup:.1f} s (not counted below)",
        f"{n} trials of a 2 s sleeping agent at 32 in flight (`resources.num_cpus` 2/32: 2 trial "
        f"hosts × 16 threads): local executor {local:.1f} s, Ray {remote:.1f} s (first run of the "
        f"instance: its hosts take the workers Ray starts with a new driver, as every `trialhouse run "
        f"--executor ray` on a local instance does), Ray again {again:.1f} s (same driver: its hosts "
        f"start new worker processes, Python and Ray imported, inside the run), local again {local_b:.1f} s",
        f"machine CPU busy during each (all processes, /proc/stat): local {local_cpu:.1f} s and "
        f"{local_b_cpu:.1f} s, Ray first {remote_cpu:.1f} s, Ray again {again_cpu:.1f} s",
        f"Ray throughput vs local: {ratio:.2f}× first run ({verdict(ratio)}), {warm:.2f}× again "
        f"(vs the mean of the two local runs; {verdict(warm)}; target ≥ 0.8×)",
        f"per-trial time Ray adds (16 quick trials, --jobs 1; the run's one host starts inside it): {per_trial:+.3f} s "
        f"(local {local1 / 16:.3f} s/trial, Ray {ray1 / 16:.3f} s/trial)",
    ]


# ---------------------------------------------------------------- memory


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory(work: Path, quick: bool) -> list[str]:
    n = 200 if quick else 1000
    root = work / "m"
    manifest, ctl = sleepy_corpus(root, 0.0, 8)
    data = json.loads(manifest.read_text())
    data.update(repetitions=10, variants=data["variants"][:1],
                cases=[{**data["cases"][0], "id": f"done{i}"} for i in range(n // 10)])
    manifest.write_text(json.dumps(data))
    run_controls(manifest, root / "ctl-all", jobs=2, progress=False)
    samples: list[tuple[int, int]] = []
    stop = threading.Event()
    events = root / "run" / "events.jsonl"

    def sample() -> None:
        # the log is read incrementally: reading it whole every 0.25 s allocated a buffer as
        # large as the log (MBs by the end), and that grew the very RSS being measured
        mark, done, offset, tail = b'"event":"trial_finished"', 0, 0, b""
        while not stop.is_set():
            try:
                with events.open("rb") as f:
                    f.seek(offset)
                    while chunk := f.read(1 << 16):
                        offset += len(chunk)
                        data = tail + chunk  # a mark split across two reads is counted once
                        done += data.count(mark)
                        tail = data[-(len(mark) - 1):]
            except OSError:
                pass
            samples.append((done, _rss_kib()))
            stop.wait(0.25)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    run_trials(manifest, root / "run", jobs=4, progress=False, controls_dir=root / "ctl-all")
    wall = time.perf_counter() - t0
    stop.set()
    thread.join()
    # "the last 100" are trials 901-1000 while they run; once the last trial has finished the
    # driver writes the report and the run summary, a one-off peak reported on its own
    first = [r for d, r in samples if d < 100]
    last = [r for d, r in samples if n - 100 <= d < n]
    after = [r for d, r in samples if d >= n]
    a, b = statistics.mean(first) / 1024, statistics.mean(last or [_rss_kib()]) / 1024
    marks = []
    for k in (n // 4, n // 2, 3 * n // 4, n - 1):
        at = [r for d, r in samples if d <= k]
        marks.append(f"{k}: {at[-1] / 1024:.1f}" if at else f"{k}: -")
    return [f"{n} quick trials (--jobs 4) in {wall:.0f} s; driver RSS mean over the first 100 "
            f"trials {a:.1f} MiB, over the last 100 {b:.1f} MiB ({(b - a) / a * 100:+.1f}%)",
            f"driver RSS after N trials (MiB): {', '.join(marks)}; peak after the last trial, "
            f"while the report is written: {max(after, default=0) / 1024:.1f}"]


def _ray_gateway(work: Path, quick: bool) -> list[str]:
    from bench.ray_bench import ray_gateway

    return ray_gateway(work, quick)


def _ray_disk(work: Path, quick: bool) -> list[str]:
    from bench.ray_bench import ray_disk

    return ray_disk(work, quick)


SECTIONS = {"overhead": overhead, "concurrency": concurrency, "ray": ray_section, "memory": memory,
            "ray_gateway": _ray_gateway, "ray_disk": _ray_disk}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=list(SECTIONS), action="append")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--output", type=Path, default=None, help="write the markdown report here")
    args = ap.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = ["# Runner performance", "",
           "Written by `make bench` (`bench/runner_bench.py --output docs/performance.md`); "
           "every ratio is against a baseline measured in the same run. The machine is shared "
           "(2 cores, other work running): absolute times are noisy.", "",
           f"- generated: {datetime.now(UTC):%Y-%m-%d %H:%M UTC}" + (" (--quick sizes)" if args.quick else ""),
           f"- machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
           f"- load average before: {load}", ""]
    for name in args.only or list(SECTIONS):
        with tempfile.TemporaryDirectory(prefix=f"trialhouse-bench-{name}-") as tmp:
            t0 = time.perf_counter()
            lines = SECTIONS[name](Path(tmp), args.quick)
        out += [f"## {name}", "", *[f"- {line}" for line in lines],
                f"- (section took {time.perf_counter() - t0:.0f} s)", ""]
        print("\n".join(out[-len(lines) - 3:]), flush=True)
    out.append(f"- load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.output:
        args.output.write_text("\n".join(out) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
