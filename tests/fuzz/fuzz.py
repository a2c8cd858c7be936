"""``make fuzz``: the long seeded fuzz run of ingest and manifest validation (``fuzzlib``).

    .venv/bin/python tests/fuzz/fuzz.py --events 520 --manifests 449 --runs-jsonl 60 --foreign 500 --analysis 30 --seed 14

Prints one line per check and exits 1 on any finding: a traceback, a good line lost, a bad
line accepted, a line neither accepted nor quarantined, an exit code that does not match the
warehouse, a warehouse that summarize/tables/sql cannot read, a manifest problem without a
location, a manifest ``validate`` accepts that a run could not use, or a mutated runs-jsonl
file on which the columnar path and the row path disagree (``runs_jsonl_diff``), or a
mutated foreign result (Harbor, Terminal-Bench, SWE-bench, mini-swe-agent, Inspect) whose
ingest raises a traceback (``foreign_fuzz``), or an analysis command that raises a traceback or
prints ``--json`` that does not parse on a warehouse of a random design (``analysis_fuzz``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

_spec = importlib.util.spec_from_file_location("fuzzlib", Path(__file__).with_name("fuzzlib.py"))
fuzzlib = importlib.util.module_from_spec(_spec)
sys.modules["fuzzlib"] = fuzzlib  # dataclasses look their module up
_spec.loader.exec_module(fuzzlib)
_spec = importlib.util.spec_from_file_location("runs_jsonl_diff", Path(__file__).with_name("runs_jsonl_diff.py"))
runs_jsonl_diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(runs_jsonl_diff)
_spec = importlib.util.spec_from_file_location("foreign_fuzz", Path(__file__).with_name("foreign_fuzz.py"))
foreign_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(foreign_fuzz)
_spec = importlib.util.spec_from_file_location("analysis_fuzz", Path(__file__).with_name("analysis_fuzz.py"))
analysis_fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(analysis_fuzz)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=520, help="mutated event files (default 520)")
    ap.add_argument("--manifests", type=int, default=449, help="mutated manifests (default 449)")
    ap.add_argument("--runs-jsonl", type=int, default=60,
                    help="mutated runs-jsonl files of 4,000 lines, columnar vs row path (default 60)")
    ap.add_argument("--foreign", type=int, default=500,
                    help="mutated copies of the foreign fixtures, ingested (default 500)")
    ap.add_argument("--analysis", type=int, default=30,
                    help="warehouses of random designs, every analysis command run on each (default 30)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the inputs and warehouse here")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="trialhouse-fuzz-"))
    t0 = time.monotonic()
    ev = fuzzlib.fuzz_events(args.events, args.seed, work / "events", progress=True)
    print(f"event files: {ev.summary()} ({time.monotonic() - t0:.0f} s)")
    for line in (ev.details + ev.tracebacks + ev.unreadable + ev.exit_mismatch)[:20]:
        print("  " + line.replace("\n", "\n  "))
    t1 = time.monotonic()
    man = fuzzlib.fuzz_manifests(args.manifests, args.seed, work / "manifests")
    print(f"manifests: {man.summary()} ({time.monotonic() - t1:.0f} s)")
    for line in (man.tracebacks + man.unlocated + man.accepted_unusable)[:20]:
        print("  " + line.replace("\n", "\n  "))
    t2 = time.monotonic()
    diffs = runs_jsonl_diff.fuzz(args.runs_jsonl, 4000, args.seed, work / "runs-jsonl")
    print(f"runs-jsonl files: {args.runs_jsonl}, {len(diffs)} difference(s) between the columnar "
          f"and the row path ({time.monotonic() - t2:.0f} s)")
    for line in diffs[:20]:
        print("  " + line.replace("\n", "\n  "))
    t3 = time.monotonic()
    crashes = foreign_fuzz.fuzz(args.foreign, args.seed, work / "foreign")
    print(f"foreign results: {args.foreign} mutated copies, {len(crashes)} traceback(s) "
          f"({time.monotonic() - t3:.0f} s)")
    for line in crashes[:10]:
        print("  " + line.replace("\n", "\n  "))
    t4 = time.monotonic()
    analysis = analysis_fuzz.fuzz(args.analysis, args.seed, work / "analysis")
    print(f"analysis: {args.analysis} warehouses × {len(analysis_fuzz.COMMANDS)} commands, "
          f"{len(analysis)} finding(s) ({time.monotonic() - t4:.0f} s)")
    for line in analysis[:10]:
        print("  " + line.replace("\n", "\n  "))
    ok = ev.ok() and man.ok() and not diffs and not crashes and not analysis
    print(f"{'OK' if ok else 'FINDINGS'}: {len(ev.tracebacks) + len(man.tracebacks) + len(crashes)} tracebacks, "
          f"{len(analysis)} analysis findings, "
          f"{ev.lost_good} lost good lines, {ev.bad_accepted} bad lines accepted, "
          f"{len(diffs)} runs-jsonl path differences, "
          f"warehouse {'always readable' if not ev.unreadable else 'unreadable ' + str(len(ev.unreadable)) + ' times'}"
          f"; inputs in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
