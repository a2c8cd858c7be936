"""A write replaces a run's partitions all or none: a failure at any step, or a kill at any step
followed by the next writer, leaves the warehouse's files exactly as they were."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from warehouse import db, rollup
from warehouse.errors import WarehouseError
from warehouse.partition_swap import PartitionSwap
from warehouse.schema import table_from_rows

REPO = Path(__file__).resolve().parents[2]


def _trials(n: int, batch: str, run_id: str = "r1") -> list[dict]:
    return [{"run_id": run_id, "ingest_batch_id": batch, "trial_id": f"t{i}", "source_format": "test",
             "config_id": "c", "case_id": f"case{i % 3}", "repetition": 1, "complete": True,
             "outcome": "accepted", "simulated": False, "duration_s": float(i)} for i in range(n)]


def _tables(n: int, batch: str) -> dict:
    return {
        "trials": table_from_rows("trials", _trials(n, batch)),
        "flags": table_from_rows("flags", [{"run_id": "r1", "ingest_batch_id": batch, "trial_id": "t0",
                                            "kind": "test_deleted", "path": f"p{n}"}]),
        "quarantine": table_from_rows("quarantine", []),
    }


def _tree(wh: Path) -> dict[str, str]:
    """Every file and directory under the warehouse's Parquet root, with its content's sha256."""
    root = db.parquet_root(wh)
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
    return out


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with db.write_lock(path):
        db.replace_run(path, "r1", _tables(5, "b1"))
        db.replace_run(path, "r2", {"trials": table_from_rows("trials", _trials(2, "b0", "r2"))})
        db.open(path).close()
    return path


def _failing_after(monkeypatch, target, name: str, k: int) -> list[int]:
    """Make ``target.name`` raise OSError on its k-th call (1-based); returns the call counter."""
    real = getattr(target, name)
    calls = [0]

    def fail(*args, **kw):
        calls[0] += 1
        if calls[0] == k:
            raise OSError(28, "No space left on device (injected)")
        return real(*args, **kw)

    monkeypatch.setattr(target, name, fail)
    return calls


@pytest.mark.parametrize(("target", "name"), [
    (Path, "rename"),  # staging files moved in, every step of the swap
    (pq, "write_table"),  # each partition and rollup written
    (Path, "mkdir"),  # each hidden directory made
    (rollup, "prepare"),  # the rollups built from the new trials
    (PartitionSwap, "_write"),  # the journal, before and after the renames
])
def test_a_failure_at_any_write_step_leaves_the_warehouse_as_it_was(wh, monkeypatch, target, name):
    before = _tree(wh)
    k = 0
    while True:
        k += 1
        with monkeypatch.context() as m:
            calls = _failing_after(m, target, name, k)
            try:
                with db.write_lock(wh):
                    db.replace_run(wh, "r1", _tables(7, f"b{k}"))
            except OSError:
                assert _tree(wh) == before, f"failure at call {k} of {name} changed the warehouse"
                continue
        assert calls[0] < k, "the injected failure was never reached"
        break
    assert k > 1, f"{name} was never called by a write"
    after = _tree(wh)
    assert after != before and not [p for p in after if "/." in p or p.startswith(".")], after
    con = db.open(wh, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM trials WHERE run_id = 'r1'").fetchone() == (7,)
        assert con.execute("SELECT sum(trials) FROM task_rollup WHERE run_id = 'r1'").fetchone() == (7,)
    finally:
        con.close()


_KILL = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from warehouse import db
    from warehouse.schema import table_from_rows
    sys.path.insert(0, {tests!r})
    from test_warehouse_atomic import _tables
    real = Path.rename
    calls = [0]
    def rename(self, target):
        calls[0] += 1
        if calls[0] == {k}:
            os._exit(9)  # killed: no cleanup of any kind runs
        return real(self, target)
    Path.rename = rename
    with db.write_lock(Path({wh!r})):
        db.replace_run(Path({wh!r}), "r1", _tables(7, "killed"))
    print("finished", calls[0])
""")


def test_a_writer_killed_at_any_rename_is_rolled_back_by_the_next_writer(wh):
    before = _tree(wh)
    k = 0
    while True:
        k += 1
        code = _KILL.format(repo=str(REPO), tests=str(Path(__file__).parent), k=k, wh=str(wh))
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        if proc.returncode == 0:
            assert "finished" in proc.stdout
            break
        assert proc.returncode == 9, proc.stderr
        left = _tree(wh)
        with db.write_lock(wh):
            removed = db.sweep(wh)
        assert _tree(wh) == before, f"kill at rename {k}: not rolled back ({sorted(set(left) ^ set(before))[:6]})"
        assert removed or left == before
    assert k > 3, "the kill never hit the swap"
    con = db.open(wh, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM trials WHERE run_id = 'r1'").fetchone() == (7,)
    finally:
        con.close()


def test_a_finished_swap_whose_journal_survived_is_kept_not_undone(wh):
    """A kill after the last rename but before the journal is removed: recovery tidies, keeps the new data."""
    with db.write_lock(wh):
        db.replace_run(wh, "r1", _tables(9, "b9"))
    root = db.parquet_root(wh)
    old = root / "trials" / ".old-deadbeef"
    old.mkdir()
    (old / "part-0.parquet").write_bytes(b"stale")
    swap = PartitionSwap(root, [])
    swap.steps = [{"new": str(root / "trials" / ".tmp-gone"), "target": str(root / "trials" / "run_id=r1"),
                   "old": str(old), "existed": True}]
    swap._write("done")
    with db.write_lock(wh):
        db.sweep(wh)
    assert not old.exists() and not list(root.glob(".swap-*"))
    assert pq.read_table(next((root / "trials" / "run_id=r1").glob("*.parquet"))).num_rows == 9


@pytest.mark.parametrize("run_id", ["a=b", "a\nb", "a'b\"c*?[x]", "x" * 300, "", "..", ".hidden", "a/b"])
def test_an_unsafe_run_id_is_refused_before_anything_is_written(wh, run_id):
    before = _tree(wh)
    with db.write_lock(wh), pytest.raises(WarehouseError, match="cannot name a partition"):
        db.replace_run(wh, run_id, _tables(1, "bx"))
    assert _tree(wh) == before


def test_staged_files_and_temporary_directories_are_swept(wh):
    root = db.parquet_root(wh)
    leftovers = [db.staging_file(wh, "events"), root / "events" / ".stage-x.args.pkl", root / "trials" / ".tmp-1",
                 root / "flags" / ".old-2"]
    for p in leftovers:
        if p.suffix:
            p.write_bytes(b"left by a killed writer")
        else:
            p.mkdir()
    with db.write_lock(wh):
        removed = db.sweep(wh)
    assert set(removed) >= set(leftovers) and not any(p.exists() for p in leftovers)
    assert (root / "trials" / "run_id=r1").is_dir()  # partitions are never touched


def test_prepare_fails_before_writing_when_another_process_holds_the_file(wh):
    """A reader in another process holds the DuckDB file: the writer learns it before writing."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1], read_only=True); "
         "print('open', flush=True); time.sleep(60)", str(wh)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        before = _tree(wh)
        with db.write_lock(wh), pytest.raises(WarehouseError, match="cannot open warehouse"):
            db.prepare(wh)
        assert _tree(wh) == before
        assert db.refresh(wh) is not None  # after a write: a note, not an error
    finally:
        holder.kill()
        holder.wait()
    assert db.refresh(wh) is None
    os.sync()
