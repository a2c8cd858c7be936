"""Runs as managed records: list them, invalidate one (kept, left out everywhere), delete one.

An invalidated run stays in the warehouse: its rows are all there, ``runs`` lists it with the
reason, and every other view leaves it out (``warehouse.db.EXCLUSION``), so no analysis,
notebook or ``sql`` query counts it unless it asks to (``db.include_invalidated``). Deleting
removes every partition of the run, all or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from warehouse import db
from warehouse.errors import WarehouseError
from warehouse.schema import table_from_rows

RUNS_SQL = """
WITH trials_per_run AS (
    SELECT run_id, count(*) AS trials, count(*) FILTER (WHERE complete) AS finished
    FROM trials GROUP BY run_id
),
last_batch AS (
    SELECT run_id, arg_max(ingest_batch_id, ingested_at) AS batch FROM ingest_batches GROUP BY run_id
),
first_of_manifest AS (  -- the earliest run of each manifest: evaluator changes count from it
    SELECT manifest_id, arg_min(run_id, started_at) AS first_run FROM runs
    WHERE manifest_id IS NOT NULL GROUP BY manifest_id
),
changed AS (
    SELECT c.run_id, count(*) FILTER (WHERE f.fingerprint IS DISTINCT FROM c.fingerprint) AS changed_cases
    FROM cases c JOIN runs r USING (run_id)
    JOIN first_of_manifest m ON m.manifest_id = r.manifest_id
    JOIN cases f ON f.run_id = m.first_run AND f.case_id = c.case_id
    WHERE c.fingerprint IS NOT NULL
    GROUP BY c.run_id
)
SELECT r.run_id, r.source_format, r.manifest_id, r.status, r.started_at,
       coalesce(t.trials, 0) AS trials, coalesce(t.finished, 0) AS finished, b.batch,
       CASE WHEN r.isolated IS NULL THEN NULL WHEN r.isolated THEN r.isolation_backend
            ELSE 'not isolated' END AS isolation,
       r.executor,
       r.integrity, coalesce(ch.changed_cases, 0) AS evaluator_changes,
       s.reason AS invalidated
FROM runs r
LEFT JOIN trials_per_run t USING (run_id)
LEFT JOIN last_batch b USING (run_id)
LEFT JOIN changed ch USING (run_id)
LEFT JOIN run_status s ON s.run_id = r.run_id AND s.status = 'invalidated'
ORDER BY r.started_at NULLS LAST, r.run_id
"""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    source_format: str
    manifest_id: str | None
    status: str | None
    started_at: datetime | None
    trials: int
    finished: int
    batch: str | None
    isolation: str | None
    executor: str | None
    """local | ray (where the trials ran) | None (foreign, or written before executors)."""
    integrity: str | None
    evaluator_changes: int
    """Cases whose evaluator fingerprint differs from the same manifest's first run here."""
    invalidated: str | None
    """The reason, when an operator invalidated the run."""


def list_runs(db_path: Path) -> list[RunRecord]:
    """Every run in the warehouse, invalidated ones included (with their reason)."""
    with db.open(db_path, read_only=True) as con:
        db.include_invalidated(con)
        rows = con.execute(RUNS_SQL).fetchall()
    return [RunRecord(*r) for r in rows]


def _known(db_path: Path, run_id: str) -> None:
    if not db.partition_name_ok(run_id) or run_id not in db.run_ids(db_path):
        known = db.run_ids(db_path)
        hint = f" (runs here: {', '.join(known[:5])}{' …' if len(known) > 5 else ''})" if known else ""
        raise WarehouseError(f"{db_path}: no run {run_id!r} in this warehouse{hint}; "
                             "list them with 'trialhouse runs'")


def invalidate_run(db_path: Path, run_id: str, reason: str) -> None:
    """Keep the run, leave it out of every analysis; the reason is recorded and shown."""
    if not reason or not reason.strip():
        raise WarehouseError("runs invalidate needs --reason TEXT: say why the run must not count")
    with db.write_lock(db_path):
        db.prepare(db_path)
        _known(db_path, run_id)
        now = datetime.now(UTC)
        table = table_from_rows("run_status", [{
            "run_id": run_id, "status": "invalidated", "reason": reason.strip(), "set_at": now,
            "ingest_batch_id": f"operator-{now:%Y%m%dT%H%M%S%fZ}"}])
        db.replace_run(db_path, run_id, {"run_status": table})
    db.refresh(db_path)


def restore_run(db_path: Path, run_id: str) -> None:
    """Undo ``invalidate_run``."""
    with db.write_lock(db_path):
        db.prepare(db_path)
        _known(db_path, run_id)
        db.replace_run(db_path, run_id, {"run_status": table_from_rows("run_status", [])})
    db.refresh(db_path)


def delete_run(db_path: Path, run_id: str) -> None:
    """Remove every row of the run from every table, all or none."""
    with db.write_lock(db_path):
        db.prepare(db_path)
        _known(db_path, run_id)
        db.delete_run(db_path, run_id)
    db.refresh(db_path)
