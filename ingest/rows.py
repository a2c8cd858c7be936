"""The value rules for the rows an importer built, before they are written.

Our events meet the rules in the event contract (``contract.values``); a foreign importer
builds rows from another tool's JSON, so ``checked`` holds every row of its batch to the
same rules against the table contract (``warehouse.schema``): integers within the
column's type, floats finite, strings valid Unicode, required columns present. A row that
breaks one is quarantined with the reason (a trial's attempts, stages, … go with it, under
the trial's reason); the rest is written. Nothing here can raise on a value: a value is
only ever judged.

Identifiers: the run id (a partition) is a safe id (``ingest.identity.run_key``); the ids of
another tool's trials, tasks and configurations stay as that tool wrote them (they must
match its own reports: ``django__django-11099``, ``arith/3``, ``gpt-4o / harness@1.2``), so
they are held to a text rule instead: valid Unicode, no control characters, at most
``FOREIGN_ID_MAX`` characters (docs/design.md, "One rule for every value").
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime

import pyarrow as pa

from contract.redact import Redactor
from contract.values import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, id_problem
from ingest.batch import QuarantineRow, SourceBatch
from ingest.errors import IngestError
from warehouse.schema import columns

FOREIGN_ID_MAX = 512
_ID_COLUMNS = frozenset({"trial_id", "case_id", "config_id", "variant"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RANGES = {"int32": (INT32_MIN, INT32_MAX), "int64": (INT64_MIN, INT64_MAX)}
_TRIAL_TABLES = ("attempts", "stages", "gradings", "judgments", "flags", "steps")


def value_problem(kind: str, value: object, *, nullable: bool = True, identifier: bool = False) -> str | None:
    """Why ``value`` cannot be stored in a column of type ``kind`` (None when it can)."""
    if value is None:
        return None if nullable else "is required (null)"
    if kind == "string":
        if not isinstance(value, str):
            return f"must be text, not {type(value).__name__}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "is not valid Unicode (a lone surrogate)"
        if identifier and (not value or len(value) > FOREIGN_ID_MAX or _CONTROL.search(value)):
            return f"must be 1 to {FOREIGN_ID_MAX} characters without control characters"
        return None
    if kind in _RANGES:
        lo, hi = _RANGES[kind]
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, not {type(value).__name__}"
        return None if lo <= value <= hi else f"integer {value} is out of range for {kind}"
    if kind == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, not {type(value).__name__}"
        if isinstance(value, int) and not _RANGES["int64"][0] <= value <= _RANGES["int64"][1]:
            return f"integer {value} is out of range for a number column (Arrow reads it as int64 first)"
        try:
            ok = math.isfinite(float(value))
        except OverflowError:
            ok = False
        return None if ok else "must be a finite number"
    if kind == "bool":
        return None if isinstance(value, bool) else f"must be true or false, not {type(value).__name__}"
    if kind == "timestamp":
        return None if isinstance(value, datetime) else f"must be a timestamp, not {type(value).__name__}"
    return f"unknown column type {kind}"


def row_problem(table: str, row: dict) -> str | None:
    """The first value of ``row`` that breaks the rules, as ``column: why`` (None when none does)."""
    for col in columns(table):
        if col.name in ("run_id", "ingest_batch_id"):
            continue  # stamped by the writer
        why = value_problem(col.type, row.get(col.name), nullable=col.nullable, identifier=col.name in _ID_COLUMNS)
        if why:
            return f"{col.name} {why}"
    return None


def _raw(row: dict) -> str:
    return repr(row).encode("utf-8", "backslashreplace").decode("utf-8")[:4096]


_REDACTOR = Redactor()
"""Credential shapes only: another tool's results come with no list of secret values."""
_KEEP = _ID_COLUMNS | {"model", "harness", "harness_version", "source_key", "source_path", "outcome",
                       "source_format", "cost_source", "layer", "verdict", "stage", "kind"}


def _redacted(table: str, row: dict) -> int:
    """Redact credential shapes in ``row``'s free-text columns, in place; the count."""
    total = 0
    for col in columns(table):
        value = row.get(col.name)
        if col.type == "string" and isinstance(value, str) and col.name not in _KEEP:
            clean, n = _REDACTOR.text(value)
            if n:
                row[col.name] = clean
                total += n
    return total


def checked(batch: SourceBatch) -> SourceBatch:
    """``batch`` with every row that breaks the value rules moved to its quarantine, and
    credential shapes redacted from the free text it stores (reasons, labels, messages)."""
    if why := id_problem(batch.run_id):
        raise IngestError(f"{batch.source_format} importer made run id {batch.run_id!r}, which {why}; "
                          "this is a bug in the importer (run ids go through ingest.identity.run_key)")
    source = str(batch.source_files[0]) if batch.source_files else batch.source_format
    quarantine = list(batch.quarantine)
    rows: dict[str, list[dict]] = {}
    dropped_trials: set[str] = set()
    for table in ("trials", *(t for t in batch.rows if t != "trials")):
        kept = []
        for row in batch.rows.get(table, []):
            if table in _TRIAL_TABLES and row.get("trial_id") in dropped_trials:
                continue  # goes with its trial, whose quarantine row holds the reason
            why = row_problem(table, row)
            if why is None:
                _redacted(table, row)
                kept.append(row)
                continue
            if table == "trials" and isinstance(row.get("trial_id"), str):
                dropped_trials.add(row["trial_id"])
            quarantine.append(QuarantineRow(source, None, f"{table} row: {why}", _raw(row)))
        rows[table] = kept
    return replace(batch, rows=rows, quarantine=quarantine)


def _odd_ids(values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Identifiers that may be too long, empty or hold a control character (a superset: the
    rows flagged are judged one by one). Lengths are taken in bytes (never fewer than the
    characters), and the per-value search for control characters runs only when the
    column's bytes hold one at all (one vectorised pass instead of a regex per value)."""
    import numpy as np
    import pyarrow.compute as pc

    size = pc.binary_length(values)
    odd = pc.or_(pc.greater(size, FOREIGN_ID_MAX), pc.equal(size, 0))
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    for chunk in chunks:
        data = chunk.buffers()[2] if len(chunk.buffers()) > 2 else None
        raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        step = 1 << 22  # a few MB at a time: no mask as large as the column
        if any(bool(((part < 0x20) | (part == 0x7F)).any()) for part in (raw[i:i + step] for i in range(0, len(raw), step))):
            return pc.or_(odd, pc.match_substring_regex(values, r"[\x00-\x1f\x7f]"))
    return odd


def checked_table(table: str, data: pa.Table, source: str) -> tuple[pa.Table, list[QuarantineRow]]:
    """The columnar form of ``checked`` for one table built as Arrow columns (an importer's
    large tables): the rows that break the value rules are removed and quarantined with the
    reason, the rest is returned.

    Arrow already holds what Python rows can break (every integer fits its type, every
    string is valid UTF-8), so only what a column can still hold wrongly is looked for as
    columns — an identifier too long, empty or with a control character, a required value
    null, an integer outside an int32 column, a float that is not finite — and just those
    rows are judged one by one by ``row_problem``, the one rule.
    """
    import pyarrow.compute as pc

    if data.num_rows == 0:
        return data, []
    suspect = pa.array([False] * data.num_rows)
    for col in columns(table):
        if col.name not in data.column_names:
            continue
        values = data.column(col.name)
        bad = None
        if not col.nullable:
            bad = pc.is_null(values)
        if col.type == "string" and col.name in _ID_COLUMNS:
            odd = _odd_ids(values)
            bad = odd if bad is None else pc.or_(bad, odd)
        elif col.type == "int32" and pa.types.is_integer(values.type):
            odd = pc.or_(pc.less(values, INT32_MIN), pc.greater(values, INT32_MAX))
            bad = odd if bad is None else pc.or_(bad, odd)
        elif col.type == "float64" and pa.types.is_floating(values.type):
            odd = pc.invert(pc.is_finite(values))
            bad = odd if bad is None else pc.or_(bad, odd)
        if bad is not None:
            suspect = pc.or_(suspect, pc.fill_null(bad, False))
    if not pc.any(suspect).as_py():
        return data, []
    quarantine = []
    keep = [True] * data.num_rows
    index = pc.indices_nonzero(suspect).to_pylist()
    for i, row in zip(index, data.take(index).to_pylist(), strict=True):
        if why := row_problem(table, row):
            keep[i] = False
            quarantine.append(QuarantineRow(source, None, f"{table} row: {why}", _raw(row)))
    return data.filter(pa.array(keep)), quarantine
