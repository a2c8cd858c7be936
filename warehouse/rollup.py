"""Rollups: tables derived from a run's trials when they are written.

- ``task_rollup``: trial counts per (run, configuration, case).
- ``config_rollup``: medians and quantiles per (run, configuration).

Why: the task-level questions (common tasks, task means, pass^k) group every trial
into (configuration, case) cells, and a whole-run summary needs medians over every
trial; at millions of trials that work dominates a query, and it only changes when a
run's trials do. So ``replace_run`` rebuilds the run's rollups with its trials, from the
same Parquet files.

Never stale: a run's rollups are built from its new trials before anything is replaced and
swapped in together with them (``warehouse.db.replace_run``: all or nothing). Should one be
missing all the same (a warehouse from before rollups, a file removed by hand), each rollup
view reads the stored partitions and computes the rows of any run whose partition is
missing from its trials (correct, only slower); the next write rebuilds the missing ones.
"""

from __future__ import annotations

import shutil
import uuid
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from warehouse.rules import trial_status
from warehouse.schema import DERIVED, ROW_GROUP_ROWS, arrow_schema, empty_select

if TYPE_CHECKING:
    import pyarrow as pa

NAMES = ("task_rollup", "config_rollup")
_HIVE = "hive_partitioning = true, hive_types = {'run_id': VARCHAR}, union_by_name = true"


def _select(name: str, source: str) -> str:
    """The rollup's SELECT over ``source`` read through the valid-trial rule."""
    sql = resources.files("warehouse").joinpath("sql", f"{name}.sql").read_text("utf-8")
    return sql.replace("{source}", trial_status(source))


def _partitions(root: Path, table: str) -> set[str]:
    d = root / table
    return {p.name for p in d.glob("run_id=*") if any(p.glob("*.parquet"))} if d.exists() else set()


def drop(root: Path, partition: str) -> None:
    """Remove one run's rollups (before its trials change)."""
    for name in NAMES:
        target = root / name / partition
        if target.exists():
            shutil.rmtree(target)


def build(root: Path, partition: str) -> None:
    """(Re)build one run's rollups from its stored trials files; no trials, no rollups."""
    drop(root, partition)
    for name, tmp in prepare(root, sorted((root / "trials" / partition).glob("*.parquet"))).items():
        tmp.rename(root / name / partition)


def prepare(root: Path, trials: list[Path] | pa.Table) -> dict[str, Path]:
    """Each rollup of the run whose trials are ``trials`` (its Parquet files, or the table
    about to be written: no need to read back what is still in memory), written to a hidden
    directory beside its partitions (``.tmp-*``, swept if left behind); the caller renames
    them in place. No trials files, no rollups (an empty dict)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(trials, list) and not trials:
        return {}
    con = duckdb.connect()
    try:
        # Not hive-partitioned: the files may not sit in their partition yet; run_id is the partition anyway.
        if isinstance(trials, pa.Table):
            con.register("new_trials", trials)
            source, params = "(SELECT * REPLACE (CAST(NULL AS VARCHAR) AS run_id) FROM new_trials)", None
        else:
            source, params = "(SELECT *, CAST(NULL AS VARCHAR) AS run_id FROM read_parquet(?))", [[str(f) for f in trials]]
        tables = {name: con.sql(_select(name, source), params=params).to_arrow_table() for name in NAMES}
    finally:
        con.close()
    out: dict[str, Path] = {}
    try:
        for name, table in tables.items():
            schema = arrow_schema(name)
            schema = schema.remove(schema.get_field_index("run_id"))  # the partition
            table = table.select(schema.names).cast(schema)
            tmp = root / name / f".tmp-{uuid.uuid4().hex}"
            tmp.mkdir(parents=True)
            out[name] = tmp
            pq.write_table(table, tmp / "part-0.parquet", compression="zstd",
                           row_group_size=ROW_GROUP_ROWS // 2)  # task_rollup: ~1/5 of the trials
    except BaseException:
        for tmp in out.values():
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def missing(root: Path) -> list[str]:
    """Run partitions that have trials but lack a stored rollup."""
    trials = _partitions(root, "trials")
    return sorted(set().union(*(trials - _partitions(root, name) for name in NAMES)))


def _files(paths: list[Path]) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def view_sql(root: Path, name: str) -> str:
    """A rollup's view: stored partitions plus on-the-fly rows for runs lacking one.

    DDL takes no parameters: the only values in it are our own Parquet paths, quote-escaped.
    """
    trials = _partitions(root, "trials")
    every = _partitions(root, name)
    stored = every & trials  # a rollup whose trials are gone is left out
    cols = ", ".join(c.name for c in DERIVED[name][1])
    parts = []
    if stored:
        globs = ([root / name / "run_id=*" / "*.parquet"] if stored == every
                 else [root / name / p / "*.parquet" for p in sorted(stored)])
        parts.append(f"SELECT {cols} FROM read_parquet({_files(globs)}, {_HIVE})")  # noqa: S608
    lacking = sorted(trials - stored)
    if lacking:
        source = f"read_parquet({_files([root / 'trials' / p / '*.parquet' for p in lacking])}, {_HIVE})"
        parts.append(f"SELECT {cols} FROM ({_select(name, source)})")  # noqa: S608
    if not parts:
        return empty_select(name)
    return "\nUNION ALL\n".join(parts)
