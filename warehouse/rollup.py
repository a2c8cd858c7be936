"""``task_rollup``: per-(run, configuration, case) trial counts, derived when trials are written.

Why: the task-level questions (common tasks, task means, pass^k) group every trial
into (configuration, case) cells; at millions of trials that grouping dominates a
query, and it only changes when a run's trials do. So ``replace_run`` rebuilds the run's
rollup right after its trials, from the same Parquet files.

Never stale: the rollup partition is deleted *before* the trials are replaced, so a
crash in between leaves it missing, not wrong. The ``task_rollup`` view reads the
stored rollups and computes the rows of any run whose rollup is missing from its
trials (correct, only slower); the next write rebuilds the missing ones.
"""

from __future__ import annotations

import shutil
import uuid
from importlib import resources
from pathlib import Path

import duckdb

from warehouse.schema import DERIVED, ROW_GROUP_ROWS, arrow_schema, empty_select

NAME = "task_rollup"
_HIVE = "hive_partitioning = true, hive_types = {'run_id': VARCHAR}, union_by_name = true"


def _select(source: str) -> str:
    sql = resources.files("warehouse").joinpath("sql", "task_rollup.sql").read_text("utf-8")
    return sql.replace("{source}", source)


def _partitions(root: Path, table: str) -> set[str]:
    d = root / table
    return {p.name for p in d.glob("run_id=*") if any(p.glob("*.parquet"))} if d.exists() else set()


def drop(root: Path, partition: str) -> None:
    """Remove one run's rollup (before its trials change)."""
    target = root / NAME / partition
    if target.exists():
        shutil.rmtree(target)


def build(root: Path, partition: str) -> None:
    """(Re)build one run's rollup from its trials files; no trials, no rollup."""
    import pyarrow.parquet as pq

    files = sorted(str(f) for f in (root / "trials" / partition).glob("*.parquet"))
    drop(root, partition)
    if not files:
        return
    con = duckdb.connect()
    try:
        table = con.sql(_select(f"read_parquet(?, {_HIVE})"), params=[files]).to_arrow_table()
    finally:
        con.close()
    schema = arrow_schema(NAME)
    schema = schema.remove(schema.get_field_index("run_id"))  # the partition
    table = table.select(schema.names).cast(schema)
    tmp = root / NAME / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    pq.write_table(table, tmp / "part-0.parquet", compression="zstd",
                   row_group_size=ROW_GROUP_ROWS // 2)  # ~1/5 of the trials' rows
    tmp.rename(root / NAME / partition)


def missing(root: Path) -> list[str]:
    """Run partitions that have trials but no stored rollup."""
    return sorted(_partitions(root, "trials") - _partitions(root, NAME))


def _files(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def view_sql(root: Path) -> str:
    """The ``task_rollup`` view: stored rollups plus on-the-fly rows for runs lacking one.

    DDL takes no parameters: the only values in it are our own Parquet paths, quote-escaped.
    """
    trials = _partitions(root, "trials")
    every = _partitions(root, NAME)
    stored = every & trials  # a rollup whose trials are gone is left out
    cols = ", ".join(c.name for c in DERIVED[NAME][1])
    parts = []
    if stored:
        globs = ([root / NAME / "run_id=*" / "*.parquet"] if stored == every
                 else [root / NAME / p / "*.parquet" for p in sorted(stored)])
        parts.append(f"SELECT {cols} FROM read_parquet({_files(globs)}, {_HIVE})")  # noqa: S608
    lacking = sorted(trials - stored)
    if lacking:
        source = f"read_parquet({_files([root / 'trials' / p / '*.parquet' for p in lacking])}, {_HIVE})"
        parts.append(f"SELECT {cols} FROM ({_select(source)})")  # noqa: S608
    if not parts:
        return empty_select(NAME)
    return "\nUNION ALL\n".join(parts)
