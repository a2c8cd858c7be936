"""A warehouse's Parquet partitions: where they are, and replacing or removing a run's, all or none.

Layout: ``<W>.parquet/<table>/run_id=<run id>/part-*.parquet`` beside the DuckDB file
``<W>.duckdb``. A load replaces whole run partitions, all tables of the run at once or
none (``replace_run``: every new partition is written to a hidden directory first, then
all are renamed in place by one journaled ``PartitionSwap``); a writer killed at any point
leaves what the next writer's ``sweep`` rolls back. A partition name is a safe id
(``contract.values.ID_PATTERN``), checked before anything is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contract.values import id_problem
from warehouse import rollup
from warehouse.errors import WarehouseError
from warehouse.partition_swap import PartitionSwap, remove_path
from warehouse.schema import DERIVED, ROW_GROUP_ROWS, TABLES

if TYPE_CHECKING:  # pyarrow is imported where tables are written or read, not to query
    import pyarrow as pa


def parquet_root(db_path: Path) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + ".parquet")


def partition_name_ok(run_id: object) -> bool:
    """Whether ``run_id`` can name a partition (a safe identifier)."""
    return id_problem(run_id) is None


def partition_dir(run_id: str) -> str:
    """``run_id=<id>``: the Hive partition directory of a run (a safe id, else WarehouseError)."""
    if why := id_problem(run_id):
        raise WarehouseError(f"run_id {run_id!r} cannot name a partition: it {why}")
    return f"run_id={run_id}"


HIDDEN = (".stage-", ".tmp-", ".old-")
"""Prefixes of a writer's work files and directories beside the partitions (never matched by
the views' ``run_id=*`` globs); what is left of them belongs to a writer that died."""


def staging_file(db_path: Path, table: str) -> Path:
    """A fresh file path on the warehouse's file system for streaming a partition.

    Write a Parquet file there (the table's columns without ``run_id``) and pass the
    path to ``replace_run`` instead of an Arrow table; large tables never sit in memory.
    """
    d = parquet_root(db_path) / table
    d.mkdir(parents=True, exist_ok=True)
    return d / f".stage-{uuid.uuid4().hex}.parquet"


def sweep(db_path: Path) -> list[Path]:
    """Finish what a killed writer left (caller holds the write lock): roll back an unfinished
    partition swap (``PartitionSwap.recover``), then remove staged files and temporary directories.
    Returns what was removed."""
    root = parquet_root(db_path)
    if not root.is_dir():
        return []
    removed = []
    for journal in sorted(root.glob(".swap-*.json")):
        PartitionSwap.recover(journal)
        removed.append(journal)
    for tmp in root.glob(".swap-*.json.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    for table_dir in root.iterdir():
        if table_dir.is_dir():
            for p in table_dir.iterdir():
                if p.name.startswith(HIDDEN):
                    remove_path(p)
                    removed.append(p)
    return removed


def _conformed(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` as ``schema`` has it: its columns, in order, of its types."""
    return table if table.schema == schema else table.select(schema.names).cast(schema)


def _write_table(tmp: Path, table: pa.Table | Path | list[Path], schema: pa.Schema) -> None:
    import pyarrow.parquet as pq

    if isinstance(table, Path):
        table.rename(tmp / "part-0.parquet")
    elif isinstance(table, list):  # several staged files (e.g. a file read in two processes)
        for i, path in enumerate(table):
            path.rename(tmp / f"part-{i}.parquet")
    else:
        table = _conformed(table, schema)
        # Row groups of DuckDB's own size, so a scan of one big run uses every core.
        pq.write_table(table.drop_columns(["run_id"]), tmp / "part-0.parquet",
                       compression="zstd", row_group_size=ROW_GROUP_ROWS)


def _write_all(root: Path, tables: Mapping[str, pa.Table | Path | list[Path]], prepared: dict[str, Path]) -> None:
    """Write every table into its ``prepared`` directory, and the rollups of new trials (added
    to ``prepared``). Two at a time (pyarrow encodes without the GIL: a big run's trials and
    attempts are each a second of one core); trials still in memory have their rollups built
    from them meanwhile (DuckDB on its own threads), files are read back after."""
    trials = tables.get("trials")
    with ThreadPoolExecutor(2) as pool:
        work = [pool.submit(_write_table, prepared[name], table, TABLES[name]) for name, table in tables.items()]
        early = (pool.submit(rollup.prepare, root, _conformed(trials, TABLES["trials"]))
                 if trials is not None and not isinstance(trials, Path | list) else None)
        futures: list[Future[Any]] = [*work, *([early] if early is not None else [])]
        wait(futures)
        if early is not None and early.exception() is None:
            prepared.update(early.result())  # in ``prepared`` even if a write failed: removed with it
        for done in futures:
            done.result()  # the first failure, if any
    if trials is not None and early is None:
        prepared.update(rollup.prepare(root, sorted(prepared["trials"].glob("*.parquet"))))


def replace_run(db_path: Path, run_id: str, tables: Mapping[str, pa.Table | Path | list[Path]]) -> None:
    """Replace every table partition of ``run_id`` with ``tables``, all or none (caller holds the lock).

    Tables not named in ``tables`` are left untouched for that run. Each table must
    match its schema in ``warehouse.schema.TABLES`` (the run_id column is the partition).
    A value may also be the path of a Parquet file from ``staging_file`` (moved in place),
    or a list of such paths (each becomes one part file of the partition). When ``trials``
    is replaced, the run's rollups are rebuilt from the new trials in the same swap.

    Nothing is visible until every new partition is written; then one journaled swap renames
    them all in (``PartitionSwap``). A failure anywhere leaves the warehouse exactly as it was.
    """
    part = partition_dir(run_id)
    root = parquet_root(db_path)
    prepared: dict[str, Path] = {}
    try:
        for name in tables:
            prepared[name] = root / name / f".tmp-{uuid.uuid4().hex}"
            prepared[name].mkdir(parents=True)
        _write_all(root, tables, prepared)
        if "trials" in tables:
            for name in rollup.NAMES:
                if name not in prepared:  # no trials: the run's rollups go (an empty directory swaps them out)
                    prepared[name] = root / name / f".tmp-{uuid.uuid4().hex}"
                    prepared[name].mkdir(parents=True)
        PartitionSwap(root, [(tmp, root / name / part) for name, tmp in prepared.items()]).run()
    finally:
        for tmp in prepared.values():
            remove_path(tmp)  # gone already after a swap; what a failure left otherwise
    for name in rollup.NAMES:  # an empty rollup partition is no partition
        d = root / name / part
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    for lacking in rollup.missing(root):  # e.g. a warehouse written before rollups existed
        rollup.build(root, lacking)


def delete_run(db_path: Path, run_id: str) -> None:
    """Remove every partition of ``run_id`` (tables and rollups), all or none (caller holds the lock)."""
    root = parquet_root(db_path)
    part = partition_dir(run_id)
    steps = []
    for name in (*TABLES, *DERIVED):
        if (root / name / part).exists():
            empty = root / name / f".tmp-{uuid.uuid4().hex}"
            empty.mkdir(parents=True)
            steps.append((empty, root / name / part))
    try:
        PartitionSwap(root, steps).run()
    finally:
        for empty, _target in steps:
            remove_path(empty)
    for _empty, target in steps:
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()


def read_partition(db_path: Path, table: str, run_id: str) -> pa.Table | None:
    """The stored partition of one run (without run_id), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = parquet_root(db_path) / table / partition_dir(run_id)
    files = sorted(d.glob("*.parquet")) if d.exists() else []
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else None


def run_ids(db_path: Path, table: str = "runs") -> list[str]:
    d = parquet_root(db_path) / table
    return sorted(p.name.split("=", 1)[1] for p in d.glob("run_id=*")) if d.exists() else []
