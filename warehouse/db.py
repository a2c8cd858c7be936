"""Storage: one DuckDB file plus hive-partitioned Parquet beside it.

Layout for a warehouse ``W = path/to/trialhouse.duckdb``::

    path/to/trialhouse.parquet/<table>/run_id=<run id>/part-0.parquet
    path/to/trialhouse.duckdb      views over those files + bookkeeping tables
    path/to/trialhouse.lock        held while a writer is loading

A load replaces whole run partitions, all tables of the run at once or none (``replace_run``:
every new partition is written to a hidden directory first, then all are renamed in place
under a journal), so loading the same run again yields exactly its latest state and a
failure or a kill at any point leaves the warehouse as it was (the next writer rolls back
an unfinished swap and sweeps what was left: ``prepare``). Partition values are safe by
construction: a run id must be a safe identifier (``contract.values.ID_PATTERN``), checked
before anything is written, so no path can be misread by DuckDB or pyarrow.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from warehouse import rollup
from warehouse.errors import WarehouseError
from warehouse.schema import DERIVED, DUCKDB_TYPES, ROW_GROUP_ROWS, TABLES, columns, empty_select

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


def partition_name_ok(run_id: object) -> bool:
    """Whether ``run_id`` can name a partition (a safe identifier)."""
    from contract.values import id_problem  # here: the event models cost every reader ~0.15 s

    return id_problem(run_id) is None


def _partition(run_id: str) -> str:
    """``run_id=<id>``: the Hive partition directory of a run (a safe id, else WarehouseError)."""
    from contract.values import id_problem  # here: the event models cost every reader ~0.15 s

    if why := id_problem(run_id):
        raise WarehouseError(f"run_id {run_id!r} cannot name a partition: it {why}")
    return f"run_id={run_id}"


_HIDDEN = (".stage-", ".tmp-", ".old-")
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


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sweep(db_path: Path) -> list[Path]:
    """Finish what a killed writer left (caller holds the write lock): roll back an unfinished
    partition swap (``_Swap.recover``), then remove staged files and temporary directories.
    Returns what was removed."""
    root = parquet_root(db_path)
    if not root.is_dir():
        return []
    removed = []
    for journal in sorted(root.glob(".swap-*.json")):
        _Swap.recover(journal)
        removed.append(journal)
    for tmp in root.glob(".swap-*.json.tmp"):
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    for table_dir in root.iterdir():
        if table_dir.is_dir():
            for p in table_dir.iterdir():
                if p.name.startswith(_HIDDEN):
                    _remove(p)
                    removed.append(p)
    return removed


class _Swap:
    """Renames a run's new partitions into place, all or none, under a journal file.

    ``steps``: (new directory, partition directory). Before the first rename the journal
    lists every step and whether its partition existed; an existing partition is first
    renamed aside (``.old-*``), so each step can be undone. Any failure undoes the steps
    done; a writer killed mid-swap leaves the journal, and the next writer's ``sweep`` undoes
    them (``recover``). Once every rename is done the journal says so, and recovery only
    removes what was renamed aside.
    """

    def __init__(self, root: Path, steps: list[tuple[Path, Path]]) -> None:
        self.journal = root / f".swap-{uuid.uuid4().hex}.json"
        self.steps: list[dict[str, Any]] = [{"new": str(new), "target": str(target), "existed": target.exists(),
                       "old": str(target.with_name(f".old-{uuid.uuid4().hex}"))} for new, target in steps]

    def _write(self, state: str) -> None:
        tmp = self.journal.with_name(self.journal.name + ".tmp")
        tmp.write_text(json.dumps({"state": state, "steps": self.steps}), encoding="utf-8")
        os.replace(tmp, self.journal)

    def run(self) -> None:
        self._write("swapping")
        try:
            for step in self.steps:
                if step["existed"]:
                    Path(step["target"]).rename(step["old"])
                Path(step["new"]).rename(step["target"])
            self._write("done")  # from here on the new partitions stay, whatever happens
        except BaseException:
            self.recover(self.journal)
            raise
        try:
            self.recover(self.journal)  # only tidies now (removes what was renamed aside)
        except OSError:
            pass  # the next writer's sweep finishes it

    @staticmethod
    def recover(journal: Path) -> None:
        """Undo an unfinished swap (or tidy a finished one), then remove the journal."""
        try:
            doc = json.loads(journal.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # unreadable: it was being written, before any rename
            journal.unlink(missing_ok=True)
            return
        for step in reversed(doc["steps"]):
            new, target, old = Path(step["new"]), Path(step["target"]), Path(step["old"])
            if doc["state"] == "done":
                _remove(old)
            elif old.exists():  # the original was renamed aside (and maybe the new one in): restore it
                if target.exists():
                    _remove(target)
                old.rename(target)
            elif not step["existed"] and not new.exists() and target.exists():
                _remove(target)  # a partition that did not exist before was renamed in: remove it
            _remove(new)
        journal.unlink(missing_ok=True)


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
    them all in (``_Swap``). A failure anywhere leaves the warehouse exactly as it was.
    """
    part = _partition(run_id)
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
        _Swap(root, [(tmp, root / name / part) for name, tmp in prepared.items()]).run()
    finally:
        for tmp in prepared.values():
            _remove(tmp)  # gone already after a swap; what a failure left otherwise
    for name in rollup.NAMES:  # an empty rollup partition is no partition
        d = root / name / part
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    for lacking in rollup.missing(root):  # e.g. a warehouse written before rollups existed
        rollup.build(root, lacking)


def delete_run(db_path: Path, run_id: str) -> None:
    """Remove every partition of ``run_id`` (tables and rollups), all or none (caller holds the lock)."""
    root = parquet_root(db_path)
    part = _partition(run_id)
    steps = []
    for name in (*TABLES, *DERIVED):
        if (root / name / part).exists():
            empty = root / name / f".tmp-{uuid.uuid4().hex}"
            empty.mkdir(parents=True)
            steps.append((empty, root / name / part))
    try:
        _Swap(root, steps).run()
    finally:
        for empty, _target in steps:
            _remove(empty)
    for _empty, target in steps:
        if target.is_dir() and not any(target.iterdir()):
            target.rmdir()


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


def read_partition(db_path: Path, table: str, run_id: str) -> pa.Table | None:
    """The stored partition of one run (without run_id), or None."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = parquet_root(db_path) / table / _partition(run_id)
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
