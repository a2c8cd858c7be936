"""The warehouse's hive-partitioned Parquet, read as-is by engines other than our DuckDB file.

docs/scale.md promises that ``<warehouse>.parquet/<table>/run_id=<id>/*.parquet`` is read
without conversion by pyarrow.dataset, DuckDB ``read_parquet(hive_partitioning=true)`` and
polars ``scan_parquet``; this checks all three against the run's own events.
"""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow.dataset as ds

from contract.trial_events import TrialFinished
from ingest.api import ingest_paths
from runner.eventlog import read_events
from runner.run import run_trials


def test_three_engines_read_the_trials_partitions_as_written(kit, corpus_root, tmp_path):
    manifest = kit.make_corpus(corpus_root, repetitions=2)
    runs = [run_trials(manifest, tmp_path / f"run{i}", progress=False) for i in (1, 2)]
    warehouse = tmp_path / "wh" / "trialhouse.duckdb"
    ingest_paths([r.run_dir for r in runs], warehouse)
    root = warehouse.with_suffix(".parquet") / "trials"
    assert sorted(p.name for p in root.iterdir()) == sorted(f"run_id={r.run_id}" for r in runs)

    expected = sorted((r.run_id, e.trial_id, e.outcome) for r in runs
                      for e in read_events(r.events_path) if isinstance(e, TrialFinished))
    assert len(expected) == 8

    table = ds.dataset(root, format="parquet", partitioning="hive").to_table(
        columns=["run_id", "trial_id", "outcome"])
    by_arrow = sorted(zip(*(table.column(c).to_pylist() for c in ("run_id", "trial_id", "outcome")),
                          strict=True))
    by_duckdb = sorted(duckdb.sql(
        "SELECT run_id, trial_id, outcome FROM read_parquet(?, hive_partitioning = true)",
        params=[str(root / "*" / "*.parquet")]).fetchall())
    by_polars = sorted(pl.scan_parquet(root / "*" / "*.parquet", hive_partitioning=True)
                       .select("run_id", "trial_id", "outcome").collect().rows())
    assert by_arrow == by_duckdb == by_polars == expected
    # A filter on the partition column prunes to one run's files in each engine.
    one = runs[0].run_id
    assert duckdb.sql("SELECT count(*) FROM read_parquet(?, hive_partitioning = true) WHERE run_id = ?",
                      params=[str(root / "*" / "*.parquet"), one]).fetchall() == [(4,)]
    assert pl.scan_parquet(root / "*" / "*.parquet", hive_partitioning=True).filter(
        pl.col("run_id") == one).collect().height == 4
    assert ds.dataset(root, format="parquet", partitioning="hive").to_table(
        filter=ds.field("run_id") == one).num_rows == 4
