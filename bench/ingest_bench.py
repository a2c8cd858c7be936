"""Ingest throughput and peak memory vs DuckDB's own read_json → Parquet, same file, same run.

Not a test. Generates an events.jsonl of ``--events`` lines (realistic trials: start,
attempt, stage start/finish, checkpoint, grading, judgment, flag, attempt/trial finish),
then times, each in a fresh child process (peak RSS from ``os.wait4``):

1. ``trialhouse`` ingest (``ingest.api.ingest_paths``) into a new warehouse;
2. DuckDB ``COPY (SELECT * FROM read_json(file)) TO parquet`` of the same file.

Usage: .venv/bin/python bench/ingest_bench.py --events 10000000 [--sizes 1000000,10000000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _eventgen():
    spec = importlib.util.spec_from_file_location("bench_eventgen", REPO / "tests" / "ingest" / "eventgen.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def generate(path: Path, n_events: int) -> None:
    """Write ``n_events`` lines: one run_started, then 10-event trials (models → string templates)."""
    sys.path.insert(0, str(REPO))
    from contract.events import dump_event

    gen = _eventgen()
    cases = [f"case-{i:03d}" for i in range(50)]
    variants = ("base", "cand", "alt")
    s = gen.Seq("bench-run")
    head = dump_event(gen.run_started(s, variants=variants, cases=cases, repetitions=5))
    t = gen.Seq("bench-run")
    ts0 = gen.T0
    templates = []
    for e in gen.trial_events(t, "TRIAL", "CASE", "base", 1):
        line = dump_event(e)
        line = line.replace("{", "{{").replace("}", "}}")
        line = line.replace(f'"seq":{e.seq},', '"seq":{seq},', 1)
        line = line.replace(json.dumps(e.ts.isoformat().replace("+00:00", "Z")), '"{ts}"', 1)
        line = line.replace('"TRIAL"', '"{tid}"').replace('"CASE"', '"{case}"')
        line = line.replace('"variant":"base"', '"variant":"{var}"').replace('"cfg-base"', '"cfg-{var}"')
        templates.append(line + "\n")
    assert all("{seq}" in x and "{ts}" in x for x in templates), "template markers missing"
    seq = 1
    with path.open("w", buffering=1 << 20) as f:
        f.write(head + "\n")
        trial = 0
        while seq < n_events:
            tid = f"bench-run-{trial:08d}"
            case, var = cases[trial % len(cases)], variants[(trial // len(cases)) % len(variants)]
            ts = (ts0 + timedelta(seconds=seq)).strftime("%Y-%m-%dT%H:%M:%SZ")
            for tpl in templates:
                if seq >= n_events:
                    break
                f.write(tpl.format(seq=seq, ts=ts, tid=tid, case=case, var=var))
                seq += 1
            trial += 1


def _child(code: str) -> tuple[float, float, int, int]:
    """Run Python ``code`` in a child; (wall s, CPU s, peak RSS bytes, exit code).

    CPU seconds (user + system, all threads) are the steadier number on a shared machine.
    """
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], cwd=REPO)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)


def run_ingest(events: Path, work: Path) -> tuple[float, float, int]:
    wh = work / "wh" / "bench.duckdb"
    shutil.rmtree(wh.parent, ignore_errors=True)
    code = (
        "from pathlib import Path\nfrom ingest.api import ingest_paths\n"
        f"r = ingest_paths([Path({str(events)!r})], Path({str(wh)!r}), allow_quarantine=True)\n"
        "assert r.quarantined == 0, r.quarantined\nprint('  ingest rows:', r.rows)\n"
    )
    wall, cpu, rss, rc = _child(code)
    if rc != 0:
        raise SystemExit(f"ingest child failed with {rc}")
    return wall, cpu, rss


def run_duckdb(events: Path, work: Path) -> tuple[float, float, int]:
    out = work / "duckdb.parquet"
    out.unlink(missing_ok=True)
    src, dst = str(events).replace("'", "''"), str(out).replace("'", "''")
    sql = (
        f"COPY (SELECT * FROM read_json('{src}', format = 'newline_delimited')) "  # noqa: S608
        f"TO '{dst}' (FORMAT parquet, COMPRESSION zstd)"
    )
    code = f"import duckdb\nduckdb.connect().execute({sql!r})\n"
    wall, cpu, rss, rc = _child(code)
    if rc != 0:
        raise SystemExit(f"duckdb child failed with {rc}")
    return wall, cpu, rss


def bench(n: int, work: Path) -> dict:
    events = work / f"run-{n}" / "events.jsonl"
    events.parent.mkdir(parents=True, exist_ok=True)
    if not events.exists():
        t0 = time.perf_counter()
        generate(events, n)
        print(f"generated {n:,} events ({events.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.0f}s")
    size = events.stat().st_size
    load_before = os.getloadavg()[0]
    iw, icpu, irss = run_ingest(events, work)
    dw, dcpu, drss = run_duckdb(events, work)
    return {
        "events": n, "mb": size / 1e6,
        "load1_before": load_before, "load1_after": os.getloadavg()[0],
        "ingest_s": iw, "ingest_cpu_s": icpu, "ingest_eps": n / iw, "ingest_mbps": size / 1e6 / iw,
        "ingest_rss_mb": irss / 1e6,
        "duckdb_s": dw, "duckdb_cpu_s": dcpu, "duckdb_eps": n / dw, "duckdb_mbps": size / 1e6 / dw,
        "duckdb_rss_mb": drss / 1e6,
        "ratio": dw / iw, "ratio_cpu": dcpu / icpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--sizes", default="", help="comma-separated event counts to compare peak RSS (default: --events only)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/trialhouse-ingest-bench"))
    ap.add_argument("--keep", action="store_true", help="keep generated files")
    args = ap.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in args.sizes.split(",") if x] or [args.events]
    print(f"machine: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {datetime.now(UTC):%Y-%m-%d}")
    rows = []
    for n in sizes:
        r = bench(n, args.workdir)
        rows.append(r)
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()}))
    print()
    print("| events | file MB | ingest wall s (CPU s) | ingest ev/s | ingest MB/s | ingest peak RSS MB "
          "| duckdb wall s (CPU s) | duckdb ev/s | duckdb MB/s | duckdb peak RSS MB "
          "| ingest/duckdb throughput (wall) | (CPU) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['events']:,} | {r['mb']:,.0f} | {r['ingest_s']:.1f} ({r['ingest_cpu_s']:.1f}) | "
              f"{r['ingest_eps']:,.0f} | {r['ingest_mbps']:.1f} | {r['ingest_rss_mb']:,.0f} | "
              f"{r['duckdb_s']:.1f} ({r['duckdb_cpu_s']:.1f}) | {r['duckdb_eps']:,.0f} | {r['duckdb_mbps']:.1f} | "
              f"{r['duckdb_rss_mb']:,.0f} | {r['ratio']:.2f}x | {r['ratio_cpu']:.2f}x |")
    if not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
