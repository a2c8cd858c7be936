"""The floor of an exact runs-jsonl import (not a test): how much of issue 15's budget is
spent before an import has done anything but read its lines.

The target "ingest ≥ 0.5× DuckDB's throughput" gives an import twice the wall time of
DuckDB's ``read_json`` → Parquet of the same file. DuckDB's own parse is lenient (a string
field takes a number, an integer field takes ``"6"`` or ``1.5``, unknown keys vanish, a
trailing comma passes), so an import that quarantines exactly the lines Python's parser and
the row rules refuse must read more of each line than DuckDB does. This script times, each
as a fresh process on the same file, in one run:

1. ``baseline``: DuckDB's ``read_json`` → Parquet (the target's yardstick);
2. ``start``: the interpreter and the imports any import pays (duckdb, pyarrow, numpy);
3. ``floor``: the least an exact proof reads, with nothing else: the file read and split
   into numbered lines, each line's known fields as raw JSON text (what shows their JSON
   types) and its number of keys (what shows unknown and repeated keys), the values cast from
   that text and written to Parquet by DuckDB's ``COPY`` on both cores. No check is
   evaluated and no escape decoded; no id, cost, quarantine, duplicate, case or rollup is made;
4. ``lenient``: DuckDB's ``read_json`` with the format's columns declared → Parquet, what an
   import that trusts DuckDB's casts would cost (for scale: not exact);
5. ``seed``: the seed-002 summary script on the same file (the second target's yardstick,
   "ingest + summarize ≥ 5× faster": its budget for the ingest alone is smaller still).

    .venv/bin/python bench/runs_jsonl_floor.py                    # 2M lines (generates the file)
    .venv/bin/python bench/runs_jsonl_floor.py --file /tmp/b/runs.jsonl --repeat 3
    .venv/bin/python bench/runs_jsonl_floor.py --file /tmp/b/runs.jsonl --alternatives

``--alternatives`` also times, in this process, the other ways to see what the floor's two
reads see (a value's JSON type, a line's keys), each over the same lines: a typed
``from_json`` (the values alone), ``json_type`` of the 16 paths, ``json_structure``,
``json_keys``, the raw ``from_json``, and msgspec decoding the file into a strict struct
(unknown fields forbidden): none is cheaper than the raw text the floor reads.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_BASELINE = """\
import sys
import duckdb
duckdb.execute("COPY (SELECT * FROM read_json(?, format='newline_delimited')) TO '" + sys.argv[2].replace("'", "''")
               + "' (FORMAT parquet)", [sys.argv[1]])
"""

_START = "import duckdb, numpy, pyarrow\n"

_FLOOR = """\
import sys
sys.path.insert(0, {root!r})
import duckdb
from ingest.formats.runs_jsonl_lines import read_lines
from ingest.formats.runs_jsonl_sql import KNOWN_KEYS

INTS, NUMS = {{"trial", "input_tokens", "output_tokens", "steps"}}, {{"cost_usd", "wall_seconds"}}

def value(k):  # the typed value from the raw text, no check (escapes ignored: less work, not more)
    if k in INTS:
        return f"TRY_CAST(r_{{k}} AS BIGINT) AS {{k}}"
    if k in NUMS:
        return f"TRY_CAST(r_{{k}} AS DOUBLE) AS {{k}}"
    if k == "started_at":
        return f"TRY_CAST(r_{{k}}[2:-2] AS TIMESTAMPTZ) AS {{k}}"
    return f"r_{{k}}[2:-2] AS {{k}}"

lines = read_lines(open(sys.argv[1], "rb").read())
con = duckdb.connect()
con.register("lines", lines)
struct = "{{" + ", ".join(f'"{{k}}": "JSON"' for k in KNOWN_KEYS) + "}}"
raw = ", ".join(f"CAST(j.{{k}} AS VARCHAR) AS r_{{k}}" for k in KNOWN_KEYS)
typed = ", ".join(value(k) for k in KNOWN_KEYS)
con.execute(f\"\"\"COPY (SELECT lineno, {{typed}}, n_keys FROM (
    SELECT lineno, {{raw}}, n_keys FROM (
        SELECT lineno, from_json(text, '{{struct}}') AS j, len(json_keys(text)) AS n_keys FROM lines)))
    TO '\"\"\" + sys.argv[2].replace("'", "''") + "' (FORMAT parquet)")
"""

_LENIENT = """\
import sys
import duckdb
cols = {{"model": "VARCHAR", "harness": "VARCHAR", "harness_version": "VARCHAR", "task_id": "VARCHAR",
        "trial": "BIGINT", "status": "VARCHAR", "input_tokens": "BIGINT", "output_tokens": "BIGINT",
        "steps": "BIGINT", "cost_usd": "DOUBLE", "repo": "VARCHAR", "benchmark": "VARCHAR",
        "system_id": "VARCHAR", "wall_seconds": "DOUBLE", "failure_mode": "VARCHAR", "started_at": "TIMESTAMPTZ"}}
duckdb.execute("COPY (SELECT * FROM read_json(?, format='newline_delimited', columns=?)) TO '"
               + sys.argv[2].replace("'", "''") + "' (FORMAT parquet)", [sys.argv[1], cols])
"""


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_TYPES = {"model": "VARCHAR", "harness": "VARCHAR", "harness_version": "VARCHAR", "task_id": "VARCHAR",
          "trial": "BIGINT", "status": "VARCHAR", "input_tokens": "BIGINT", "output_tokens": "BIGINT",
          "steps": "BIGINT", "cost_usd": "DOUBLE", "repo": "VARCHAR", "benchmark": "VARCHAR",
          "system_id": "VARCHAR", "wall_seconds": "DOUBLE", "failure_mode": "VARCHAR", "started_at": "VARCHAR"}


def _msgspec_struct():
    import msgspec

    fields = [(k, {"VARCHAR": str, "BIGINT": int, "DOUBLE": float}[t] | None, None) for k, t in _TYPES.items()]
    return msgspec.defstruct("RunLine", fields, forbid_unknown_fields=True, gc=False)


def alternatives(runs: Path) -> None:
    """CPU and wall of each way to see a line's JSON types and keys, in this process."""
    import duckdb
    import msgspec

    sys.path.insert(0, str(ROOT))
    from ingest.formats.runs_jsonl_lines import read_lines
    from ingest.formats.runs_jsonl_sql import KNOWN_KEYS

    data = runs.read_bytes()
    con = duckdb.connect()
    con.register("lines", read_lines(data))
    typed = "{" + ", ".join(f'"{k}": "{t}"' for k, t in _TYPES.items()) + "}"
    raw = "{" + ", ".join(f'"{k}": "JSON"' for k in KNOWN_KEYS) + "}"
    paths = "[" + ", ".join(f"'$.{k}'" for k in KNOWN_KEYS) + "]"
    decoder = msgspec.json.Decoder(list[_msgspec_struct()])
    ways = {
        "typed from_json (values only)": lambda: con.sql(
            f"SELECT lineno, unnest(from_json(text, '{typed}')) FROM lines").to_arrow_table(),  # noqa: S608 - this module's constants
        "json_type of 16 paths": lambda: con.sql(
            f"SELECT lineno, json_type(text, {paths}) FROM lines").to_arrow_table(),  # noqa: S608 - this module's constants
        "json_structure": lambda: con.sql(
            "SELECT json_structure(text) AS s, count(*) FROM lines GROUP BY s").fetchall(),
        "json_keys": lambda: con.sql("SELECT lineno, json_keys(text) FROM lines").to_arrow_table(),
        "raw from_json (the floor's)": lambda: con.sql(
            f"SELECT lineno, unnest(from_json(text, '{raw}')) FROM lines").to_arrow_table(),  # noqa: S608 - this module's constants
        "msgspec, strict struct (one core)": lambda: decoder.decode(
            b"[" + data.rstrip(b"\n").replace(b"\n", b",") + b"]"),
    }
    print(f"{'way (in one process)':<36}{'wall s':>9}{'cpu s':>9}")
    for name, fn in ways.items():
        c0, w0 = _cpu(), time.perf_counter()
        fn()
        print(f"{name:<36}{time.perf_counter() - w0:>9.2f}{_cpu() - c0:>9.2f}", flush=True)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=None, help="a runs-jsonl file (default: generate one)")
    ap.add_argument("--lines", type=int, default=2_000_000, help="lines to generate without --file")
    ap.add_argument("--repeat", type=int, default=2, help="runs per command (least CPU kept)")
    ap.add_argument("--alternatives", action="store_true",
                    help="also time the other ways to read a line's types and keys")
    args = ap.parse_args()
    ab, bench = _load("analysis_bench"), _load("runs_jsonl_bench")
    timed = ab.timed
    work = Path(tempfile.mkdtemp(prefix="trialhouse-floor-"))
    runs = args.file or work / "runs.jsonl"
    if args.file is None:
        bench.generate(runs, args.lines)
    print(f"{runs.name} ({runs.stat().st_size / 1e6:.0f} MB); load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    prices = bench.write_prices(work / "prices.json")
    scripts = {"baseline": _BASELINE, "start": _START, "floor": _FLOOR.format(root=str(ROOT)),
               "lenient": _LENIENT.format()}
    out = work / "out.parquet"
    results = {}
    for name, text in scripts.items():
        script = work / f"{name}.py"
        script.write_text(text, encoding="utf-8")
        results[name] = min((timed([sys.executable, str(script), str(runs), str(out)])
                             for _ in range(max(1, args.repeat))), key=lambda r: r[1])
    seed = ab.seed_script(work / "seed_summary.py")
    results["seed"] = timed([sys.executable, str(seed), str(runs), str(prices)])
    print(f"{'step':<10}{'wall s':>9}{'cpu s':>9}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<10}{wall:>9.2f}{cpu:>9.2f}")
    budget = 2 * results["baseline"][0]
    floor_wall, floor_cpu = results["floor"]
    print(f"budget (ingest ≥ 0.5× DuckDB's throughput): {budget:.2f} s wall")
    print(f"the floor alone: {floor_wall:.2f} s wall ({floor_wall / budget:.0%} of the budget), "
          f"{floor_cpu:.2f} CPU s (at least {floor_cpu / (os.cpu_count() or 1):.2f} s of wall "
          f"on {os.cpu_count()} cores kept busy)")
    seed_budget = results["seed"][0] / 5
    print(f"budget (ingest + summarize ≥ 5× faster than the seed script): {seed_budget:.2f} s wall "
          f"for both; the floor alone is {floor_wall / seed_budget:.0%} of it")
    if args.alternatives:
        alternatives(runs)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
