"""Analysis benchmark (not a test): whole-process timings against the seed-002 script.

Generates a synthetic warehouse (default 1,000,000 trials: 4 models × 3 harnesses ×
16,667 tasks × 5 reps would be odd, so 4 × 3 × 16,667 → we use tasks = N / (12 · 5)),
exports the same trials as runs-jsonl, then times, as separate processes including
start-up, ``python -m trialhouse summarize|compare|pareto|consistency|familiarity --json``
(and ``summarize --by repository``, whose medians must scan the trial rows), a bare
DuckDB query as the yardstick, and the pure-Python seed summary script extracted at run
time from ../shared/seeds.

    .venv/bin/python bench/analysis_bench.py            # 1M trials
    .venv/bin/python bench/analysis_bench.py --trials 10000000
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def seed_script(dest: Path) -> Path:
    files = sorted((ROOT.parent / "shared" / "seeds").glob("002_*.txt"))
    if not files:
        sys.exit("bench: ../shared/seeds/002_*.txt not found; the baseline script lives there")
    text = files[0].read_text(encoding="utf-8")
    start = text.index("#!/usr/bin/env python3")
    tail = "main(sys.argv[1], sys.argv[2])"
    end = text.index(tail, start) + len(tail)
    dest.write_text(text[start:end] + "\n", encoding="utf-8")
    return dest


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + sys of the child) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def export_runs_jsonl(db_path: Path, out: Path) -> None:
    """The warehouse's complete trials in the seed script's input format (DuckDB COPY)."""
    from warehouse import db

    con = db.open(db_path, read_only=True)
    con.execute(f"""
COPY (
  SELECT model, harness, harness_version, case_id AS task_id, repetition AS trial,
         CASE outcome WHEN 'accepted' THEN 'solved' WHEN 'infra_error' THEN 'infra_error'
              ELSE 'failed' END AS status,
         input_tokens, output_tokens, steps
  FROM trials WHERE complete
) TO '{str(out).replace("'", "''")}' (FORMAT json)
""")  # noqa: S608 -- our own temp path
    con.close()


DUCKDB_ALONE = """\
import json, sys
import duckdb
valid = "outcome NOT IN ('infra_error', 'invalid')"
rows = duckdb.execute(f\"\"\"
SELECT model, harness, harness_version,
       count(*) FILTER (WHERE {valid}) AS valid,
       count(*) FILTER (WHERE outcome = 'accepted') AS solved,
       count(*) FILTER (WHERE outcome = 'infra_error') AS infra,
       median(steps) FILTER (WHERE {valid}) AS med_steps,
       median(input_tokens + output_tokens) FILTER (WHERE {valid}) AS med_tokens,
       sum(cost_usd) AS cost
FROM read_parquet(? || '/*/*.parquet') WHERE complete GROUP BY ALL ORDER BY ALL
\"\"\", [sys.argv[1]]).fetchall()
print(json.dumps(rows, default=str))
"""
"""Reference point: the seed's columns (no task-level stats, no common-task set, no
quantiles) as one DuckDB query in a bare Python process."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=4)
    ap.add_argument("--harnesses", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs per command (the one with least CPU is kept)")
    ap.add_argument("--dir", type=Path, default=None, help="keep the data here")
    args = ap.parse_args()

    import numpy as np

    from tests.support.synthetic_warehouse import Spec, generate

    work = args.dir or Path(tempfile.mkdtemp(prefix="trialhouse-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    tasks = max(1, args.trials // (args.models * args.harnesses * args.reps))
    spec = Spec(models=args.models, harnesses=args.harnesses, tasks=tasks, reps=args.reps,
                annotate=1000)
    wh = work / "bench.duckdb"
    t0 = time.perf_counter()
    rows = generate(wh, spec)
    print(f"generated {rows['trials']:,} trials ({args.models} models × {args.harnesses} "
          f"harnesses × {tasks} tasks × {args.reps} reps) in {time.perf_counter() - t0:.1f} s")
    # Part of the write above; timed again here because summarize reads what it stores.
    from warehouse import db, rollup

    t0 = time.perf_counter()
    rollup.build(db.parquet_root(wh), f"run_id={spec.run_id}")
    print(f"rollups rebuilt in {time.perf_counter() - t0:.2f} s "
          "(task_rollup + config_rollup, part of every write of a run's trials)")
    runs = work / "runs.jsonl"
    export_runs_jsonl(wh, runs)
    prices = work / "prices.json"
    pin = np.linspace(3.0, 0.5, args.models)
    prices.write_text(json.dumps({f"model-{chr(97 + m)}": {
        "input_per_mtok": float(pin[m]), "output_per_mtok": float(pin[m] * 5)}
        for m in range(args.models)}))
    script = seed_script(work / "seed_summary.py")

    py = sys.executable
    cmds = {
        "summarize": [py, "-m", "trialhouse", "summarize", "--json", "-w", str(wh)],
        # A slice selects trials within the run, so its medians scan the trial rows.
        "summarize --by": [py, "-m", "trialhouse", "summarize", "--json", "-w", str(wh),
                           "--by", "repository"],
        "compare": [py, "-m", "trialhouse", "compare", "--json", "-w", str(wh),
                    "--baseline", "model-a+harness-0", "--candidate", "model-b+harness-0"],
        "pareto": [py, "-m", "trialhouse", "pareto", "--json", "-w", str(wh)],
        "consistency": [py, "-m", "trialhouse", "consistency", "--json", "-w", str(wh)],
        "familiarity": [py, "-m", "trialhouse", "familiarity", "--json", "-w", str(wh)],
    }
    # The yardstick, "about what DuckDB alone reaches over Parquet": the seed
    # script's columns as one DuckDB query over the trials Parquet, in a bare Python process.
    alone = work / "duckdb_alone.py"
    alone.write_text(DUCKDB_ALONE, encoding="utf-8")
    cmds["duckdb alone"] = [py, str(alone), str(wh.with_suffix(".parquet") / "trials")]
    results = {}
    seed_wall, seed_cpu = min((timed([py, str(script), str(runs), str(prices)])
                               for _ in range(max(1, args.repeat - 1))), key=lambda r: r[1])
    print(f"{'command':<16}{'wall s':>9}{'cpu s':>9}{'vs seed (wall)':>16}"
          f"{'vs seed (cpu)':>15}")
    print(f"{'seed script':<16}{seed_wall:>9.2f}{seed_cpu:>9.2f}{'1.0×':>16}{'1.0×':>15}")
    for name, argv in cmds.items():
        wall, cpu = min((timed(argv) for _ in range(args.repeat)), key=lambda r: r[1])
        results[name] = (wall, cpu)
        print(f"{name:<16}{wall:>9.2f}{cpu:>9.2f}{seed_wall / wall:>15.1f}×"
              f"{seed_cpu / cpu:>14.1f}×")
    start = min(timed([py, "-m", "trialhouse", "summarize", "--help"])
                for _ in range(args.repeat))
    print(f"{'start-up':<16}{start[0]:>9.2f}{start[1]:>9.2f}   (trialhouse summarize --help)")
    target = 30 if args.trials >= 10_000_000 else 20
    ratio = seed_wall / results["summarize"][0]
    print(f"summarize speed-up {ratio:.1f}× wall, {seed_cpu / results['summarize'][1]:.1f}× "
          f"CPU (target ≥ {target}×); max CPU "
          f"{max(c for _, c in results.values()):.2f} s (target < 2 s at 1M)")


if __name__ == "__main__":
    main()
