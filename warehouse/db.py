"""The warehouse as a whole: one DuckDB file of views plus hive-partitioned Parquet beside it.

Layout for a warehouse ``W = path/to/trialhouse.duckdb``::

    path/to/trialhouse.parquet/<table>/run_id=<run id>/part-0.parquet
    path/to/trialhouse.duckdb      views over those files + bookkeeping tables
    path/to/trialhouse.lock        held while a writer is loading

Here: the writer's lock, opening the DuckDB file (its views over the files, refreshed
after a write), and making a warehouse ready for a writer. The partitions themselves —
replacing a run's, all or none, and rolling back what a killed writer left — are
``warehouse.partitions``, whose functions this module also offers (``db.replace_run``, …)
so callers have one door to the warehouse.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from warehouse import rollup
from warehouse.errors import WarehouseError
from warehouse.partitions import (
    delete_run,
    parquet_root,
    partition_name_ok,
    read_partition,
    replace_run,
    run_ids,
    staging_file,
    sweep,
)
from warehouse.schema import DUCKDB_TYPES, TABLES, columns, empty_select

__all__ = [
    "EXCLUDED_RUNS", "EXCLUSION", "UNFILTERED", "WarehouseLocked", "check_warehouse_path", "delete_run",
    "include_invalidated", "open", "parquet_root", "partition_name_ok", "prepare", "read_partition",
    "refresh", "refresh_views", "replace_run", "run_ids", "staging_file", "sweep", "write_lock",
    "WarehouseError",
]


class WarehouseLocked(WarehouseError):
    exit_code = 3


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


_KEY = "-- files: "

UNFILTERED = ("runs", "run_status", "ingest_batches")
"""Views that show invalidated runs too (the registry); every other view leaves them out."""
EXCLUSION = "run_id NOT IN (SELECT run_id FROM excluded_runs)"
EXCLUDED_RUNS = ("CREATE OR REPLACE VIEW excluded_runs AS SELECT run_id, reason FROM run_status "
                 "WHERE status = 'invalidated'")
"""The one place invalidated runs are left out; ``include_invalidated`` shadows it for a session."""


def include_invalidated(con: duckdb.DuckDBPyConnection) -> None:
    """Make this connection's views show invalidated runs too (``--include-invalidated``)."""
    con.execute("CREATE OR REPLACE TEMP VIEW excluded_runs AS "
                "SELECT CAST(NULL AS VARCHAR) AS run_id, CAST(NULL AS VARCHAR) AS reason WHERE false")


def _view_key(root: Path, name: str) -> str:
    """What a table's view depends on besides its files' columns: empty, or which glob."""
    if not any((root / name).glob("run_id=*/*.parquet")):
        return f"{_KEY}none"
    return _KEY + str(root / name / "run_id=*" / "*.parquet")


def _view_sql(con: duckdb.DuckDBPyConnection, root: Path, name: str) -> str:
    """A view per table; an empty typed view when the table has no files yet.

    Columns the contract gained after some partitions were written are read as NULL from
    those partitions (``union_by_name``), and as a typed NULL when no partition has them yet,
    so a warehouse written by an older trialhouse stays readable.
    """
    key = _view_key(root, name)
    if key.endswith("none"):
        return f"{key}\nCREATE OR REPLACE VIEW {name} AS {empty_select(name)}"
    keep = "" if name in UNFILTERED else f" WHERE {EXCLUSION}"
    glob = str(root / name / "run_id=*" / "*.parquet").replace("'", "''")
    source = (f"read_parquet('{glob}', hive_partitioning = true, hive_types = {{'run_id': VARCHAR}}, "
              "union_by_name = true)")
    present = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}  # noqa: S608
    cols = ", ".join(c.name if c.name in present else f"CAST(NULL AS {DUCKDB_TYPES[c.type]}) AS {c.name}"
                     for c in columns(name))
    # DDL takes no parameters; names come from TABLES and the path is quote-escaped.
    return f"{key}\nCREATE OR REPLACE VIEW {name} AS SELECT {cols} FROM {source}{keep}"  # noqa: S608


def refresh_views(con: duckdb.DuckDBPyConnection, db_path: Path, temp: bool = False) -> None:
    """(Re)create one view per table over its Parquet files (absolute paths).

    A writer stores the views and the SQL it made them from (``_view_sql``). ``temp``
    (a read-only connection) creates a session-only view only where that stored SQL is
    not for the files there now (a moved warehouse, a table that gained its first files,
    a rollup still missing), so a reader still reads its own files but usually pays for
    no view at all.
    """
    root = parquet_root(Path(db_path).resolve())
    rollups = {name: f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM ({rollup.view_sql(root, name)}) "  # noqa: S608
                     f"WHERE {EXCLUSION}" for name in rollup.NAMES}
    if not temp:
        tables = {name: _view_sql(con, root, name) for name in TABLES}
        views = {"run_status": tables.pop("run_status"), "excluded_runs": EXCLUDED_RUNS} | tables | rollups
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
    if stored.get("excluded_runs") != EXCLUDED_RUNS:
        stored.pop("run_status", None)  # a warehouse from before invalidation: make both here
        con.execute(_view_sql(con, root, "run_status").replace("CREATE OR REPLACE VIEW",
                                                                "CREATE OR REPLACE TEMP VIEW", 1))
        con.execute(EXCLUDED_RUNS.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
    for name in TABLES:
        if stored.get(name, "").split("\n", 1)[0] != _view_key(root, name):
            sql = _view_sql(con, root, name)
            con.execute(sql.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))
    for name, sql in rollups.items():
        if stored.get(name) != sql:
            con.execute(sql.replace("CREATE OR REPLACE VIEW", "CREATE OR REPLACE TEMP VIEW", 1))


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


def prepare(db_path: Path) -> None:
    """Make the warehouse ready for a writer that holds the write lock, before it writes anything.

    Rolls back and sweeps what a killed writer left (``sweep``), then makes sure no other
    process holds the DuckDB file open: DuckDB takes a POSIX record lock on it (shared for a
    reader, exclusive for a writer), so asking for the exclusive lock without waiting tells,
    and raises ``WarehouseError`` here, with nothing written. (Asking costs nothing; opening
    DuckDB here would keep its memory for the whole ingest.)
    """
    sweep(db_path)
    db_path = Path(db_path)
    if not db_path.exists():
        return
    try:
        fd = os.open(db_path, os.O_RDWR)
    except OSError as exc:
        raise WarehouseError(f"{db_path}: cannot open warehouse ({exc.strerror})") from None
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
    except OSError:
        raise WarehouseError(
            f"{db_path}: cannot open warehouse: another process has it open (a notebook, "
            "'trialhouse sql', another tool); close it and run the command again"
        ) from None
    finally:
        os.close(fd)


def refresh(db_path: Path) -> str | None:
    """Refresh the stored views after a write; a note (not an error) when the DuckDB file is
    held by another process in the meantime: the data is written, and every reader makes
    its own views of the files it finds (``refresh_views``), so it sees the new data anyway."""
    try:
        open(db_path).close()
    except WarehouseError as exc:
        return (f"{db_path}: the data is written, but the stored views could not be refreshed ({exc}); "
                "readers see the new data all the same, and the next ingest refreshes them")
    return None
