"""``make fuzz``: the long seeded fuzz run of ingest and manifest validation (``fuzzlib``).

    .venv/bin/python tests/fuzz/fuzz.py --events 520 --manifests 449 --seed 14

Prints one line per check and exits 1 on any finding: a traceback, a good line lost, a bad
line accepted, a line neither accepted nor quarantined, an exit code that does not match the
warehouse, a warehouse that summarize/tables/sql cannot read, a manifest problem without a
location, or a manifest ``validate`` accepts that a run could not use.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=520, help="mutated event files (default 520)")
    ap.add_argument("--manifests", type=int, default=449, help="mutated manifests (default 449)")
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
    ok = ev.ok() and man.ok()
    print(f"{'OK' if ok else 'FINDINGS'}: {len(ev.tracebacks) + len(man.tracebacks)} tracebacks, "
          f"{ev.lost_good} lost good lines, {ev.bad_accepted} bad lines accepted, "
          f"warehouse {'always readable' if not ev.unreadable else 'unreadable ' + str(len(ev.unreadable)) + ' times'}"
          f"; inputs in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
