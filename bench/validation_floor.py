"""What validating events costs, three ways (not a test).

Times, on the first ``--lines`` lines of an events file, in blocks of 14k lines (about
ingest's 4 MB blocks):
- pydantic models: the contract's own validation (one ``TypeAdapter(list[Json[Event]])``
  call per block, a model per event), which ingest used before the compiled contract;
- compiled: what ingest does now, ``ingest.fastdecode.decode_block`` (msgspec structs
  generated from the models, plus the timestamps checked and converted by Arrow);
- dicts, no validation: ``pydantic_core.from_json`` per line, the floor for any validator
  that builds Python dicts.

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

    from contract.events import Event
    from ingest.fastdecode import decode_block

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

    blocks = [lines[i : i + 14_000] for i in range(0, n, 14_000)]
    models.validate_python(lines[:10]), decode_block(lines[:10])  # warm-up: lazy imports, Arrow's regex
    print(f"{n:,} lines; CPU µs per event ({args.repeat} runs)")
    for _ in range(args.repeat):
        m = cpu_us(lambda: [models.validate_python(b) for b in blocks])
        c = cpu_us(lambda: [decode_block(b) for b in blocks])
        d = cpu_us(lambda: [[from_json(line) for line in b] for b in blocks])
        print(f"pydantic models {m:5.2f}   compiled (ingest) {c:5.2f}   dicts, no validation {d:5.2f}   "
              f"models / compiled {m / c:4.1f}x")


if __name__ == "__main__":
    main()
