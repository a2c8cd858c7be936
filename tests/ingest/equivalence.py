"""Ingest output equivalence across code versions (a tool, not a test module).

Builds one warehouse per input (one-process and forced two-process ingest) from a
fixed corpus, then compares two such builds table by table with DuckDB ``EXCEPT ALL``
in both directions (every column except ``ingest_batch_id`` and ``ingested_at``).
Used to check that a performance change leaves the tables' content byte-for-byte equal:

    # inputs (once): a deterministic file of awkward lines + whatever you pass
    .venv/bin/python tests/ingest/equivalence.py inputs /tmp/eq/inputs /tmp/b/run-200k/events.jsonl
    # build with the old code (a checkout of the old commit) and with the new one
    (cd /tmp/old && /work/main/.venv/bin/python /work/main/tests/ingest/equivalence.py build /tmp/eq/inputs /tmp/eq/old)
    .venv/bin/python tests/ingest/equivalence.py build /tmp/eq/inputs /tmp/eq/new
    .venv/bin/python tests/ingest/equivalence.py diff /tmp/eq/old /tmp/eq/new

``build`` imports ``ingest`` from the current directory first, so running it inside an
old checkout builds with the old code.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRICES = REPO / "examples" / "foreign" / "prices.json"


def _awkward_lines(clean: bool = False) -> list[bytes]:
    """Every shape of line the fast paths must treat exactly like the model path does."""
    sys.path.insert(0, str(REPO))
    import importlib.util

    spec = importlib.util.spec_from_file_location("eq_eventgen", Path(__file__).with_name("eventgen.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    from contract.events import dump_event
    from contract.run_events import CaseValidated, ControlResult, RunFinished
    from contract.stage_events import Usage
    from contract.trial_events import Budget

    s = gen.Seq("eq-run")
    rs = gen.run_started(s, variants=("model-a", "model-b", "x"), cases=("c1", "c2", "c3"))
    d = json.loads(dump_event(rs))
    for v in d["variants"]:  # priced models, and a nested "ts" key the envelope must not take
        v["model"] = v["variant"]
        v["settings"] = {"ts": "2001-01-01T00:00:00Z", "nested": {"ts": 5}}
    out = [json.dumps(d, separators=(",", ":")).encode()]
    out += [dump_event(e).encode() for e in (
        CaseValidated(**s.env(), case_id="c1", ok=True, baseline={"t1": "failed"}),
        ControlResult(**s.env(), case_id="c1", control="negative", criterion_id="t1", layer="target",
                         exit_code=1, verdict="failed", expected="failed", ok=True, duration_s=0.2),
    )]
    ts_forms = [
        "2026-03-02T09:00:01.5+02:00", "2026-03-02T09:00:01.123456Z", "2026-03-02 09:00:01Z",
        "2026-03-02T09:00:01", "2026-03-02T09:00:01.1234567Z", "2026-03-02t09:00:01z",
        "2026-03-02T09:00:01+0530", "2026-03-02T09:00:01-07:00", "2300-01-01T00:00:00.000001Z",
        "1969-12-31T23:59:59.999999Z", "2026-03-02", "2026-03-02T09:00Z",
        1772442001, 1772442001.25, "1772442001", "2026-03-02T09:00:01.000000+00:00",
    ]
    n = 0
    for rep in (1, 2):
        for case in ("c1", "c2", "c3"):
            for var in ("model-a", "model-b", "x"):
                n += 1
                tid = f"eq-run-t{n:03d}"
                usage = Usage(input_tokens=1000 + n, output_tokens=20 * n, cache_read_tokens=n if n % 2 else None,
                                 cost_usd=0.5 if n % 5 == 0 else None, steps=n, source="simulated")
                evs = gen.trial_events(s, tid, case, var, rep, outcome=None if n == 7 else "accepted", usage=usage)
                for i, e in enumerate(evs):
                    d = json.loads(dump_event(e))
                    form = ts_forms[(n * 3 + i) % len(ts_forms)]
                    d["ts"] = form
                    if i % 4 == 1:  # ts last, spaced separators
                        d["ts"] = d.pop("ts")
                        line = json.dumps(d).encode()
                    elif i % 4 == 2:  # non-ASCII escaped and raw
                        if d["event"] == "judgment":
                            d["rationale"] = 'said "ts":"2000-01-01T00:00:00Z" \u00e9 \u001b'
                        line = json.dumps(d, ensure_ascii=(n % 2 == 0), separators=(",", ":")).encode()
                    else:
                        line = json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()
                    if d["event"] == "flag":
                        d["path"] = "ts"
                        line = json.dumps(d, separators=(",", ":")).encode()
                    if d["event"] == "grading" and n % 3 == 0:  # lax values only pydantic takes
                        line = line.replace(b'"attempt":1', b'"attempt":1.0', 1).replace(b'"timed_out":false', b'"timed_out":0', 1)
                    if d["event"] == "stage_finished" and n % 4 == 1:  # a repeated key (the last one counts)
                        line = line[:-1] + b',"exit_code":3}'
                    if d["event"] == "checkpoint" and n == 5:  # a date that does not exist
                        line = line.replace(b'"ts":"2026-03-02', b'"ts":"2026-02-30', 1)
                    out.append(line)
    # duplicates (identical and conflicting), out of order (not when ``clean``: the split declines those)
    if not clean:
        out.append(out[5])
        out.append(json.dumps({**json.loads(out[6]), "trial_id": "eq-run-other"}).encode())
        out.append(out.pop(12))
    # bad lines, versions, a far seq, CRLF
    out += [
        b"not json", b"\x00\x01binary", b'{"schema_version":1,"event":"nope","seq":1,"run_id":"eq-run","ts":"2026-01-01T00:00:00Z"}',
        b'{"schema_version":2,"event":"flag","seq":999,"run_id":"eq-run","ts":"2026-01-01T00:00:00Z"}',
        b'{"run_id":"eq-run","trial_id":null,"seq":5000,"type":"budget","time":"2026-03-02T10:00:00Z",'
        b'"type2":1}',
        b'{"run_id":"eq-run","trial_id":null,"seq":5001,"type":"budget","time":"2026-03-02T10:00:00Z",'
        b'"status":"unknown"}',
        b"[1,2]", b"   ", b"",
        b'{"schema_version":1,"run_id":"eq-run","trial_id":null,"seq":6000,"ts":"2026-03-02T10:00:00Z",'
        b'"event":"budget","type":"cost","status":"unknown","limit":1e999,"used":99999999999999999999999}',
        b'{"schema_version":1,"run_id":"eq-run","trial_id":null,"seq":6001.0,"ts":"2026-03-02T10:00:00Z",'
        b'"event":"budget","type":"cost","status":"exceeded","status":"unknown"}',
    ]
    out.append(dump_event(Budget(run_id="eq-run", seq=1 << 30, ts=gen.T0, type="cost", status="unknown")).encode())
    fin = RunFinished(run_id="eq-run", seq=s.n + 10, ts=gen.T0, status="completed", trials_total=n,
                         trials_finished=n - 1, outcomes={"accepted": n - 1}, duration_s=10.0)
    out.append(dump_event(fin).encode() + b"\r")
    return out


def make_inputs(dst: Path, extra: list[Path]) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    awk = dst / "awkward" / "events.jsonl"
    awk.parent.mkdir(exist_ok=True)
    awk.write_bytes(b"\n".join(_awkward_lines()) + b'\n{"schema_version":1,"run_id"')  # torn tail
    clean = dst / "awkward-clean" / "events.jsonl"
    clean.parent.mkdir(exist_ok=True)
    clean.write_bytes(b"\n".join(_awkward_lines(clean=True)) + b"\n")
    for sub in ("main", "controls"):
        p = REPO / "demo" / "runs" / sub / "events.jsonl"
        if p.is_file():
            (dst / f"demo-{sub}").mkdir(exist_ok=True)
            shutil.copyfile(p, dst / f"demo-{sub}" / "events.jsonl")
    for v in ("v0", "v1", "v2"):
        (dst / f"golden-{v}").mkdir(exist_ok=True)
        shutil.copyfile(Path(__file__).with_name("golden") / f"{v}_events.jsonl", dst / f"golden-{v}" / "events.jsonl")
    for i, p in enumerate(extra):
        (dst / f"extra{i}").mkdir(exist_ok=True)
        os.link(p, dst / f"extra{i}" / "events.jsonl") if p.stat().st_dev == dst.stat().st_dev else shutil.copyfile(
            p, dst / f"extra{i}" / "events.jsonl")
    print(f"inputs in {dst}: {sorted(x.name for x in dst.iterdir())}")


def build(inputs: Path, out: Path) -> None:
    sys.path.insert(0, os.getcwd())
    import importlib

    from ingest import api
    from ingest.errors import IngestError

    try:  # where the split threshold lives: ingest.load since the api/load split, ingest.api before
        knob = importlib.import_module("ingest.load")
    except ImportError:
        knob = api
    print(f"building with {api.__file__}")
    shutil.rmtree(out, ignore_errors=True)
    small = knob.PARALLEL_MIN_BYTES
    for d in sorted(inputs.iterdir()):
        for mode in ("one", "split"):
            size = (d / "events.jsonl").stat().st_size
            if mode == "split" and size > 64 * 1024 * 1024:
                continue  # the big files already take the split path
            if mode == "one" and size >= small:
                mode = "auto"
            knob.PARALLEL_MIN_BYTES = 0 if mode == "split" else small
            for prices in (None, PRICES) if d.name.startswith("awkward") else (None,):
                wh = out / f"{d.name}-{mode}{'-priced' if prices else ''}" / "w.duckdb"
                try:
                    r = api.ingest_paths([d], wh, allow_quarantine=True, prices=prices)
                    print(f"{wh.parent.name}: {r.rows} quarantined={r.quarantined}")
                except IngestError as exc:
                    print(f"{wh.parent.name}: {type(exc).__name__}: {exc}")
    knob.PARALLEL_MIN_BYTES = small


def _arrow(con, sql: str):
    r = con.sql(sql).arrow()
    return r.read_all() if hasattr(r, "read_all") else r  # DuckDB 2 hands out a reader


def diff(a: Path, b: Path) -> int:
    sys.path.insert(0, str(REPO))
    import duckdb

    import warehouse
    from warehouse.schema import TABLES

    names_a = sorted(p.name for p in a.iterdir() if p.is_dir())
    names_b = sorted(p.name for p in b.iterdir() if p.is_dir())
    bad = 0
    if names_a != names_b:
        print(f"different warehouses: {names_a} vs {names_b}")
        bad += 1
    for name in sorted(set(names_a) & set(names_b)):
        wa, wb = a / name / "w.duckdb", b / name / "w.duckdb"
        if not wa.exists() or not wb.exists():
            if wa.exists() != wb.exists():
                print(f"{name}: warehouse only in one build")
                bad += 1
            continue
        ca, cb = warehouse.open(wa, read_only=True), warehouse.open(wb, read_only=True)
        con = duckdb.connect()
        rows = 0
        for t in TABLES:
            drop = ["ingest_batch_id"] + (["ingested_at"] if t == "ingest_batches" else [])
            ta = _arrow(ca, f"SELECT * EXCLUDE ({', '.join(drop)}) FROM {t}")  # noqa: S608
            tb = _arrow(cb, f"SELECT * EXCLUDE ({', '.join(drop)}) FROM {t}")  # noqa: S608
            if ta.schema != tb.schema:
                print(f"{name}.{t}: schemas differ")
                bad += 1
                continue
            con.register("ta", ta)
            con.register("tb", tb)
            only_a = con.execute("SELECT count(*) FROM (SELECT * FROM ta EXCEPT ALL SELECT * FROM tb)").fetchall()[0][0]
            only_b = con.execute("SELECT count(*) FROM (SELECT * FROM tb EXCEPT ALL SELECT * FROM ta)").fetchall()[0][0]
            rows += ta.num_rows
            if only_a or only_b or ta.num_rows != tb.num_rows:
                print(f"{name}.{t}: {ta.num_rows} vs {tb.num_rows} rows, {only_a} only in A, {only_b} only in B")
                bad += 1
        ca.close()
        cb.close()
        print(f"{name}: {rows} rows compared")
    print("EQUAL" if not bad else f"{bad} DIFFERENCE(S)")
    return 1 if bad else 0


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "inputs":
        make_inputs(Path(args[0]), [Path(x) for x in args[1:]])
    elif cmd == "build":
        build(Path(args[0]), Path(args[1]))
    elif cmd == "diff":
        sys.exit(diff(Path(args[0]), Path(args[1])))
    else:
        sys.exit(f"unknown command {cmd!r}: inputs | build | diff")
