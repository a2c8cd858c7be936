"""The warehouse: one DuckDB file plus hive-partitioned Parquet tables.

``warehouse.open(path)`` returns a DuckDB connection with one view per table;
``warehouse.query(con, sql, params)`` returns a polars DataFrame.
"""

from __future__ import annotations

from pathlib import Path

from warehouse.db import open, parquet_root  # noqa: A004
from warehouse.schema import TABLES

DEFAULT_WAREHOUSE = Path("demo/warehouse/trialhouse.duckdb")


def query(con, sql: str, params: list | dict | None = None):
    """Run parameterised SQL and return a polars DataFrame."""
    return con.execute(sql, params or []).pl()


__all__ = ["open", "query", "parquet_root", "TABLES", "DEFAULT_WAREHOUSE"]
