"""The warehouse tables as Arrow schemas: the contract between ingest and analysis.

Every table is stored as hive-partitioned Parquet (``<table>/run_id=<id>/part-*.parquet``)
and exposed in the DuckDB file as a view of the same name. Every row carries the
``ingest_batch_id`` of the batch that wrote it. Nullable means *unknown*: a null
token count or cost is never 0.

The tables are written down by family (``warehouse.run_tables``, ``trial_tables``,
``review_tables``, ``ingest_tables``, ``trajectory_tables``, ``rollout_tables``) and gathered here, in the
order docs/tables.md lists them. ``docs/tables.md`` is generated from these modules
(``trialhouse tables --markdown``) and a test keeps it in sync.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from warehouse import (
    ingest_tables,
    review_tables,
    rollout_tables,
    run_tables,
    trajectory_tables,
    trial_tables,
)
from warehouse.table_spec import Column, TableSpec, table_spec

if TYPE_CHECKING:
    import pyarrow as pa


ROW_GROUP_ROWS = 122_880
"""Rows per Parquet row group the warehouse writes: DuckDB's own row-group size, since it
scans a file in parallel by row group (one 1M-row group would use one core)."""

DUCKDB_TYPES = {"string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT",
                "float64": "DOUBLE", "bool": "BOOLEAN", "timestamp": "TIMESTAMPTZ"}

SPEC: dict[str, TableSpec] = {
    **run_tables.SPECS, **trial_tables.SPECS, **review_tables.SPECS, **ingest_tables.SPECS,
    **trajectory_tables.SPECS, **rollout_tables.SPECS,
}
"""Table name → (doc, columns) of every ingested table."""
for _name, (_doc, _cols) in trajectory_tables.ADDED_COLUMNS.items():
    _table_doc, _existing = SPEC[_name]
    SPEC[_name] = (_table_doc, (*_existing[:-1], *_cols[1:-1], _existing[-1]))  # before ingest_batch_id

SPEC_FILES = ("run_tables.py", "trial_tables.py", "review_tables.py", "ingest_tables.py",
              "trajectory_tables.py", "rollout_tables.py", "schema.py")
"""The files of ``warehouse`` that write tables down (docs/tables.md takes column notes from them)."""


DERIVED: dict[str, TableSpec] = {
    "task_rollup": table_spec(
        "Derived, not ingested: one row per (run, configuration, case) with its trial counts and "
        "known cost, rebuilt from the run's `trials` whenever they are written (see "
        "`warehouse/rollup.py`). Task-level analyses read it instead of grouping every trial.",
        Column("config_id", "string", False),
        Column("case_id", "string", False),
        Column("trials", "int64", False),  # all trials, incomplete ones included
        Column("complete", "int64", False),  # trials with a finish (complete = true)
        Column("valid", "int64", False),  # complete and outcome not infra_error/invalid
        Column("solved", "int64", False),  # complete and outcome = accepted
        Column("infra", "int64", False),  # complete and outcome = infra_error
        Column("invalid", "int64", False),  # complete and outcome = invalid
        Column("cost_usd", "float64"),  # exact sum (fsum) of the known costs of complete trials; null when none
        Column("cost_known", "int64", False),  # complete trials whose cost is known
    ),
    "config_rollup": table_spec(
        "Derived, not ingested: one row per (run, configuration) with the medians and quantiles "
        "of its complete trials, rebuilt with `task_rollup` (see `warehouse/rollup.py`). "
        "`summarize` reads it when its trials are exactly each configuration's trials of one "
        "run; any other selection scans the trials.",
        Column("config_id", "string", False),
        Column("complete", "int64", False),  # complete trials
        Column("valid", "int64", False),  # complete and outcome not infra_error/invalid
        Column("med_steps", "float64"),  # median steps of valid trials
        Column("med_tokens", "float64"),  # median input + output tokens of valid trials
        Column("cost_p50", "float64"),  # quantile_cont of the known costs; null when none
        Column("cost_p90", "float64"),
        Column("cost_p95", "float64"),
        Column("latency_p50", "float64"),  # quantile_cont of duration_s (wall seconds)
        Column("latency_p90", "float64"),
        Column("latency_p95", "float64"),
    ),
}
"""Tables computed from other tables when they are written (never by an importer)."""


def columns(name: str) -> tuple[Column, ...]:
    """The columns of a table, without importing pyarrow (views, docs, SQL)."""
    return SPEC[name][1] if name in SPEC else DERIVED[name][1]


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    return {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(),
            "float64": pa.float64(), "bool": pa.bool_(),
            "timestamp": pa.timestamp("us", tz="UTC")}[kind]


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of a table or derived table (its doc in the metadata)."""
    import pyarrow as pa

    doc, cols = SPEC[name] if name in SPEC else DERIVED[name]
    return pa.schema([pa.field(c.name, _arrow_type(c.type), c.nullable) for c in cols],
                     metadata={"doc": doc})


def empty_select(name: str) -> str:
    """A SELECT of no rows with the table's columns and types (a view before any file)."""
    cols = ", ".join(f"CAST(NULL AS {DUCKDB_TYPES[c.type]}) AS {c.name}" for c in columns(name))
    return f"SELECT {cols} WHERE FALSE"


class _ArrowSchemas(Mapping[str, "pa.Schema"]):
    """Table name → ``pa.Schema``, built on first use so readers don't import pyarrow."""

    def __init__(self) -> None:
        self._built: dict[str, pa.Schema] = {}

    def __getitem__(self, name: str) -> pa.Schema:
        if name not in SPEC:
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = arrow_schema(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(SPEC)

    def __len__(self) -> int:
        return len(SPEC)


TABLES: Mapping[str, pa.Schema] = _ArrowSchemas()
"""Table name → Arrow schema (the contract between ingest and analysis)."""


def empty_table(name: str) -> pa.Table:
    return TABLES[name].empty_table()


def table_from_rows(name: str, rows: list[dict]) -> pa.Table:
    """Build a typed Arrow table; missing keys become null, unknown keys are an error."""
    import pyarrow as pa

    schema = TABLES[name]
    names = set(schema.names)
    for i, row in enumerate(rows):
        extra = set(row) - names
        if extra:
            raise KeyError(f"{name} row {i}: unknown columns {sorted(extra)}")
    return pa.Table.from_pylist(rows, schema=schema)


class TableRows:
    """Rows of one table gathered as Arrow chunks of at most ``CHUNK_ROWS`` rows or
    ``CHUNK_TEXT`` characters of text.

    An import holds every record until its file is written (all or nothing), and a file at the
    bounds (50,000 records, 64 MiB of text) held as dicts and then converted at once peaked at
    475 MB; converted a chunk at a time it peaks at 234 MB (tests/ingest/test_ingest_review_csv.py).
    """

    CHUNK_ROWS = 2000
    CHUNK_TEXT = 8 * 1024 * 1024

    def __init__(self, name: str) -> None:
        self.name = name
        self._pending: list[dict] = []
        self._text = 0
        self._chunks: list[pa.Table] = []
        self._count = 0

    def append(self, row: dict) -> None:
        extra = set(row) - set(TABLES[self.name].names)
        if extra:
            raise KeyError(f"{self.name} row {self._count}: unknown columns {sorted(extra)}")
        self._pending.append(row)
        self._count += 1
        self._text += sum(len(v) for v in row.values() if isinstance(v, str))
        if len(self._pending) >= self.CHUNK_ROWS or self._text >= self.CHUNK_TEXT:
            self._flush()

    def __len__(self) -> int:
        return self._count

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(table_from_rows(self.name, self._pending))
        self._pending, self._text = [], 0

    def table(self, **constant: object) -> pa.Table:
        """Every row, with ``constant`` columns (the run id, the batch id) set on all of them."""
        import pyarrow as pa

        self._flush()
        table = pa.concat_tables(self._chunks) if self._chunks else empty_table(self.name)
        for column, value in constant.items():
            i = table.schema.get_field_index(column)
            values = pa.array([value] * table.num_rows, type=table.schema.field(i).type)
            table = table.set_column(i, table.schema.field(i), values)
        return table
