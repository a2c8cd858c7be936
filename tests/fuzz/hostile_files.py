"""Hostile foreign files, built small (issue 29, item 5; a helper loaded by path, not a test module).

Each builder makes one hostile source in a fresh folder — a symlink out of the folder, an
instance id that is a path, a sparse file of hundreds of MiB, a zip or Zstandard bomb of a few
KB, a duplicate trial id, a FIFO, a YAML alias bomb, a line longer than any block, a million
configurations — next to a *canary*: a file outside the folder whose text must never reach the
warehouse, and whose access time must not move. ``judge`` ingests the source through the real
CLI in a subprocess, measured from a small parent (``ru_maxrss`` of its only child), and says
what is wrong: a traceback, more than one line of error, a peak RSS of 500 MB or more, the
canary read or stored, or the expected reason missing.

Used by ``tests/ingest/test_ingest_hostile_files.py`` (each shape once, with its own
assertions) and by ``make fuzz`` (``fuzz``: every shape, then random shapes, with random sizes
and places).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "ingest" / "formats" / "fixtures"
TRIALHOUSE = Path(sys.executable).with_name("trialhouse")
MiB = 1024 * 1024
RSS_LIMIT_MB = 500

_PARENT = r"""
import json, resource, subprocess, sys
try:
    p = subprocess.run(sys.argv[2:], capture_output=True, text=True, errors="replace", timeout=float(sys.argv[1]))
    rc, out, err = p.returncode, p.stdout, p.stderr
except subprocess.TimeoutExpired as e:
    rc, out, err = "timeout", "", f"timed out after {sys.argv[1]} s"
print(json.dumps({"rc": rc, "out": out, "err": err[-20000:],
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


class Measured(NamedTuple):
    rc: int | str
    out: str
    err: str
    maxrss_mb: float


def run_measured(args: list[str], timeout: float = 300) -> Measured:
    """``args`` run by a small parent Python that reports its child's peak RSS (a fresh
    parent: ``RUSAGE_CHILDREN`` of a test process would hold every child it ever had)."""
    p = subprocess.run([sys.executable, "-c", _PARENT, str(timeout), *args], capture_output=True, text=True,
                       check=True, timeout=timeout + 60)
    return Measured(**json.loads(p.stdout))


class Case(NamedTuple):
    """A hostile source: what to ingest, as which format, the reason expected (in the error
    or the quarantine), and the canary outside the folder and its text (None: the shape has none)."""

    source: Path
    fmt: str
    expect: str
    canary: Path | None = None
    secret: str | None = None
    command: tuple[str, ...] = ("ingest",)
    """The CLI command given the source (``review import``: judged on a warehouse of the Harbor fixture)."""


def canary(work: Path, rng: random.Random) -> tuple[Path, str]:
    """A file outside the source folder (``work/outside``) with a unique text, its access time
    set before its change time (so reading it moves the access time, relatime or not)."""
    text = f"CANARY-{rng.getrandbits(64):016x}"
    path = work / "outside" / "canary.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"secret": text, "trial_name": text, "agent_info": {}, "reward_valid": True}))
    os.utime(path, (1_000_000, 2_000_000))
    return path, text


def _copy(fixture: str, dest: Path) -> Path:
    src = FIXTURES / fixture
    shutil.copytree(src, dest)
    return dest


# ---------------------------------------------------------------------------- Harbor


def harbor_trial_folder_symlink(work: Path, rng: random.Random) -> Case:
    """A job with a trial folder that is a symlink to a folder outside, whose result.json
    is the canary."""
    job = _copy("harbor/2026-01-10__12-00-00", work / "src" / "job")
    path, text = canary(work, rng)
    (job / f"evil__{rng.randrange(10**6)}").symlink_to(path.parent, target_is_directory=True)
    path = path.rename(path.with_name("result.json"))
    return Case(job, "harbor", "leads outside the folder", path, text)


def harbor_result_symlink(work: Path, rng: random.Random) -> Case:
    """A trial whose result.json is a symlink to the canary outside."""
    job = _copy("harbor/2026-01-10__12-00-00", work / "src" / "job")
    path, text = canary(work, rng)
    trial = rng.choice(sorted(p for p in job.iterdir() if (p / "result.json").is_file()))
    (trial / "result.json").unlink()
    (trial / "result.json").symlink_to(path)
    return Case(job, "harbor", "leads outside the folder", path, text)


def harbor_job_symlink(work: Path, rng: random.Random) -> Case:
    """A folder of Harbor jobs: one real job, and one that is a symlink to a job outside whose
    trial result holds the canary's text."""
    jobs = work / "src" / "jobs"
    _copy("harbor/2026-01-10__12-00-00", jobs / "2026-01-10__12-00-00")
    path, text = canary(work, rng)
    job = _copy("harbor/2026-01-10__12-00-00", path.parent / "job")
    trial = rng.choice(sorted(p for p in job.iterdir() if (p / "result.json").is_file()))
    doc = json.loads((trial / "result.json").read_text())
    doc["trial_name"] = text
    (trial / "result.json").write_text(json.dumps(doc))
    os.utime(trial / "result.json", (1_000_000, 2_000_000))
    (jobs / f"evil__{rng.randrange(10**6)}").symlink_to(job, target_is_directory=True)
    return Case(jobs, "harbor", "leads outside the folder", trial / "result.json", text)


def harbor_sparse_result(work: Path, rng: random.Random) -> Case:
    """A trial's result.json made a sparse file of 300 MiB to 1 GiB."""
    job = _copy("harbor/2026-01-10__12-00-00", work / "src" / "job")
    trial = rng.choice(sorted(p for p in job.iterdir() if (p / "result.json").is_file()))
    os.truncate(trial / "result.json", rng.randrange(300, 1025) * MiB)
    return Case(job, "harbor", "more than the 256 MiB a JSON document may have")


def harbor_duplicate_id(work: Path, rng: random.Random) -> Case:
    """Two trial folders whose results have the same trial id."""
    job = _copy("harbor/2026-01-10__12-00-00", work / "src" / "job")
    trial = rng.choice(sorted(p for p in job.iterdir() if (p / "result.json").is_file()))
    shutil.copytree(trial, job / f"zz-copy__{rng.randrange(10**6)}")
    return Case(job, "harbor", "duplicate trial id")


def harbor_fifo_result(work: Path, rng: random.Random) -> Case:
    """A trial whose verifier reward file is a FIFO (a blocking read would hang the import)."""
    job = _copy("harbor/2026-01-10__12-00-00", work / "src" / "job")
    trial = rng.choice(sorted(p for p in job.iterdir() if (p / "result.json").is_file()))
    doc = json.loads((trial / "result.json").read_text())
    doc["verifier_result"] = None
    (trial / "result.json").write_text(json.dumps(doc))
    shutil.rmtree(trial / "verifier", ignore_errors=True)
    (trial / "verifier").mkdir()
    os.mkfifo(trial / "verifier" / "reward.txt")
    return Case(job, "harbor", "not a regular file")


# ---------------------------------------------------------------------------- SWE-bench


def swebench_path_id(work: Path, rng: random.Random) -> Case:
    """A submission whose predictions name an instance by a path (``../../outside/x`` or an
    absolute one), where a report.json outside says it is resolved."""
    sub = _copy("swebench/20250901_agentx_model-a", work / "src" / "20250901_agentx_model-a")
    (sub / "logs").mkdir()
    path, text = canary(work, rng)
    outside = path.parent / "x"
    iid = rng.choice(["../../outside/x", str(outside)])
    outside.mkdir()
    (outside / "report.json").write_text(json.dumps(
        {iid: {"resolved": True, "patch_is_None": False, "tests_status": {}, "note": text}}))
    os.utime(outside / "report.json", (1_000_000, 2_000_000))
    with (sub / "all_preds.jsonl").open("a") as f:
        f.write(json.dumps({"instance_id": iid, "model_name_or_path": "agentx", "model_patch": "x"}) + "\n")
    return Case(sub, "swebench", "instance id", outside / "report.json", text)


def swebench_logs_symlink(work: Path, rng: random.Random) -> Case:
    """A submission whose ``logs/<instance id>`` folder (a safe id) is a symlink to a folder
    outside holding a report.json that says the instance is resolved."""
    sub = _copy("swebench/20250901_agentx_model-a", work / "src" / "20250901_agentx_model-a")
    iid = rng.choice(json.loads((sub / "results" / "results.json").read_text())["resolved"])
    path, text = canary(work, rng)
    report = path.parent / "report.json"
    report.write_text(json.dumps({iid: {"resolved": True, "patch_is_None": False, "tests_status": {}, "n": text}}))
    os.utime(report, (1_000_000, 2_000_000))
    (sub / "logs").mkdir()
    (sub / "logs" / iid).symlink_to(path.parent, target_is_directory=True)
    return Case(sub, "swebench", "leads outside the folder", report, text)


def swebench_report_symlink(work: Path, rng: random.Random) -> Case:
    """Harness logs (logs/run_evaluation/<run>/<model>/<id>/report.json) where one report.json
    is a symlink to a report outside."""
    root = work / "src" / "logs"
    path, text = canary(work, rng)
    outside = path.parent / "report.json"
    outside.write_text(json.dumps({"x__y-2": {"resolved": True, "patch_is_None": False, "tests_status": {},
                                              "n": text}}))
    os.utime(outside, (1_000_000, 2_000_000))
    for iid in ("x__y-1", "x__y-2"):
        d = root / "run_evaluation" / "r1" / "model-a" / iid
        d.mkdir(parents=True)
        (d / "report.json").write_text(json.dumps({iid: {"resolved": False, "patch_is_None": False,
                                                         "tests_status": {}}}))
    target = root / "run_evaluation" / "r1" / "model-a" / "x__y-2" / "report.json"
    target.unlink()
    target.symlink_to(outside)
    return Case(root, "swebench", "leads outside the folder", outside, text)


def swebench_sparse_preds(work: Path, rng: random.Random) -> Case:
    """A submission whose all_preds.jsonl is a sparse file of 600 MiB to 1 GiB (one line of NULs)."""
    sub = _copy("swebench/20250901_agentx_model-a", work / "src" / "20250901_agentx_model-a")
    os.truncate(sub / "all_preds.jsonl", rng.randrange(600, 1025) * MiB)
    return Case(sub, "swebench", "longer than the 64 MiB a prediction line may have")


def swebench_yaml_bomb(work: Path, rng: random.Random) -> Case:
    """A submission whose metadata.yaml is a YAML alias bomb (nine nested anchors)."""
    sub = _copy("swebench/20250901_agentx_model-a", work / "src" / "20250901_agentx_model-a")
    width = rng.randrange(8, 12)
    lines = ["info: {name: agentx}", "tags:", f"  l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, 9)]
    (sub / "metadata.yaml").write_text("\n".join(lines) + "\n")
    return Case(sub, "swebench", "expands (aliases followed)")


# ---------------------------------------------------------------------------- Inspect


def inspect_sparse_json(work: Path, rng: random.Random) -> Case:
    """An Inspect .json log: its first bytes an Inspect log's, then NULs to 600 MiB - 1 GiB."""
    log = work / "src" / "logs" / "big.json"
    log.parent.mkdir(parents=True)
    log.write_bytes(b'{"version": 2, "status": "success", "eval": {"eval_id": "x", "task": "t", ')
    os.truncate(log, rng.randrange(600, 1025) * MiB)
    return Case(log, "inspect", "more than the 256 MiB a JSON document may have")


def inspect_log_symlink(work: Path, rng: random.Random) -> Case:
    """A folder of Inspect logs: one real .eval, and one .eval (or .json) that is a symlink to
    a log outside the folder."""
    logs = work / "src" / "logs"
    logs.mkdir(parents=True)
    shutil.copy(FIXTURES / "inspect" / "mixed.eval", logs / "a.eval")
    path, text = canary(work, rng)
    suffix = rng.choice([".eval", ".json"])
    outside = path.parent / f"secret{suffix}"
    shutil.copy(FIXTURES / "inspect" / f"mixed{suffix}", outside)
    if suffix == ".json":
        doc = json.loads(outside.read_text())
        doc["eval"]["task"] = text
        outside.write_text(json.dumps(doc))
    os.utime(outside, (1_000_000, 2_000_000))
    (logs / f"b{suffix}").symlink_to(outside)
    return Case(logs, "inspect", "leads outside the folder", outside, text if suffix == ".json" else None)


def _zip(path: Path, members: list[tuple[str, int, bytes, int]]) -> None:
    """A zip of ``(name, method, stored bytes, declared size)`` members, written by hand so a
    member can be Zstandard (method 93, which ``zipfile`` cannot write) or lie about its size."""
    out, central = bytearray(), bytearray()
    for name, method, data, size in members:
        raw_name = name.encode()
        head = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, zlib.crc32(data), len(data), size,
                           len(raw_name), 0)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, zlib.crc32(data),
                               len(data), size, len(raw_name), 0, 0, 0, 0, 0, len(out)) + raw_name
        out += head + raw_name + data
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))


def _inspect_members() -> dict[str, bytes]:
    """header.json and summaries.json of the fixture log, as JSON bytes."""
    import zipfile

    from ingest.formats.inspect_log import read_member

    with zipfile.ZipFile(FIXTURES / "inspect" / "mixed.eval") as z:
        return {n: json.dumps(read_member(z, n)).encode() for n in ("header.json", "summaries.json")}


_BOMBS: dict[tuple[str, int], bytes] = {}


def _bomb(kind: str, size: int) -> bytes:
    """``size`` NUL bytes compressed (zstd: ~33 KB per GiB; deflate: ~1 MB per GiB), made once."""
    if (kind, size) not in _BOMBS:
        if kind == "zstd":
            import zstandard

            c = zstandard.ZstdCompressor(level=3).compressobj()
            parts = [c.compress(bytes(16 * MiB)) for _ in range(size // (16 * MiB))]
        else:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            parts = [c.compress(bytes(16 * MiB)) for _ in range(size // (16 * MiB))]
        _BOMBS[(kind, size)] = b"".join(parts) + c.flush()
    return _BOMBS[(kind, size)]


def inspect_bomb(work: Path, rng: random.Random) -> Case:
    """An .eval whose summaries.json (or header.json) is a zstd or deflate bomb of 1 GiB of NULs,
    declaring its true size — or, lying, a small one."""
    kind = rng.choice(["zstd", "deflate"])
    target = rng.choice(["summaries.json", "summaries.json", "header.json"])
    lying = rng.random() < 0.3
    expect = "Bad CRC" if lying and kind == "deflate" else "inflates"  # zipfile stops at the size, then checks
    members = _inspect_members()
    bomb = _bomb(kind, 1024 * MiB)
    entries = [(n, 0, data, len(data)) for n, data in members.items() if n != target]
    entries.append((target, 93 if kind == "zstd" else 8, bomb, 4096 if lying else 1024 * MiB))
    log = work / "src" / "logs" / "bomb.eval"
    log.parent.mkdir(parents=True)
    _zip(log, entries)
    return Case(log, "inspect", expect)


def inspect_central_directory(work: Path, rng: random.Random) -> Case:
    """An .eval whose end record claims a member list of 64 MiB - 1 GiB."""
    log = work / "src" / "logs" / "many.eval"
    log.parent.mkdir(parents=True)
    size = rng.randrange(64, 1025) * MiB
    log.write_bytes(b"PK\x03\x04" + bytes(26) + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFE, 0xFFFE, size, 0, 0))
    return Case(log, "inspect", "member list takes")


# ---------------------------------------------------------------------------- runs-jsonl


def runs_jsonl_sparse(work: Path, rng: random.Random) -> Case:
    """A runs-jsonl file with good lines, then a sparse run of NULs (one line of 300 MiB - 1 GiB)."""
    path = work / "src" / "runs.jsonl"
    path.parent.mkdir(parents=True)
    good = [json.dumps({"model": "m", "harness": "h", "task_id": f"t{i}", "trial": 0, "status": "solved"})
            for i in range(rng.randrange(1, 50))]
    path.write_text("\n".join(good) + "\n")
    with path.open("r+b") as f:
        f.truncate(path.stat().st_size + rng.randrange(300, 1025) * MiB)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + good[0].encode() + b"\n")
    return Case(path, "runs-jsonl", "longer than the 1 MiB a runs-jsonl line may have")


def runs_jsonl_configs(work: Path, rng: random.Random, n: int | None = None, tasks: int = 7) -> Case:
    """A runs-jsonl file where every line names its own configuration, on one of ``tasks``
    tasks (``n``: 20,000 - 200,000, or as given: the test uses a million)."""
    path = work / "src" / "configs.jsonl"
    path.parent.mkdir(parents=True)
    n = n or rng.randrange(20_000, 200_001)
    with path.open("w") as f:
        for i in range(0, n, 10_000):
            f.write("".join(f'{{"model": "m-{k}", "harness": "h", "task_id": "t{k % tasks}", "trial": 0, '
                            f'"status": "solved"}}\n' for k in range(i, min(i + 10_000, n))))
    return Case(path, "runs-jsonl", "distinct configurations")


# ---------------------------------------------------------------------------- review files


def review_csv(work: Path, rng: random.Random) -> Case:
    """A review CSV with good records around one hostile record: a field of 130 KB - 2 MB, a
    sparse line of 256 MiB - 1 GiB, a bare CR, a byte that is not UTF-8, or a quote left open."""
    path = work / "src" / "reviews.csv"
    path.parent.mkdir(parents=True)
    good = "".join(f"t{i},alice,accept,looked,fine\n" for i in range(rng.randrange(1, 20)))
    kind = rng.choice(["field", "line", "cr", "utf8", "quote"])
    with path.open("wb") as f:
        f.write(("trial_id,reviewer,decision,reason_code,note\n" + good).encode())
        if kind == "field":
            f.write(b"t0,alice,accept,looked," + b"x" * rng.randrange(130_000, 2_000_000) + b"\n")
        elif kind == "line":
            f.truncate(f.tell() + rng.randrange(256, 1025) * MiB)
            f.seek(0, os.SEEK_END)
            f.write(b"\n")
        elif kind == "cr":
            f.write(b"t0,alice,accept,looked,a\rb\n")
        elif kind == "utf8":
            f.write(b"t0,alice,accept,looked,caf\xe9\n")
        else:
            f.write(b't0,alice,accept,looked,"open\n' + (b"y" * 1000 + b"\n") * rng.randrange(200, 3000))
        f.write(good.encode())
    expect = {"field": "field larger than field limit", "line": "a record longer than", "cr": "new-line character",
              "utf8": "not UTF-8", "quote": "field larger than field limit"}[kind]
    return Case(path, "csv", expect, command=("review", "import"))


SHAPES: dict[str, Callable[[Path, random.Random], Case]] = {
    f.__name__: f for f in (
        harbor_trial_folder_symlink, harbor_result_symlink, harbor_job_symlink, harbor_sparse_result, harbor_duplicate_id,
        harbor_fifo_result, swebench_path_id, swebench_logs_symlink, swebench_report_symlink, swebench_sparse_preds, swebench_yaml_bomb,
        inspect_sparse_json, inspect_log_symlink, inspect_bomb, inspect_central_directory, runs_jsonl_sparse, runs_jsonl_configs,
        review_csv)
}


# ---------------------------------------------------------------------------- judging


def stored_text(warehouse: Path, needle: str) -> list[str]:
    """The warehouse tables holding ``needle`` anywhere in a row."""
    import duckdb

    from warehouse.schema import TABLES

    if not warehouse.is_file():
        return []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        return [t for t in TABLES if t in present and con.execute(
            f"SELECT count(*) FROM {t} x WHERE CAST(x AS VARCHAR) LIKE ?", [f"%{needle}%"]).fetchone()[0]]  # noqa: S608
    finally:
        con.close()


def reasons(warehouse: Path) -> list[str]:
    import duckdb

    if not warehouse.is_file():
        return []
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return [r for (r,) in con.execute("SELECT reason FROM quarantine").fetchall()]
    finally:
        con.close()


def judge(case: Case, warehouse: Path, timeout: float = 300) -> tuple[Measured, list[str]]:
    """Ingest ``case`` through the CLI (a subprocess, measured) and list what is wrong."""
    text, atime = case.secret, case.canary.stat().st_atime if case.canary else None
    args = [str(TRIALHOUSE), *case.command, str(case.source), "--warehouse", str(warehouse)]
    if case.command == ("ingest",):
        args += ["--format", case.fmt]
    else:  # a review file needs a warehouse to review
        from ingest.api import ingest_paths

        ingest_paths([FIXTURES / "harbor" / "2026-01-10__12-00-00"], warehouse, allow_quarantine=True)
    got = run_measured(args, timeout)
    wrong = []
    if got.rc not in (0, 2):
        wrong.append(f"exit {got.rc}")
    if "Traceback" in got.err or "Traceback" in got.out:
        wrong.append("a traceback: " + got.err[-600:])
    lines = [ln for ln in got.err.splitlines() if ln.strip()]
    if got.rc == 2 and (len(lines) != 1 or not lines[0].startswith("trialhouse: ")):
        wrong.append(f"not one clear line: {got.err[-600:]!r}")
    if got.maxrss_mb >= RSS_LIMIT_MB:
        wrong.append(f"peak RSS {got.maxrss_mb:.0f} MB (limit {RSS_LIMIT_MB})")
    if case.expect not in got.err and not any(case.expect in r for r in reasons(warehouse)):
        wrong.append(f"no reason saying {case.expect!r}: {got.err[-300:]!r}; quarantine {reasons(warehouse)[:3]}")
    if text and (tables := stored_text(warehouse, text)):
        wrong.append(f"the canary's text is in {tables}")
    if case.canary and case.canary.stat().st_atime != atime:
        wrong.append(f"the canary outside the folder was read ({case.canary})")
    return got, wrong


def fuzz(n: int, seed: int, work: Path) -> list[str]:
    """``n`` hostile sources of random shapes, sizes and places, each judged; the findings."""
    rng = random.Random(seed)
    names = sorted(SHAPES)
    findings = []
    for i in range(n):
        name, case_seed = names[i % len(names)] if i < len(names) else rng.choice(names), rng.getrandbits(32)
        folder = work / f"{i:04d}-{name}"
        case = SHAPES[name](folder, random.Random(case_seed))
        if rng.random() < 0.5:  # detection reads the hostile file too
            case = case._replace(fmt="auto")
        got, wrong = judge(case, folder / "wh" / "w.duckdb")
        findings += [f"{name} (seed {case_seed}): {w}" for w in wrong]
        shutil.rmtree(folder, ignore_errors=True)  # sparse files cost no disk, bombs and configurations some
    return findings
