"""The rollups equal a polars group-by of the trials, are rebuilt with them, never stale."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from tests.support.synthetic_warehouse import Spec, generate
from warehouse import db, rollup

KEY = ["run_id", "config_id", "case_id"]


def _expected(con) -> pl.DataFrame:
    """The rollup computed independently, in polars, from the trial rows."""
    t = con.sql("SELECT run_id, config_id, case_id, complete, outcome, cost_usd FROM trials").pl()
    done = pl.col("complete")
    return (t.group_by(KEY).agg(
        trials=pl.len(),
        complete=done.sum(),
        valid=(done & ~pl.col("outcome").is_in(["infra_error", "invalid"])).sum(),
        solved=(done & (pl.col("outcome") == "accepted")).sum(),
        infra=(done & (pl.col("outcome") == "infra_error")).sum(),
        invalid=(done & (pl.col("outcome") == "invalid")).sum(),
        cost_usd=pl.col("cost_usd").filter(done).sum(),
        cost_known=pl.col("cost_usd").filter(done).is_not_null().sum(),
        any_cost=pl.col("cost_usd").filter(done).is_not_null().any(),
    ).with_columns(
        pl.when(pl.col("any_cost")).then(pl.col("cost_usd")).alias("cost_usd"),
    ).drop("any_cost").sort(KEY).cast({c: pl.Int64 for c in
                                       ["trials", "complete", "valid", "solved", "infra",
                                        "invalid", "cost_known"]}))


def _stored(con) -> pl.DataFrame:
    return con.sql("SELECT * EXCLUDE (ingest_batch_id) FROM task_rollup").pl().sort(KEY)


def _expected_config(con) -> pl.DataFrame:
    """config_rollup computed independently: polars medians and linear quantiles."""
    t = con.sql("SELECT * FROM trials WHERE complete").pl()
    valid = ~pl.col("outcome").is_in(["infra_error", "invalid"])
    q = {f"{name}_p{int(p * 100)}": pl.col(col).quantile(p, interpolation="linear")
         for name, col in [("cost", "cost_usd"), ("latency", "duration_s")]
         for p in (0.5, 0.9, 0.95)}
    return t.group_by(["run_id", "config_id"]).agg(
        complete=pl.len(), valid=valid.sum(),
        med_steps=pl.col("steps").filter(valid).median(),
        med_tokens=(pl.col("input_tokens") + pl.col("output_tokens")).filter(valid).median(),
        **q,
    ).sort(KEY[:2])


def _stored_config(con) -> pl.DataFrame:
    return con.sql("SELECT * EXCLUDE (ingest_batch_id) FROM config_rollup").pl().sort(KEY[:2])


def _assert_rollups_match(con) -> None:
    assert_frame_equal(_stored(con), _expected(con), check_column_order=False,
                       check_dtypes=False, rel_tol=1e-12)
    assert_frame_equal(_stored_config(con), _expected_config(con), check_column_order=False,
                       check_dtypes=False, rel_tol=1e-12)


def _warehouse(tmp_path: Path, run_id: str = "synthetic") -> Path:
    path = tmp_path / "w.duckdb"
    generate(path, Spec(models=2, harnesses=2, tasks=30, reps=3, incomplete=4, unknown_cost=5,
                        run_id=run_id))
    return path


def test_rollup_equals_a_group_by_of_the_trials(tmp_path):
    path = _warehouse(tmp_path)
    con = db.open(path, read_only=True)
    got = _stored(con)
    assert got.height == 2 * 2 * 30 and got["trials"].sum() == 2 * 2 * 30 * 3
    assert got["complete"].sum() == got["trials"].sum() - 4  # the incomplete trials count
    _assert_rollups_match(con)
    configs = _stored_config(con)
    assert configs.height == 4 and configs["complete"].sum() == got["complete"].sum()
    assert configs["cost_p50"].null_count() == 0 and configs["med_steps"].null_count() == 0
    assert rollup.missing(db.parquet_root(path)) == []


def test_a_missing_rollup_is_computed_by_the_view_and_rebuilt_by_the_next_write(tmp_path):
    path = _warehouse(tmp_path)
    root = db.parquet_root(path)
    con = db.open(path, read_only=True)
    before, before_config = _stored(con), _stored_config(con)
    con.close()
    for name in rollup.NAMES:  # e.g. a crash before the rebuild
        shutil.rmtree(root / name / "run_id=synthetic")
        assert rollup.missing(root) == ["run_id=synthetic"]
    con = db.open(path, read_only=True)
    assert_frame_equal(_stored(con), before)  # same rows, computed from the trials
    assert_frame_equal(_stored_config(con), before_config)
    con.close()
    generate(path, Spec(models=1, harnesses=1, tasks=3, reps=1, run_id="other"))
    assert rollup.missing(root) == []  # the write rebuilt the missing run too
    con = db.open(path, read_only=True)
    assert_frame_equal(_stored(con).filter(pl.col("run_id") == "synthetic"), before)
    assert_frame_equal(_stored_config(con).filter(pl.col("run_id") == "synthetic"),
                       before_config)


def test_rewriting_or_deleting_a_run_rewrites_or_deletes_its_rollup(tmp_path):
    path = _warehouse(tmp_path)
    generate(path, Spec(models=1, harnesses=2, tasks=5, reps=2, incomplete=0, run_id="synthetic"))
    con = db.open(path, read_only=True)
    assert _stored(con)["trials"].sum() == 1 * 2 * 5 * 2
    assert _stored_config(con)["complete"].sum() == 1 * 2 * 5 * 2
    _assert_rollups_match(con)
    con.close()
    db.delete_run(path, "synthetic")
    con = db.open(path, read_only=True)
    for name in rollup.NAMES:
        assert not (db.parquet_root(path) / name / "run_id=synthetic").exists()
        assert con.execute(f"SELECT count(*) FROM {name}").fetchone() == (0,)


def test_every_importer_leaves_a_rollup_equal_to_its_trials(tmp_path):
    import importlib.util

    from ingest.api import ingest_paths

    repo = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("eventgen", repo / "tests/ingest/eventgen.py")
    eventgen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(eventgen)
    events = eventgen.write_jsonl(tmp_path / "run" / "events.jsonl",
                                  eventgen.run_events("ours", cases=("c1", "c2", "c3")))
    foreign = repo / "examples" / "foreign"
    path = tmp_path / "w.duckdb"
    ingest_paths([events, foreign / "runs.jsonl", foreign / "inspect-arith.eval",
                  foreign / "harbor-job"], path, prices=foreign / "prices.json",
                 allow_quarantine=True)
    assert rollup.missing(db.parquet_root(path)) == []
    con = db.open(path, read_only=True)
    got, want = _stored(con), _expected(con)
    assert set(got["run_id"]) == set(want["run_id"]) and got["run_id"].n_unique() >= 4
    assert set(_stored_config(con)["run_id"]) == set(want["run_id"])
    _assert_rollups_match(con)


def test_rollups_from_trials_in_memory_equal_rollups_from_their_files(tmp_path):
    """``replace_run`` builds the rollups of new trials from the Arrow table it is writing;
    ``rollup.build`` from the stored files: the same rows either way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _warehouse(tmp_path)
    root = db.parquet_root(path)
    files = sorted((root / "trials" / "run_id=synthetic").glob("*.parquet"))
    table = pa.concat_tables([pq.read_table(f) for f in files])
    table = table.append_column("run_id", pa.array(["synthetic"] * table.num_rows))
    from_files, from_table = rollup.prepare(root, files), rollup.prepare(root, table)
    try:
        for name, key in (("task_rollup", ["config_id", "case_id"]), ("config_rollup", ["config_id"])):
            a, b = (pq.read_table(d[name] / "part-0.parquet").sort_by([(k, "ascending") for k in key])
                    for d in (from_files, from_table))
            assert a.num_rows > 0 and a.equals(b), name
    finally:
        for tmp in (*from_files.values(), *from_table.values()):
            shutil.rmtree(tmp)
