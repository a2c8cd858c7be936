"""`summarize` against its floor (not a test): issue 27's ratio, measured in one run.

The floor is the analysis bench's yardstick (``bench/analysis_bench.py``, "DuckDB alone"):
the seed script's columns as one DuckDB query over the trials Parquet, in a bare Python
process. ``trialhouse summarize --json`` answers more (the common-task set, task-level
intervals, quantiles, eligibility, the sanity checks, the unscored cases) and pays the CLI's
start-up. Both run as fresh processes over the same 1M-trial synthetic warehouse,
interleaved, ``--repeat`` times each; the best wall time of each gives the ratio (the best
is the run the other sessions on the machine disturbed least), the medians and the CPU
seconds (steadier than wall time on a shared machine) are printed beside it, with the
1-minute load average before and after.

    .venv/bin/python bench/summarize_floor.py                       # 1M trials, 7 rounds
    .venv/bin/python bench/summarize_floor.py --dir /tmp/sf --repeat 11   # keep the data
    .venv/bin/python bench/summarize_floor.py --dir /tmp/sf --before /tmp/old  # and an old commit

``--before DIR`` also times ``summarize`` from another checkout (``git archive <commit> |
tar -x -C DIR``, run with the same interpreter from that directory), in the same rounds.

Target (issue 27): summarize ≤ 1.3× the floor.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TARGET = 1.3


def timed(argv: list[str], cwd: Path = ROOT) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys of the child) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def warehouse(work: Path, trials: int) -> Path:
    """The analysis bench's synthetic warehouse (4 models × 3 harnesses × tasks × 5 reps),
    generated once per ``--dir``."""
    wh = work / "bench.duckdb"
    if wh.exists():
        return wh
    from warehouse.synthetic import Spec, generate

    spec = Spec(models=4, harnesses=3, tasks=max(1, trials // 60), reps=5, annotate=1000)
    t0 = time.perf_counter()
    rows = generate(wh, spec)
    print(f"generated {rows['trials']:,} trials in {time.perf_counter() - t0:.1f} s")
    return wh


def main() -> None:
    from analysis_bench import DUCKDB_ALONE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7, help="rounds (one process of each)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the warehouse here")
    ap.add_argument("--before", type=Path, default=None,
                    help="a checkout of an older commit whose summarize is timed too")
    args = ap.parse_args()

    work = args.dir or Path(tempfile.mkdtemp(prefix="trialhouse-floor-"))
    work.mkdir(parents=True, exist_ok=True)
    wh = warehouse(work, args.trials)
    alone = work / "duckdb_alone.py"
    alone.write_text(DUCKDB_ALONE, encoding="utf-8")
    py = sys.executable
    cmds = {"floor (DuckDB alone)": [py, str(alone), str(wh.with_suffix(".parquet") / "trials")],
            "trialhouse summarize": [py, "-m", "trialhouse", "summarize", "--json", "-w",
                                     str(wh)]}
    cwd = {name: ROOT for name in cmds}
    if args.before is not None:
        cmds["summarize, --before"] = cmds["trialhouse summarize"]
        cwd["summarize, --before"] = args.before.resolve()
    for name, argv in cmds.items():  # warm the file cache; not counted
        timed(argv, cwd[name])
    load_before = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cmds}
    for _ in range(args.repeat):
        for name, argv in cmds.items():
            runs[name].append(timed(argv, cwd[name]))
    load_after = os.getloadavg()[0]

    print(f"{os.cpu_count()} cores; 1-minute load {load_before:.2f} before, "
          f"{load_after:.2f} after; {args.repeat} rounds, interleaved")
    print(f"{'':<22}{'best wall s':>12}{'median wall s':>15}{'best CPU s':>12}")
    for name, got in runs.items():
        walls = [w for w, _ in got]
        print(f"{name:<22}{min(walls):>12.3f}{statistics.median(walls):>15.3f}"
              f"{min(c for _, c in got):>12.3f}")
    best = {n: min(w for w, _ in runs[n]) for n in cmds}
    med = {n: statistics.median(w for w, _ in runs[n]) for n in cmds}
    cpu = {n: min(c for _, c in runs[n]) for n in cmds}
    floor = "floor (DuckDB alone)"
    for name in (n for n in cmds if n != floor):
        ratio = best[name] / best[floor]
        print(f"{name} / floor: {ratio:.2f}× best wall ({med[name] / med[floor]:.2f}× "
              f"median, {cpu[name] / cpu[floor]:.2f}× CPU); target ≤ {TARGET}× wall: "
              f"{'met' if ratio <= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
