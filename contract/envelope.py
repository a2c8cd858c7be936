"""The envelope every event shares, and the vocabularies more than one event family uses.

A field here is a promise to everything downstream (ingest, warehouse, analysis): adding an
optional field is backwards compatible; anything else bumps ``SCHEMA_VERSION`` and gets an
upgrader in ``contract.events.upgrade_event`` so older files still load.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from contract.fields import Count64, Id, TrialId

SCHEMA_VERSION: Literal[1] = 1
"""Current event schema version written by this runner."""


Outcome = Literal[
    "accepted", "target_failed", "regression", "budget_exhausted", "infra_error", "invalid",
    "agent_output_error",
]
"""The only trial outcomes. ``infra_error`` and ``invalid`` are excluded from pass rates;
``agent_output_error`` (what the agent left could not be processed: a failure charged to
the agent, docs/design.md "The denominator rule") is in every denominator."""

OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

Layer = Literal["target", "regression", "repository"]
Verdict = Literal["passed", "failed", "inconclusive"]
Stage = Literal["build", "qa", "review"]
CostSource = Literal["reported", "priced"]
CostBasis = Literal["reported", "reported_unknown_basis", "computed"]
"""What a cost claim rests on. ``reported``: the harness priced tokens with prices it
knows (Claude Code ``costBasis: "list"``, litellm's table for mini). ``reported_unknown_basis``:
the harness printed a cost without knowing the model's price (Claude Code invents one for
model names it does not know; mini prints 0.0): kept as a claim, never a trial's cost.
``computed``: tokens × a dated price file, by trialhouse."""


def utc_now() -> datetime:
    return datetime.now(UTC)


MODEL_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""Every contract model: unknown fields refused, immutable, every float finite."""


class BaseEvent(BaseModel):
    """Envelope shared by every event."""

    model_config = MODEL_CONFIG

    schema_version: Literal[1] = SCHEMA_VERSION
    """Event schema version; a reader refuses versions it does not know."""
    run_id: Id
    """Run identifier (also the run's directory name)."""
    trial_id: TrialId | None = None
    """Trial identifier; null for run-level events."""
    seq: Count64
    """Per-run sequence number, strictly increasing in file order."""
    ts: datetime
    """UTC timestamp of the event."""
    prev: str | None = None
    """Hash chain link: sha256 (hex) of the previous line of ``events.jsonl`` exactly as
    written (without its newline); for a run's first line, ``chain_genesis(run_id)``.
    A forged, altered, reordered or removed line breaks the chain (``verify_chain``)."""
