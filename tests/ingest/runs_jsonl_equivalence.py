"""runs-jsonl import equivalence across code versions (a tool, not a test module).

Builds one warehouse per runs-jsonl input with the ``ingest`` found first on ``sys.path``
(run it inside an old checkout to build with the old code), then compares two builds
table by table (rollups too) with DuckDB ``EXCEPT ALL`` in both directions (every column except
``ingest_batch_id`` and ``ingested_at``):

    .venv/bin/python tests/ingest/runs_jsonl_equivalence.py inputs /tmp/eqj/inputs /tmp/b/runs.jsonl
    (cd /tmp/old && /work/main/.venv/bin/python /work/main/tests/ingest/runs_jsonl_equivalence.py \
        build /tmp/eqj/inputs /tmp/eqj/old)
    .venv/bin/python tests/ingest/runs_jsonl_equivalence.py build /tmp/eqj/inputs /tmp/eqj/new
    .venv/bin/python tests/ingest/runs_jsonl_equivalence.py diff /tmp/eqj/old /tmp/eqj/new

Inputs: the example log, the awkward file of the columnar test (bad lines, odd but valid
lines, CRLF, blanks, duplicates, repeated keys), the scale test's 50k-line log with bad
lines scattered, each with both test price files, plus any file given.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SKIP = ("ingest_batch_id", "ingested_at")


def make_inputs(dst: Path, extra: list[Path]) -> None:
    import random

    sys.path.insert(0, str(REPO))
    from tests.ingest.formats import test_formats_runs_jsonl_columnar as col
    from tests.ingest.formats import test_formats_runs_jsonl_scale as scale

    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "examples" / "foreign" / "runs.jsonl", dst / "example.jsonl")
    awkward = col._file(dst, 6000)
    awkward.rename(dst / "awkward.jsonl")
    rng = random.Random(2026)
    lines = [json.dumps(scale._good(rng, m, h, t, k)) for m in range(4) for h in range(3)
             for t in range(scale.LINES // 60) for k in range(1, 6)]
    for i, spot in enumerate(sorted(rng.sample(range(10, len(lines)), 240))):
        make, _why = scale.BAD[i % len(scale.BAD)]
        lines[spot] = lines[spot - 3] if i % 10 == 9 else "" if i % 10 == 8 else make(json.loads(lines[spot]))
    (dst / "scale.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (dst / "prices-a.json").write_text(json.dumps({"models": {
        "model-0": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
        "model-1": [{"input_per_mtok": 1.0, "output_per_mtok": 2.0, "effective_from": "2026-01-01"},
                    {"input_per_mtok": 2.0, "output_per_mtok": 4.0, "effective_from": "2026-03-01"}]}}))
    (dst / "prices-b.json").write_text(json.dumps(
        {f"model-{c}": {"input_per_mtok": 3.0 - i * 0.5, "output_per_mtok": 15.0 - i * 2} for i, c in enumerate("abcd")}))
    for p in extra:
        os.symlink(p.resolve(), dst / p.name)


def build(inputs: Path, out: Path) -> None:
    sys.path.insert(0, os.getcwd())
    from ingest.api import ingest_paths

    for src in sorted(inputs.glob("*.jsonl")):
        for prices in (None, *sorted(inputs.glob("prices-*.json"))):
            wh = out / f"{src.stem}-{prices.stem if prices else 'none'}" / "w.duckdb"
            shutil.rmtree(wh.parent, ignore_errors=True)
            ingest_paths([src], wh, format="runs-jsonl", prices=prices, allow_quarantine=True)
            print(wh.parent.name, flush=True)


def diff(a: Path, b: Path) -> int:
    import duckdb

    sys.path.insert(0, str(REPO))
    from warehouse.schema import DERIVED, TABLES

    bad = 0
    for wa in sorted(a.glob("*/w.duckdb")):
        wb = b / wa.parent.name / "w.duckdb"
        con = duckdb.connect()
        con.execute(f"ATTACH '{wa}' AS a (READ_ONLY)")
        con.execute(f"ATTACH '{wb}' AS b (READ_ONLY)")
        rows = 0
        for name in (*TABLES, *DERIVED):
            cols = [r[0] for r in con.execute(f"DESCRIBE a.{name}").fetchall() if r[0] not in SKIP]
            sel = ", ".join(cols)
            n = con.execute(f"SELECT count(*) FROM a.{name}").fetchone()[0]
            rows += n
            for x, y in (("a", "b"), ("b", "a")):
                d = con.execute(f"SELECT count(*) FROM (SELECT {sel} FROM {x}.{name} "
                                f"EXCEPT ALL SELECT {sel} FROM {y}.{name})").fetchone()[0]
                if d:
                    bad += 1
                    print(f"{wa.parent.name}: {name}: {d} row(s) only in {x}")
        print(f"{wa.parent.name}: {rows} rows compared", flush=True)
    print("EQUAL" if not bad else f"DIFFERENT ({bad})")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "inputs":
        make_inputs(Path(args[0]), [Path(p) for p in args[1:]])
    elif cmd == "build":
        build(Path(args[0]), Path(args[1]))
    else:
        sys.exit(diff(Path(args[0]), Path(args[1])))
