"""The event contract: one pydantic model per event type, discriminated by ``event``.

Everything downstream (ingest, warehouse, analysis) reads runs only through these models,
so a field is a promise. Adding an optional field is backwards compatible; anything else
bumps ``SCHEMA_VERSION`` and gets an upgrader in ``upgrade_event`` so older files still
load. The models live by family (``contract.run_events``, ``trial_events``,
``stage_events``, ``call_events``); this module holds their union and the file format.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from contract.call_events import ModelCall, NetworkConnection, TrajectoryStep
from contract.envelope import SCHEMA_VERSION, BaseEvent
from contract.run_events import CaseValidated, ControlResult, RunFinished, RunStarted
from contract.stage_events import Judgment, StageFinished, StageStarted
from contract.trial_events import (
    AttemptFinished,
    AttemptStarted,
    Budget,
    Checkpoint,
    Flag,
    Grading,
    IntegrityCheck,
    PrepareFinished,
    TrialFinished,
    TrialSkipped,
    TrialStarted,
    WorkspacePrepared,
)

Event = Annotated[
    RunStarted
    | ControlResult
    | CaseValidated
    | RunFinished
    | TrialStarted
    | TrialSkipped
    | PrepareFinished
    | WorkspacePrepared
    | AttemptStarted
    | StageStarted
    | StageFinished
    | Checkpoint
    | IntegrityCheck
    | Grading
    | Judgment
    | Budget
    | Flag
    | AttemptFinished
    | ModelCall
    | NetworkConnection
    | TrajectoryStep
    | TrialFinished,
    Field(discriminator="event"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: dict[str, type[BaseEvent]] = {
    m.model_fields["event"].default: m
    for m in Event.__origin__.__args__  # type: ignore[attr-defined]
}
EVENT_CLASSES: dict[str, type[BaseEvent]] = {m.__name__: m for m in EVENT_TYPES.values()}
"""Class name → model: how an executor relays events from a worker (by class name)."""


class UnsupportedSchemaVersion(ValueError):
    """A line written by a newer trialhouse than this one."""


def upgrade_event(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring an event dict of any known older version to the current version.

    Version 0 was the pre-release shape (``type`` instead of ``event``, ``time``
    instead of ``ts``); it is upgraded so archived runs keep loading. Versions above
    ``SCHEMA_VERSION`` are refused rather than guessed at.
    """
    version = raw.get("schema_version")
    if version is None and "event" not in raw and "type" in raw:
        version = 0
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("schema_version: missing or not an integer")
    if version > SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            f"schema_version {version} is newer than this trialhouse understands "
            f"(max {SCHEMA_VERSION}); upgrade trialhouse to read it"
        )
    if version < 0:
        raise ValueError(f"schema_version {version} is not a known version")
    if version == 0:
        if not isinstance(raw.get("type"), str):
            raise ValueError("schema_version 0 line without a string 'type' (the v0 event name)")
        raw = dict(raw)
        raw["event"] = raw.pop("type")
        if "time" in raw:
            raw["ts"] = raw.pop("time")
        raw["schema_version"] = 1
    return raw


def parse_event(line: str | bytes) -> Event:
    """Parse one JSONL line into its event model (upgrading older versions)."""
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("line is not a JSON object")
    return EVENT_ADAPTER.validate_python(upgrade_event(raw))


def dump_event(event: BaseEvent) -> str:
    """Serialise an event as one JSON line (no trailing newline)."""
    return event.model_dump_json()


def events_json_schema() -> dict[str, Any]:
    schema = EVENT_ADAPTER.json_schema()
    schema["title"] = f"trialhouse events v{SCHEMA_VERSION}"
    return schema
