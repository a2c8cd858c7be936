"""Write a stop rule's resume decision (``rule_decisions``) or a canary drift acknowledgement
(``drift_decisions``) into the warehouse, each decision its own partition, so a decision is
never rewritten (docs/rollout.md, "Stop rules", "Canary cases").

The row is built and checked by ``analysis.rules_check.resume_decision`` (the rule exists, the
person is one of its owners, the rule fired on this evidence); here it is only written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingest.api import IngestInputError
from ingest.write import new_batch_id, write_batch
from warehouse import db


def record_rule_decision(warehouse: Path, decision: dict[str, Any], rules_file: Path) -> str:
    """Append ``decision`` as partition ``decision-<batch id>``; returns the partition id."""
    from ingest.write import file_meta

    warehouse = Path(warehouse)
    if not warehouse.is_file():
        raise IngestInputError(f"{warehouse}: no warehouse here; ingest the runs first")
    batch = new_batch_id()
    partition = f"decision-{batch}"
    with db.write_lock(warehouse):
        db.prepare(warehouse)
        write_batch(warehouse, partition, batch, "rules-resume", file_meta([Path(rules_file)]),
                    {"rule_decisions": [dict(decision)]}, [], None, [])
        db.refresh(warehouse)
    return partition


def record_drift_decision(warehouse: Path, decision: dict[str, Any]) -> str:
    """Append a canary drift acknowledgement (``analysis.canary.drift_decision``) as partition
    ``drift-<batch id>`` of ``drift_decisions``; returns the partition id."""
    warehouse = Path(warehouse)
    if not warehouse.is_file():
        raise IngestInputError(f"{warehouse}: no warehouse here; ingest the runs first")
    batch = new_batch_id()
    partition = f"drift-{batch}"
    with db.write_lock(warehouse):
        db.prepare(warehouse)
        write_batch(warehouse, partition, batch, "accept-drift", [],
                    {"drift_decisions": [dict(decision)]}, [], None, [])
        db.refresh(warehouse)
    return partition
