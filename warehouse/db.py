"""Storage: one DuckDB file plus hive-partitioned Parquet beside it.

Layout for a warehouse ``W = path/to/trialhouse.duckdb``::

    path/to/trialhouse.parquet/<table>/run_id=<run id>/part-0.parquet
    path/to/trialhouse.duckdb      views over those files + bookkeeping tables
    path/to/trialhouse.lock        held while a writer is loading

A load replaces whole run partitions (write to a temporary directory, then rename), so
loading the same run again yields exactly its latest state and a crash mid-load leaves
the previous partition intact.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from warehouse import rollup
from warehouse.errors import WarehouseError
from warehouse.schema import ROW_GROUP_ROWS, TABLES, columns, empty_select

if TYPE_CHECKING:  # pyarrow is imported where tables are written or read, not to query
    import pyarrow as pa


class WarehouseLocked(WarehouseError):
    exit_code = 3


def parquet_root(db_path: Path) -> Path:
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + ".parquet")


def _lock_path(db_path: Path) -> Path:
    return Path(db_path).with_name(Path(db_path).stem + ".lock")


@contextmanager
def write_lock(db_path: Path) -> Iterator[None]:
    """Exclusive writer lock; a second writer fails fast with a clear message."""
    path = _lock_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WarehouseLocked(
                f"{db_path}: warehouse is locked by another ingest; "
                "wait for it to finish and run the command again"
            ) from None
        yield
    finally:
        os.close(fd)


def _safe_partition(run_id: str) -> str:
    # Hive partition values must be path-safe; keep them readable.
    bad = set('/\\\0') | {os.sep}
    if not run_id or run_id in {".", ".."} or any(c in bad for c in run_id):
        raise WarehouseError(f"run_id {run_id!r} cannot be used as a partition name")
    return run_id


def staging_file(db_path: Path, table: str) -> Path:
    """A fresh file path on the warehouse's file system for streaming a partition.

    Write a Parquet file there (the table's columns without ``run_id``) and pass the
    path to ``replace_run`` instead of an Arrow table; large tables never sit in memory.
    """
    d = parquet_root(db_path) / table
    d.mkdir(parents=True, exist_ok=True)
    return d / f".stage-{uuid.uuid4().hex}.parquet"


def replace_run(db_path: Path, run_id: str, tables: Mapping[str, pa.Table | Path | list[Path]]) -> None:
    """Replace every table partition of ``run_id`` with ``tables`` (caller holds the lock).

    Tables not named in ``tables`` are left untouched for that run. Each table must
    match its schema in ``warehouse.schema.TABLES`` (the run_id column is the partition).
    A value may also be the path of a Parquet file from ``staging_file`` (moved in place),
    or a list of such paths (each becomes one part file of the partition).
    """
    import pyarrow.parquet as pq

    root = parquet_root(db_path)
    part = f"run_id={_safe_partition(run_id)}"
    if "trials" in tables:  # missing, never stale, if we stop before the rebuild below
        rollup.drop(root, part)
    for name, table in tables.items():
        schema = TABLES[name]
        target = root / name / part
        tmp = root / name / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir(parents=True)
        if isinstance(table, Path):
            table.rename(tmp / "part-0.parquet")
        elif isinstance(table, list):  # several staged files (e.g. a file read in two processes)
            for i, path in enumerate(table):
                path.rename(tmp / f"part-{i}.parquet")
        else:
            if table.schema != schema:
                table = table.select(schema.names).cast(schema)
            # Row groups of DuckDB's own size, so a scan of one big run uses every core.
            pq.write_table(table.drop_columns(["run_id"]), tmp / "part-0.parquet",
                           compression="zstd", row_group_size=ROW_GROUP_ROWS)
        old = None
        if target.exists():
            old = root / name / f".old-{uuid.uuid4().hex}"
            target.rename(old)
        tmp.rename(target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    if "trials" in tables:
        rollup.build(root, part)
    for lacking in rollup.missing(root):  # e.g. a warehouse written before rollups existed
        rollup.build(root, lacking)


def delete_run(db_path: Path, run_id: str) -> None:
    root = parquet_root(db_path)
    for name in TABLES:
        target = root / name / f"run_id={_safe_partition(run_id)}"
        if target.exists():
            shutil.rmtree(target)
    rollup.drop(root, f"run_id={_safe_partition(run_id)}")


def _view_sql(root: Path, name: str) -> str:
    """A view per table; an empty typed view when the table has no files yet."""
    files = list((root / name).glob("run_id=*/*.parquet"))
    if not files:
        return f"CREATE OR REPLACE VIEW {name} AS {empty_select(name)}"
    glob = str(root / name / "run_id=*" / "*.parquet").replace("'", "''")
    cols = ", ".join(c.name for c in columns(name))
    # DDL takes no parameters; names come from TABLES and the path is quote-escaped.
    return (
        f"CREATE OR REPLACE VIEW {name} AS SELECT {cols} FROM read_parquet('{glob}', "  # noqa: S608
        "hive_partitioning = true, hive_types = {'run_id': VARCHAR}, union_by_name = true)"
    )


def refresh_views(con: duckdb.DuckDBPyConnection, db_path: Path, temp: bool = False) -> None:
    """(Re)create one view per table over its Parquet files (absolute paths).

    A writer stores the views and the SQL it made them from (``_view_sql``). ``temp``
    (a read-only connection) creates a session-only view only where that stored SQL is
    not what the files need now (a moved warehouse, a table that gained its first files,
    a rollup still missing), so a reader still reads its own files but usually pays for
    no view at all.
    """
    root = parquet_root(Path(db_path).resolve())
    views = {name: _view_sql(root, name) for name in TABLES}
    for name in rollup.NAMES:
        views[name] = f"CREATE OR REPLACE VIEW {name} AS {rollup.view_sql(root, name)}"
    if not temp:
        con.execute("BEGIN TRANSACTION")
        for sql in views.values():
            con.execute(sql)
        con.execute("CREATE TABLE IF NOT EXISTS _view_sql (name VARCHAR PRIMARY KEY, sql VARCHAR NOT NULL)")
        con.execute("DELETE FROM _view_sql")
        con.executemany("INSERT INTO _view_sql VALUES (?, ?)", list(views.items()))
        con.execute("COMMIT")
        return
    stored: dict[str, str] = {}
    if con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = '_view_sql' "
                   "AND NOT temporary").fetchall()[0][0]:
        stored = dict(con.execute("SELECT name, sql FROM _view_sql").fetchall())
    for name, sql in views.items():
        if stored.get(name) != sql:
            con.execute(sql.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))


def read_partition(db_path: Path, table: str, run_id: str) -> pa.Table | None:
    """The stored partition of one run (without run_id), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = parquet_root(db_path) / table / f"run_id={_safe_partition(run_id)}"
    files = sorted(d.glob("*.parquet")) if d.exists() else []
    return pa.concat_tables([pq.read_table(f) for f in files]) if files else None


def run_ids(db_path: Path, table: str = "runs") -> list[str]:
    d = parquet_root(db_path) / table
    return sorted(p.name.split("=", 1)[1] for p in d.glob("run_id=*")) if d.exists() else []


def check_warehouse_path(db_path: Path) -> None:
    """Refuse a directory or a non-DuckDB file before DuckDB guesses what it is.

    DuckDB opens e.g. ``x.json`` as an in-memory database, so an ingest would
    seem to succeed and keep nothing; DuckDB files carry ``DUCK`` at byte 8.
    """
    if db_path.is_dir():
        raise WarehouseError(
            f"{db_path}: is a directory; give the warehouse file, e.g. {db_path / 'trialhouse.duckdb'}"
        )
    if db_path.is_file() and db_path.stat().st_size > 0:
        with db_path.open("rb") as fh:
            head = fh.read(12)
        if head[8:12] != b"DUCK":
            raise WarehouseError(
                f"{db_path}: not a DuckDB warehouse file; point --warehouse at a .duckdb file "
                "made by 'trialhouse ingest'"
            )


def open(path: str | os.PathLike[str], read_only: bool = False) -> duckdb.DuckDBPyConnection:  # noqa: A001
    """Open the warehouse as a DuckDB connection with one view per table.

    ``read_only`` opens an existing file without creating it (for analysis).
    """
    db_path = Path(path)
    if read_only and not db_path.exists():
        raise WarehouseError(
            f"{db_path}: no warehouse here; create one with 'trialhouse ingest RUN_DIR --warehouse {db_path}'"
        )
    check_warehouse_path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(str(db_path), read_only=read_only)
    except duckdb.Error as exc:
        raise WarehouseError(f"{db_path}: cannot open warehouse ({exc})") from None
    if read_only:
        refresh_views(con, db_path, temp=True)
    else:
        from warehouse.migrations import migrate

        refresh_views(con, db_path)
        migrate(con)
    return con
