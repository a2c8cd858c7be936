"""Run every benchmark at its documented size and write the numbers to bench/results.md.

What ``make bench`` runs (not a test: nothing here asserts a speed). Each benchmark is a
child process printing its own same-run baseline (DuckDB alone, the seed script, the
validation floor); this script only chooses sizes, keeps the generated events file for the
validation floor, and records everything with the commit, the machine and the load
average, so a result can be reproduced and compared with bench/README.md.

    .venv/bin/python bench/run_all.py            # 1M events, 1M trials (a few minutes)
    .venv/bin/python bench/run_all.py --quick    # 200k events, 100k trials (about a minute)
    .venv/bin/python bench/run_all.py --only analysis --output /tmp/results.md
    .venv/bin/python bench/run_all.py --only runs-jsonl  # issue 15's targets and the exact-import floor
    .venv/bin/python bench/run_all.py --only inspect  # needs the inspect extra (make bench installs it)
    .venv/bin/python bench/run_all.py --only runner   # also rewrites docs/performance.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SIZES = {"full": {"events": 1_000_000, "trials": 1_000_000, "repeat": 3, "lines": 100_000,
                  "inspect_logs": 20, "inspect_samples": 500, "runs_lines": 2_000_000},
         "quick": {"events": 200_000, "trials": 100_000, "repeat": 1, "lines": 50_000,
                   "inspect_logs": 4, "inspect_samples": 250, "runs_lines": 200_000}}
BENCHMARKS = ("ingest", "analysis", "runs-jsonl", "inspect", "runner")


def _commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + (" (uncommitted changes)" if dirty else "")


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def _run(name: str, argv: list[str]) -> tuple[str, float, int]:
    """Run one benchmark, echo its output as it comes, return (output, seconds, exit code)."""
    print(f"\n## {name}\n$ {' '.join(argv)}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return "".join(lines), time.perf_counter() - t0, proc.wait()


def _plan(size: dict, work: Path, only: set[str]) -> list[tuple[str, list[str]]]:
    py = sys.executable
    ingest_dir = work / "ingest"
    events = ingest_dir / f"run-{size['events']}" / "events.jsonl"
    plan = []
    if "ingest" in only:
        plan.append(("Ingest", [py, str(BENCH / "ingest_bench.py"), "--events", str(size["events"]),
                                "--keep", "--workdir", str(ingest_dir)]))
        plan.append(("Validation floor", [py, str(BENCH / "validation_floor.py"), str(events),
                                          "--lines", str(size["lines"])]))
    if "analysis" in only:
        plan.append(("Analysis", [py, str(BENCH / "analysis_bench.py"), "--trials",
                                  str(size["trials"]), "--repeat", str(size["repeat"]),
                                  "--dir", str(work / "analysis")]))
    if "runs-jsonl" in only:  # issue 15's targets, then the floor of an exact import on the same file
        runs = work / "runs-jsonl"
        plan.append(("Runs-jsonl import", [py, str(BENCH / "runs_jsonl_bench.py"), "--lines", str(size["runs_lines"]),
                                           "--repeat", "1", "--dir", str(runs)]))
        plan.append(("Runs-jsonl floor", [py, str(BENCH / "runs_jsonl_floor.py"), "--file",
                                          str(runs / "runs.jsonl"), "--repeat", "1"]))
    if "inspect" in only:
        # one run each: samples_df(full=True) alone takes minutes at 20 logs × 500 samples
        plan.append(("Inspect import", [py, str(BENCH / "inspect_bench.py"), "--logs", str(size["inspect_logs"]),
                                        "--samples", str(size["inspect_samples"]), "--repeat", "1",
                                        "--dir", str(work / "inspect")]))
    if "runner" in only:
        plan.append(("Runner", [py, str(BENCH / "runner_bench.py"), "--output",
                                str(REPO / "docs" / "performance.md")] + (["--quick"] if size is SIZES["quick"] else [])))
    return plan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--only", choices=BENCHMARKS, action="append",
                    help="run only this benchmark (repeatable; default: all)")
    ap.add_argument("--output", type=Path, default=BENCH / "results.md",
                    help="where the results go (default bench/results.md)")
    args = ap.parse_args()
    size = SIZES["quick" if args.quick else "full"]
    work = Path(tempfile.mkdtemp(prefix="trialhouse-bench-all-"))
    head = [f"# Benchmark results ({'quick' if args.quick else 'full'} sizes)", "",
            f"- generated: {datetime.now(UTC):%Y-%m-%d %H:%M UTC} by `bench/run_all.py`"
            + (" --quick" if args.quick else ""),
            f"- commit: {_commit()}",
            f"- machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
            f"- load average before: {_load()} (1, 5, 15 min; other work on the machine "
            "slows every number)",
            "- sizes: " + ", ".join(f"{k} {v:,}" for k, v in size.items()), ""]
    body, failed = [], []
    try:
        for name, argv in _plan(size, work, set(args.only or BENCHMARKS)):
            out, secs, rc = _run(name, argv)
            shown = " ".join(a.replace(str(work), "$WORK").replace(str(REPO) + "/", "")
                             .replace(sys.executable, ".venv/bin/python") for a in argv)
            body += [f"## {name}", "", f"`{shown}` — {secs:.0f} s, exit {rc}", "", "```text",
                     out.rstrip(), "```", ""]
            if rc:
                failed.append(name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head.append(f"- load average after: {_load()}")
    args.output.write_text("\n".join([*head, "", *body]).rstrip() + "\n", encoding="utf-8")
    print(f"\nwrote {args.output}" + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
