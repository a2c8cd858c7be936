"""The gateway's record of one model call, and what makes a trial's model traffic untrustworthy.

The fields are the event contract's (``contract.call_events.ModelCallFields``): the runner turns
each record into a ``model_call`` event unchanged, adding only the envelope. Outside a run
(``python -m runner.gateway``, rehearsals, benchmarks) the gateway hands these records to
its ``on_call`` callback and keeps them per route.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from contract.call_events import (
    Api,
    GatewayError,
    GatewayMode,
    ModelCallFields,
    NetworkConnectionFields,
    Provider,
)

__all__ = ["Api", "CallRecord", "ConnectionRecord", "GatewayError", "GatewayMode", "Provider", "gateway_failure",
           "to_event_fields"]


class CallRecord(ModelCallFields):
    """One model call as the gateway saw it (``event``/``trial_id``/``ts`` for standalone use)."""

    event: Literal["model_call"] = "model_call"
    trial_id: str
    """The trial whose route the call came through (the route's token is never stored)."""
    ts: datetime
    """UTC time the request arrived at the gateway."""


class ConnectionRecord(NetworkConnectionFields):
    """One connection through the gateway's proxy (``trial_id`` for standalone use); the
    runner turns it into a ``network_connection`` event unchanged but for ``trial_id``."""

    trial_id: str


def to_event_fields(record: CallRecord) -> dict[str, Any]:
    """The fields of the ``model_call`` event for ``record`` (the envelope is the log's)."""
    fields = record.model_dump(exclude={"event", "trial_id", "ts"})
    fields["started_at_unix"] = record.ts.timestamp()
    return fields


def gateway_failure(calls: list[CallRecord]) -> str | None:
    """Why a trial's model traffic cannot be trusted, or None.

    A call the gateway itself failed (replay mismatch, script mismatch, provider
    unreachable or silent, a malformed request) means the trial measured the setup,
    not the agent: the runner turns it into ``infra_error`` with this reason.
    """
    for call in calls:
        if call.gateway_error is not None:
            return f"model gateway: {call.gateway_error} on call {call.call_index}: {call.error or ''}".rstrip(": ")
    return None
