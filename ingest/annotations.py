"""Import human or judge annotations (failure categories, review decisions) into ``judgments``.

A CSV with columns ``trial_id``, ``category`` (or ``decision``), ``note``, ``annotator``
and optionally ``run_id`` becomes one partition ``run_id = annotations-<sha12 of the
file>``: importing the same file again changes nothing, a corrected file adds its own
partition. Who said it is kept (``annotator``; ``--annotator`` fills blanks). Unknown
trial ids, ambiguous ones (same id in several runs and no run_id column) and unknown
categories/decisions are quarantined with their CSV line numbers, and so are records that
cannot be read (``ingest.csv_records``: read a bounded record at a time).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from contract.stage_events import FailureCategory
from ingest.api import IngestInputError, IngestQuarantined, IngestResult
from ingest.batch import QuarantineRow
from ingest.csv_records import Record, TooManyRecords, csv_records
from ingest.rows import row_problem
from ingest.write import file_meta, new_batch_id, unchanged, write_batch
from warehouse import db
from warehouse.schema import TableRows

CATEGORIES: tuple[str, ...] = FailureCategory.__args__  # type: ignore[attr-defined]
"""First decisive wrong choice (docs/judges.md)."""
DECISIONS = ("accept", "reject")
KINDS = {"failure_category": ("category", CATEGORIES), "review_decision": ("decision", DECISIONS)}


def _known_trials(warehouse: Path) -> dict[str, list[str]]:
    con = db.open(warehouse, read_only=True)
    try:
        rows = con.execute("SELECT trial_id, run_id FROM trials").fetchall()
    finally:
        con.close()
    out: dict[str, list[str]] = {}
    for trial_id, run_id in rows:
        out.setdefault(trial_id, []).append(run_id)
    return out


def _checked_paths(csv_path: Path, warehouse: Path, kind: str) -> None:
    """Refuse a wrong ``--kind``, a CSV that is not a file and a warehouse that is not there."""
    if kind not in KINDS:
        raise IngestInputError(f"--kind {kind!r}: expected one of {', '.join(KINDS)}")
    if csv_path.is_dir():
        raise IngestInputError(f"{csv_path}: is a directory; give the annotations CSV file")
    if not csv_path.is_file():
        raise IngestInputError(f"{csv_path}: no such file")
    if not warehouse.is_file():
        # A mistyped --warehouse would otherwise create a new warehouse holding only quarantine.
        raise IngestInputError(
            f"{warehouse}: no warehouse here; ingest the runs first "
            f"('trialhouse ingest RUN_DIR --warehouse {warehouse}')"
        )


def _header(csv_path: Path, names: list[str], column: str) -> str:
    """The name of the CSV's value column (``column``, or ``verdict``); else IngestInputError."""
    value_col = column if column in names else ("verdict" if "verdict" in names else None)
    if "trial_id" not in names or value_col is None:
        raise IngestInputError(
            f"{csv_path}: header must name trial_id and {column} (found: {', '.join(names) or 'nothing'})"
        )
    return value_col


def _rows(records: Iterator[Record], value_col: str, kind: str, annotator: str | None,
          known: dict[str, list[str]], src: str) -> tuple[TableRows, TableRows, set[str]]:
    """The ``judgments`` rows of the CSV's records, the records quarantined with their line
    and the reason (a record that cannot be read too: ``ingest.csv_records``), and the runs
    of the trials annotated."""
    column, allowed = KINDS[kind]
    now = datetime.now(UTC)
    rows, quarantine, trial_runs = TableRows("judgments"), TableRows("quarantine"), set()
    for r in records:
        if r.fields is None:
            quarantine.append(QuarantineRow(src, r.line, r.problem or "not readable", r.raw).as_row())
            continue
        rec = r.fields
        trial_id, value = rec.get("trial_id", ""), rec.get(value_col, "").lower()
        wanted_run = rec.get("run_id") or None
        runs = known.get(trial_id, [])
        if wanted_run is not None:
            runs = [x for x in runs if x == wanted_run]
        reason = None
        if not trial_id:
            reason = "trial_id is empty"
        elif not runs:
            reason = f"unknown trial_id {trial_id!r}" + (f" in run {wanted_run!r}" if wanted_run else "")
        elif len(runs) > 1:
            reason = f"trial_id {trial_id!r} is in several runs ({', '.join(runs)}); add a run_id column"
        elif value not in allowed:
            reason = f"{column} {value!r} is not one of {', '.join(allowed)}"
        row = {
            "trial_id": trial_id, "criterion_id": None, "kind": kind, "verdict": value,
            "category": value if kind == "failure_category" else None,
            "note": rec.get("note") or None, "annotator": rec.get("annotator") or annotator,
            "ts": now,
        }
        reason = reason or row_problem("judgments", row)
        if reason:
            quarantine.append(QuarantineRow(src, r.line, reason, r.raw).as_row())
            continue
        rows.append(row)
        trial_runs.add(runs[0])
    return rows, quarantine, trial_runs


def import_annotations(
    csv_path: Path,
    warehouse: Path,
    *,
    kind: str = "failure_category",
    annotator: str | None = None,
    allow_quarantine: bool = False,
) -> IngestResult:
    """Write the CSV's annotations as one batch; quarantine policy as ``ingest_paths``."""
    csv_path, warehouse = Path(csv_path), Path(warehouse)
    _checked_paths(csv_path, warehouse, kind)
    files = file_meta([csv_path])
    run_id = f"annotations-{files[0]['sha256'][:12]}"
    result = IngestResult()
    with db.write_lock(warehouse), csv_path.open("rb") as f:
        try:
            names, records = csv_records(f)
        except ValueError as e:
            raise IngestInputError(f"{csv_path}: {e}") from None
        value_col = _header(csv_path, names, KINDS[kind][0])
        db.prepare(warehouse)
        same = unchanged(warehouse, run_id, files)
        if same is not None:
            result.batches.append(same)
        else:
            known = _known_trials(warehouse) if warehouse.exists() else {}
            try:
                rows, quarantine, trial_runs = _rows(records, value_col, kind, annotator, known,
                                                     str(csv_path))
            except TooManyRecords as e:
                raise IngestInputError(f"{csv_path}: {e}") from None
            notes = [f"annotations for trials in run(s): {', '.join(sorted(trial_runs))}"] if trial_runs else []
            result.batches.append(write_batch(
                warehouse, run_id, new_batch_id(), f"annotations:{kind}", files,
                {"judgments": rows}, quarantine, None, notes,
            ))
        if (note := db.refresh(warehouse)) and result.batches:
            result.batches[-1].notes.append(note)
    if result.quarantined and not allow_quarantine:
        raise IngestQuarantined(result)
    return result
