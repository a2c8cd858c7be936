"""The ``model_call`` record: one per HTTP call an agent made to a model through the gateway.

This model is written in the style of ``runner/events.py`` (frozen, ``extra="forbid"``,
a docstring per field) so that it can move there as an event type when the gateway is
wired into the trial loop. Until then the gateway hands these records to its
``on_call`` callback and keeps them per trial.

Token fields follow the event contract's convention (``runner.events.Usage``): the
input buckets are disjoint, ``input_tokens`` is the *uncached* input. The numbers are
the provider's own, converted only in that one way (OpenAI reports cached tokens as a
part of ``input_tokens``; Anthropic reports them apart). A field the provider did not
report is None, never 0. ``provider_usage`` keeps the usage object exactly as received.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Provider = Literal["anthropic", "openai"]
Api = Literal["messages", "responses", "chat_completions"]
"""Anthropic Messages, OpenAI Responses, OpenAI Chat Completions."""
GatewayMode = Literal["forward", "record", "replay", "scripted"]
GatewayError = Literal[
    "replay_mismatch",
    "script_mismatch",
    "upstream_unreachable",
    "upstream_timeout",
    "bad_request",
]
"""A failure of the gateway's side of the call, not of the model or the agent. The
runner maps a trial with any of these to ``infra_error`` (a replay that does not match
the recording proves nothing about the agent)."""


class ModelCall(BaseModel):
    """One model call as the gateway saw it on the wire (future event type ``model_call``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    event: Literal["model_call"] = "model_call"
    trial_id: str
    """The trial whose route the call came through (the route's token is never stored)."""
    stage: str | None = None
    """The stage the route was opened for (build / qa / review), when it was."""
    attempt: int | None = Field(default=None, ge=1)
    call_index: int = Field(ge=0)
    """Order of arrival at the gateway within the trial, from 0."""
    ts: datetime
    """UTC time the request arrived at the gateway."""
    mode: GatewayMode
    provider: Provider
    api: Api
    model: str | None = None
    """The model the agent asked for (request body)."""
    service_tier: str | None = None
    """The service tier the request asked for; how a harness setting such as Codex's
    ``service_tier = "fast"`` really reached the provider (or did not)."""
    response_model: str | None = None
    """The model the provider said answered, when it said (may differ: routing, aliases)."""
    request_id: str | None = None
    """Provider request id (``request-id`` / ``x-request-id`` header), else the response's
    own id (``msg_…``, ``resp_…``, ``chatcmpl-…``)."""
    response_id: str | None = None
    """The response's own id (``msg_…``, ``resp_…``, ``chatcmpl-…``): what harness logs
    quote, so it joins a harness's turns to these records."""
    status: int | None = None
    """HTTP status returned to the agent; None when the gateway never answered."""
    streamed: bool = False
    """The agent asked for a server-sent-event stream."""
    position: int | None = Field(default=None, ge=0)
    """Conversation position: tool results already present in the request. Retries and
    side requests at one point of the conversation share a position."""
    side_request: bool = False
    """A request that offers no tools (titles, summaries, quota probes): not a step of
    the agent's loop."""
    retries: int = Field(default=0, ge=0)
    """Earlier calls of this trial at the same position with the same tool results: the
    agent's own retries (the gateway never retries on its own)."""
    stop_reason: str | None = None
    """``end_turn`` / ``tool_use`` / ``completed`` / ``tool_calls`` / ``stop`` … as reported."""
    tool_calls: list[str] = Field(default_factory=list)
    """Names of the tools the response asked the agent to run, in order."""
    input_tokens: int | None = Field(default=None, ge=0)
    """Uncached input tokens as reported (OpenAI: ``input_tokens − cached_tokens``)."""
    output_tokens: int | None = Field(default=None, ge=0)
    """Final output tokens (Anthropic: ``message_delta.usage``, not ``message_start``'s 1)."""
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    """Anthropic ``cache_creation_input_tokens``; OpenAI reports none (null)."""
    reasoning_tokens: int | None = Field(default=None, ge=0)
    """OpenAI ``output_tokens_details.reasoning_tokens`` (a part of ``output_tokens``)."""
    provider_usage: dict[str, Any] | None = None
    """The usage object exactly as the provider sent it (for audits of the conversion)."""
    latency_s: float = Field(ge=0)
    """Request arrival to the last byte sent back to the agent."""
    ttft_s: float | None = Field(default=None, ge=0)
    """Request arrival to the first event carrying model output (streams only)."""
    error_type: str | None = None
    """Provider error type or code (``rate_limit_error``, ``overloaded_error``,
    ``context_length_exceeded`` …) from an error status or a failed stream."""
    error: str | None = None
    """Short error message (redacted, at most 500 characters)."""
    gateway_error: GatewayError | None = None
    """Set when the gateway itself failed the call; see :data:`GatewayError`."""
    usage_note: str | None = None
    """Why tokens are unknown when they are (e.g. ``stream ended without usage``)."""
    request_sha256: str
    """sha256 of the request body as received (before redaction): equal bodies, equal hash."""


def gateway_failure(calls: list[ModelCall]) -> str | None:
    """Why a trial's model traffic cannot be trusted, or None.

    A call the gateway itself failed (replay mismatch, script mismatch, provider
    unreachable or silent, a malformed request) means the trial measured the setup,
    not the agent: the runner turns it into ``infra_error`` with this reason.
    """
    for call in calls:
        if call.gateway_error is not None:
            return f"model gateway: {call.gateway_error} on call {call.call_index}: {call.error or ''}".rstrip(": ")
    return None
