"""runs-jsonl import benchmark (not a test): trialhouse against two baselines, same file, same run.

Generates a runs-jsonl log of ``--lines`` lines (default 2,000,000: 4 models × 3 harnesses
× N tasks × 5 trials, every field the format has, a few percent with a reported cost)
and a prices file, then times, each as a fresh process (wall and CPU seconds from
``getrusage``, the minimum of ``--repeat`` runs by CPU):

1. ``trialhouse ingest FILE --format runs-jsonl --prices P`` into a new warehouse;
2. DuckDB's own ``COPY (SELECT * FROM read_json(FILE)) TO parquet`` (no validation);
3. ``trialhouse summarize --json`` on the warehouse of 1, so ingest + summarize end to end;
4. the seed-002 summary script (pure Python) on the same file and prices;
5. with ``--before DIR``, the ingest of 1 from another source tree (a ``git archive`` of an
   earlier commit, run with this venv): a same-run "before" row.

Targets (issue 15): ingest ≥ 0.5× DuckDB's throughput; ingest + summarize ≥ 5× faster
than the seed script.

    .venv/bin/python bench/runs_jsonl_bench.py                 # 2M lines
    .venv/bin/python bench/runs_jsonl_bench.py --lines 200000 --repeat 1
    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python bench/runs_jsonl_bench.py --before /tmp/before
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _analysis_bench():
    spec = importlib.util.spec_from_file_location("analysis_bench", ROOT / "bench" / "analysis_bench.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def generate(path: Path, lines: int, models: int = 4, harnesses: int = 3, trials: int = 5) -> int:
    """Write the log; returns the number of lines written."""
    rng = random.Random(15)
    tasks = max(1, lines // (models * harnesses * trials))
    repos = [f"org-{i}/repo-{i}" for i in range(12)]
    n = 0
    with path.open("w", encoding="utf-8", buffering=1 << 20) as f:
        for m in range(models):
            for h in range(harnesses):
                for t in range(tasks):
                    for k in range(1, trials + 1):
                        status = rng.choices(("solved", "failed", "infra_error"), (5, 4, 1))[0]
                        line = {
                            "model": f"model-{chr(97 + m)}", "harness": f"harness-{h}",
                            "harness_version": "1.0.0", "task_id": f"task-{t:06d}", "trial": k,
                            "status": status, "input_tokens": rng.randrange(1000, 200_000),
                            "output_tokens": rng.randrange(100, 20_000), "steps": rng.randrange(1, 80),
                            "repo": repos[t % len(repos)], "benchmark": "bench-b",
                            "wall_seconds": round(rng.uniform(5, 900), 3),
                            "started_at": f"2026-03-{1 + t % 28:02d}T{k:02d}:{m:02d}:{h:02d}Z",
                        }
                        if rng.random() < 0.05:
                            line["cost_usd"] = round(rng.uniform(0.01, 3.0), 4)
                        if status != "solved":
                            line["failure_mode"] = "tests_failed" if status == "failed" else "sandbox_lost"
                        f.write(json.dumps(line) + "\n")
                        n += 1
    return n


DUCKDB_COPY = """\
import sys
import duckdb
duckdb.execute("COPY (SELECT * FROM read_json(?, format='newline_delimited')) TO '" + sys.argv[2].replace("'", "''")
               + "' (FORMAT parquet)", [sys.argv[1]])
"""


def write_prices(path: Path) -> Path:
    """The prices file of the generated log's four models."""
    path.write_text(json.dumps({f"model-{chr(97 + m)}": {"input_per_mtok": 3.0 - m * 0.5,
                                                         "output_per_mtok": 15.0 - m * 2}
                                for m in range(4)}))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=2, help="runs per command (least CPU kept)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the data here")
    ap.add_argument("--before", type=Path, default=None,
                    help="also time the ingest of this source tree (e.g. a git archive of an earlier commit)")
    args = ap.parse_args()
    ab = _analysis_bench()
    work = args.dir or Path(tempfile.mkdtemp(prefix="trialhouse-runs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    runs = work / "runs.jsonl"
    n = generate(runs, args.lines)
    prices = write_prices(work / "prices.json")
    print(f"{n:,} lines, {runs.stat().st_size / 1e6:.0f} MB; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    py = sys.executable
    copy = work / "duckdb_copy.py"
    copy.write_text(DUCKDB_COPY, encoding="utf-8")
    seed = ab.seed_script(work / "seed_summary.py")

    def ingest(tree: Path | None = None) -> tuple[float, float]:
        shutil.rmtree(work / "wh", ignore_errors=True)
        # another tree's code first on sys.path (a -m run would put this tree's first)
        start = (["-c", f"import runpy, sys; sys.path.insert(0, {str(tree)!r}); "
                        "runpy.run_module('trialhouse', run_name='__main__', alter_sys=True)"]
                 if tree else ["-m", "trialhouse"])
        return ab.timed([py, *start, "ingest", str(runs), "--format", "runs-jsonl",
                         "--prices", str(prices), "-w", str(work / "wh" / "w.duckdb")])

    def best(fn, k=args.repeat):
        return min((fn() for _ in range(max(1, k))), key=lambda r: r[1])

    duck = best(lambda: ab.timed([py, str(copy), str(runs), str(work / "copy.parquet")]))
    before = best(lambda: ingest(args.before.resolve()), 1) if args.before else None
    ing = best(ingest)
    summ = best(lambda: ab.timed([py, "-m", "trialhouse", "summarize", "--json",
                                  "-w", str(work / "wh" / "w.duckdb")]))
    seed_t = best(lambda: ab.timed([py, str(seed), str(runs), str(prices)]), 1)
    print(f"{'command':<28}{'wall s':>9}{'cpu s':>9}")
    rows = [("duckdb read_json → parquet", duck), ("trialhouse ingest", ing),
            ("trialhouse summarize", summ), ("seed-002 script", seed_t)]
    if before:
        rows.insert(1, (f"ingest before ({args.before.name})", before))
    for name, (w, c) in rows:
        print(f"{name:<28}{w:>9.2f}{c:>9.2f}")
    both = (ing[0] + summ[0], ing[1] + summ[1])
    print(f"ingest vs duckdb throughput: {duck[0] / ing[0]:.2f}× wall, {duck[1] / ing[1]:.2f}× CPU "
          "(target ≥ 0.5×)")
    print(f"ingest + summarize vs seed script: {seed_t[0] / both[0]:.1f}× faster wall, "
          f"{seed_t[1] / both[1]:.1f}× CPU (target ≥ 5×)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
