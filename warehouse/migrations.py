"""Named, ordered warehouse migrations, recorded in ``_migrations``.

Table views are recreated from the Parquet files on every open (``warehouse.db``);
migrations hold what lives in the DuckDB file itself: bookkeeping tables and derived
views. Add new entries at the end; never rename or reorder applied ones.
``pending`` only reads, so it works on a read-only connection.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib import resources

import duckdb


def _sql(name: str) -> str:
    return resources.files("warehouse").joinpath("sql", name).read_text(encoding="utf-8")


MIGRATIONS: list[tuple[str, str]] = [
    ("0001_warehouse_info", _sql("warehouse_info.sql")),
    ("0002_trial_facts_view", _sql("trial_facts.sql")),
]
"""(name, SQL) in the order they are applied."""


def applied(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of applied migrations, in the order they were applied."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = '_migrations' AND NOT temporary"
    ).fetchall()[0][0]
    if not exists:
        return []
    return [r[0] for r in con.execute("SELECT name FROM _migrations ORDER BY applied_at, name").fetchall()]


def pending(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Names of migrations not yet applied (read-only)."""
    done = set(applied(con))
    return [name for name, _ in MIGRATIONS if name not in done]


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every pending migration, each in its own transaction; return their names."""
    todo = pending(con)
    if not todo:
        return []
    con.execute(_sql("migrations_table.sql"))
    sql_by_name = dict(MIGRATIONS)
    for name in todo:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(sql_by_name[name])
            con.execute(
                "INSERT INTO _migrations (name, applied_at) VALUES ($name, $at)",
                {"name": name, "at": datetime.now(UTC)},
            )
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return todo
