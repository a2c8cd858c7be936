"""How much of ingest's per-event cost is the event models (not a test).

Times, on the first ``--lines`` lines of an events file, the validation ingest does (one
``TypeAdapter(list[Json[Event]])`` call per block, building a pydantic model per event)
against merely parsing the same lines into dicts with ``pydantic_core.from_json`` and
no validation at all: the floor for any validator that builds no models.

    .venv/bin/python bench/ingest_bench.py --events 200000 --keep --workdir /tmp/ib
    .venv/bin/python bench/validation_floor.py /tmp/ib/run-200000/events.jsonl
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("events", type=Path)
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    from pydantic import Json, TypeAdapter
    from pydantic_core import from_json

    from runner.events import Event

    with args.events.open("rb") as f:
        lines = [line.rstrip(b"\n") for _, line in zip(range(args.lines), f, strict=False)]
    n = len(lines)
    models = TypeAdapter(list[Json[Event]])

    def cpu_us(fn) -> float:
        gc.collect()
        gc.disable()
        t = time.process_time()
        out = fn()
        spent = time.process_time() - t
        del out
        gc.enable()
        return spent / n * 1e6

    print(f"{n:,} lines; CPU µs per event (of {args.repeat} runs)")
    for _ in range(args.repeat):
        m = cpu_us(lambda: models.validate_python(lines))
        d = cpu_us(lambda: [from_json(line) for line in lines])
        print(f"models (ingest) {m:5.2f}   dicts, no validation {d:5.2f}   difference {m - d:5.2f}")


if __name__ == "__main__":
    main()
