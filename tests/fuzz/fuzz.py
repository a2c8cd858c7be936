"""``make fuzz``: the long seeded fuzz run of ingest and manifest validation (``fuzzlib``).

    .venv/bin/python tests/fuzz/fuzz.py --events 520 --manifests 449 --runs-jsonl 60 --foreign 500 --hostile 40 --analysis 30 --seed 14

Prints one line per check and exits 1 on any finding: a traceback, a good line lost, a bad
line accepted, a line neither accepted nor quarantined, an exit code that does not match the
warehouse, a warehouse that summarize/tables/sql cannot read, a manifest problem without a
location, a manifest ``validate`` accepts that a run could not use, or a mutated runs-jsonl
file on which the columnar path and the row path disagree (``runs_jsonl_diff``), or a
mutated foreign result (Harbor, Terminal-Bench, SWE-bench, mini-swe-agent, Inspect) whose
ingest raises a traceback (``foreign_fuzz``), or a hostile file (a symlink out of its folder, an
id that is a path, a sparse file, a decompression bomb, a duplicate id, a FIFO, a YAML alias
bomb, 20,000-200,000 configurations, a hostile review CSV) that is not quarantined or refused
in one clear line, takes 500 MB or more, or whose canary outside the folder is read or stored
(``hostile_files``; docs/security.md, "Foreign files"), or an analysis command that raises a traceback or
prints ``--json`` that does not parse on a warehouse of a random design (``analysis_fuzz``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path


def _sibling(name: str):
    """A module of this folder, loaded by path (tests/fuzz is not a package)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


fuzzlib = _sibling("fuzzlib")
runs_jsonl_diff = _sibling("runs_jsonl_diff")
foreign_fuzz = _sibling("foreign_fuzz")
hostile_files = _sibling("hostile_files")
analysis_fuzz = _sibling("analysis_fuzz")


def _show(findings: list[str], most: int) -> None:
    """The first ``most`` findings, indented under their section's line."""
    for line in findings[:most]:
        print("  " + line.replace("\n", "\n  "))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=520, help="mutated event files (default 520)")
    ap.add_argument("--manifests", type=int, default=449, help="mutated manifests (default 449)")
    ap.add_argument("--runs-jsonl", type=int, default=60,
                    help="mutated runs-jsonl files of 4,000 lines, columnar vs row path (default 60)")
    ap.add_argument("--foreign", type=int, default=500,
                    help="mutated copies of the foreign fixtures, ingested (default 500)")
    ap.add_argument("--hostile", type=int, default=40,
                    help="hostile foreign and review files, every shape then random ones (default 40)")
    ap.add_argument("--analysis", type=int, default=30,
                    help="warehouses of random designs, every analysis command run on each (default 30)")
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the inputs and warehouse here")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="trialhouse-fuzz-"))
    t0 = time.monotonic()
    ev = fuzzlib.fuzz_events(args.events, args.seed, work / "events", progress=True)
    print(f"event files: {ev.summary()} ({time.monotonic() - t0:.0f} s)")
    _show(ev.details + ev.tracebacks + ev.unreadable + ev.exit_mismatch, 20)
    t1 = time.monotonic()
    man = fuzzlib.fuzz_manifests(args.manifests, args.seed, work / "manifests")
    print(f"manifests: {man.summary()} ({time.monotonic() - t1:.0f} s)")
    _show(man.tracebacks + man.unlocated + man.accepted_unusable, 20)
    t2 = time.monotonic()
    diffs = runs_jsonl_diff.fuzz(args.runs_jsonl, 4000, args.seed, work / "runs-jsonl")
    print(f"runs-jsonl files: {args.runs_jsonl}, {len(diffs)} difference(s) between the columnar "
          f"and the row path ({time.monotonic() - t2:.0f} s)")
    _show(diffs, 20)
    t3 = time.monotonic()
    crashes = foreign_fuzz.fuzz(args.foreign, args.seed, work / "foreign")
    print(f"foreign results: {args.foreign} mutated copies, {len(crashes)} traceback(s) "
          f"({time.monotonic() - t3:.0f} s)")
    _show(crashes, 10)
    t5 = time.monotonic()
    hostile = hostile_files.fuzz(args.hostile, args.seed, work / "hostile")
    print(f"hostile files: {args.hostile} of {len(hostile_files.SHAPES)} shapes, {len(hostile)} finding(s) "
          f"({time.monotonic() - t5:.0f} s)")
    _show(hostile, 10)
    t4 = time.monotonic()
    analysis = analysis_fuzz.fuzz(args.analysis, args.seed, work / "analysis")
    print(f"analysis: {args.analysis} warehouses × {len(analysis_fuzz.COMMANDS)} commands, "
          f"{len(analysis)} finding(s) ({time.monotonic() - t4:.0f} s)")
    _show(analysis, 10)
    ok = ev.ok() and man.ok() and not diffs and not crashes and not analysis and not hostile
    print(f"{'OK' if ok else 'FINDINGS'}: {len(ev.tracebacks) + len(man.tracebacks) + len(crashes)} tracebacks, "
          f"{len(analysis)} analysis findings, {len(hostile)} hostile-file findings, "
          f"{ev.lost_good} lost good lines, {ev.bad_accepted} bad lines accepted, "
          f"{len(diffs)} runs-jsonl path differences, "
          f"warehouse {'always readable' if not ev.unreadable else 'unreadable ' + str(len(ev.unreadable)) + ' times'}"
          f"; inputs in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
