"""Warehouse reads as polars DataFrames: the Python face of the warehouse for analysis code.

Each helper takes a connection from ``warehouse.open`` and runs readable,
parameterised SQL; filters are optional and never interpolated into the SQL text.
"""

from __future__ import annotations

import duckdb
import polars as pl

from warehouse.schema import DERIVED, TABLES


def table_counts(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every table, derived table and view with its row count (tables in TABLES order)."""
    names = [*TABLES, *DERIVED]
    views = [
        r[0]
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"
        ).fetchall()
        if r[0] not in names
    ]
    rows = []
    for name in [*names, *sorted(set(views))]:
        # Names come from our own catalogue, never from user input.
        n = con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]  # noqa: S608
        kind = "table" if name in TABLES else "derived" if name in DERIVED else "view"
        rows.append({"name": name, "kind": kind, "rows": n})
    return pl.DataFrame(rows, schema={"name": pl.String, "kind": pl.String, "rows": pl.Int64})


def trials(
    con: duckdb.DuckDBPyConnection,
    run_id: str | None = None,
    *,
    complete_only: bool = False,
) -> pl.DataFrame:
    """One row per trial from ``trial_facts`` (trial + case labels + configuration)."""
    return con.execute(
        """
        SELECT *
        FROM trial_facts
        WHERE ($run_id IS NULL OR run_id = $run_id)
          AND (NOT $complete_only OR complete)
        ORDER BY run_id, trial_id
        """,
        {"run_id": run_id, "complete_only": complete_only},
    ).pl()  # type: ignore[attr-defined]  # duckdb's stubs lack the result's .pl()


def table(con: duckdb.DuckDBPyConnection, name: str, run_id: str | None = None) -> pl.DataFrame:
    """A whole table (optionally one run) as a DataFrame; ``name`` must be a warehouse table."""
    if name not in TABLES:
        from warehouse.errors import WarehouseError

        raise WarehouseError(f"unknown table {name!r}; known: {', '.join(TABLES)}")
    return con.execute(
        f'SELECT * FROM "{name}" WHERE ($run_id IS NULL OR run_id = $run_id)',  # noqa: S608
        {"run_id": run_id},
    ).pl()  # type: ignore[attr-defined]  # duckdb's stubs lack the result's .pl()


def quarantine(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> pl.DataFrame:
    """Quarantined lines with file, line and reason."""
    return con.execute(
        """
        SELECT run_id, source_file, line, reason, raw_text
        FROM quarantine
        WHERE ($run_id IS NULL OR run_id = $run_id)
        ORDER BY run_id, source_file, line
        """,
        {"run_id": run_id},
    ).pl()  # type: ignore[attr-defined]  # duckdb's stubs lack the result's .pl()
