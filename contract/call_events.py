"""Model calls (as the gateway saw them on the wire) and trajectory steps, with their
vocabularies."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from contract.envelope import MODEL_CONFIG, BaseEvent, Stage
from contract.fields import Count64, Int32, Positive32, Settings

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
"""A failure of the gateway's side of a call, not of the model or the agent. A trial with
any of these is ``infra_error`` (a replay that does not match its recording proves nothing
about the agent)."""


class ModelCallFields(BaseModel):
    """One HTTP call an agent made to a model, as the model gateway saw it on the wire.

    Shared by the gateway's own record (``runner.gateway.records.CallRecord``) and the
    ``model_call`` event. Token fields follow ``Usage``: the input buckets are disjoint,
    ``input_tokens`` is the *uncached* input. The numbers are the provider's own, converted
    only in that one way (OpenAI reports cached tokens as part of ``input_tokens``; Anthropic
    reports them apart). A field the provider did not report is None, never 0.
    """

    model_config = MODEL_CONFIG

    stage: str | None = None
    """The stage the gateway route was opened for (build / qa / review), when it was."""
    attempt: Positive32 | None = None
    call_index: Count64
    """Order of arrival at the gateway within the route, from 0."""
    mode: GatewayMode
    provider: Provider
    api: Api
    model: str | None = None
    """The model the agent asked for (request body)."""
    service_tier: str | None = None
    """The service tier the request asked for: how a harness setting such as Codex's
    ``service_tier = "fast"`` really reached the provider (or did not)."""
    response_model: str | None = None
    """The model the provider said answered, when it said (routing and aliases differ)."""
    request_id: str | None = None
    """Provider request id (``request-id`` / ``x-request-id`` header), else the response's id."""
    response_id: str | None = None
    """The response's own id (``msg_…``, ``resp_…``, ``chatcmpl-…``): what harness logs
    quote, so it joins a harness's turns to these records."""
    status: Int32 | None = None
    """HTTP status returned to the agent; None when the gateway never answered."""
    streamed: bool = False
    """The agent asked for a server-sent-event stream."""
    position: Count64 | None = None
    """Conversation position: tool results already present in the request. Retries and
    side requests at one point of the conversation share a position."""
    side_request: bool = False
    """A request that offers no tools (titles, summaries, quota probes): not a step."""
    retries: Count64 = 0
    """Earlier calls of this route at the same position with the same tool results: the
    agent's own retries (the gateway never retries on its own)."""
    stop_reason: str | None = None
    """``end_turn`` / ``tool_use`` / ``completed`` / ``tool_calls`` / ``stop`` … as reported."""
    tool_calls: list[str] = Field(default_factory=list)
    """Names of the tools the response asked the agent to run, in order."""
    input_tokens: Count64 | None = None
    """Uncached input tokens as reported (OpenAI: ``input_tokens − cached_tokens``)."""
    output_tokens: Count64 | None = None
    """Final output tokens (Anthropic: ``message_delta.usage``, not ``message_start``'s 1)."""
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    """Anthropic ``cache_creation_input_tokens``; OpenAI reports none (null)."""
    reasoning_tokens: Count64 | None = None
    """OpenAI ``output_tokens_details.reasoning_tokens`` (a part of ``output_tokens``)."""
    provider_usage: Settings | None = None
    """The usage object exactly as the provider sent it (for audits of the conversion)."""
    latency_s: float = Field(ge=0)
    """Request arrival to the last byte sent back to the agent."""
    ttft_s: float | None = Field(default=None, ge=0)
    """Request arrival to the first event carrying model output (streams only)."""
    error_type: str | None = None
    """Provider error type or code (``rate_limit_error``, ``overloaded_error`` …)."""
    error: str | None = None
    """Short error message (redacted, at most 500 characters)."""
    gateway_error: GatewayError | None = None
    """Set when the gateway itself failed the call; see :data:`GatewayError`."""
    usage_note: str | None = None
    """Why tokens are unknown when they are (e.g. ``response carried no usage``)."""
    request_sha256: str
    """sha256 of the request body as received (before redaction)."""


class ModelCall(BaseEvent, ModelCallFields):
    """One model call of a stage through the run's model gateway (``docs/gateway.md``)."""

    event: Literal["model_call"] = "model_call"
    started_at_unix: float = Field(ge=0)
    """When the request arrived at the gateway: seconds since the Unix epoch (UTC)."""


class NetworkConnectionFields(BaseModel):
    """One connection an agent asked the gateway's proxy for (``isolation.network: gateway``).

    Shared by the gateway's own record (``runner.gateway.proxy.ConnectionRecord``) and the
    ``network_connection`` event (docs/gateway.md, "The proxy")."""

    model_config = MODEL_CONFIG

    stage: str | None = None
    attempt: Positive32 | None = None
    host: str
    """The host name (or address) asked for, lower-cased."""
    port: Int32
    method: str
    """``CONNECT`` (an HTTPS tunnel) or the method of a plain-HTTP request."""
    allowed: bool
    """The host was on ``isolation.allow_hosts``; refused connections are recorded too."""
    reason: str | None = None
    """Why it was refused or failed (not on the list, not resolvable, unreachable, …)."""
    bytes_up: Count64 = 0
    """Bytes from the agent to the host (after the request head)."""
    bytes_down: Count64 = 0
    duration_s: float = Field(default=0.0, ge=0)
    started_at_unix: float = Field(ge=0)


class NetworkConnection(BaseEvent, NetworkConnectionFields):
    """One proxy connection of a stage: host, port, allowed or refused, bytes, duration."""

    event: Literal["network_connection"] = "network_connection"


StepKind = Literal["model", "tool"]
Action = Literal["read", "edit", "run", "search", "other"]
"""What a tool call did to the workspace: ``read`` files, ``edit`` files, ``run`` a command
(tests, builds, scripts), ``search`` (grep, glob, web), or ``other``."""


class TrajectoryStep(BaseEvent):
    """One model turn or one tool call of a stage's trajectory (docs/trajectories.md).

    Times are seconds since the Unix epoch (UTC), as precise as the source (harness logs
    carry milliseconds); None where the source has none. Unknown stays None."""

    event: Literal["step"] = "step"
    attempt: Positive32
    stage: Stage
    index: Count64
    """Order within the stage, from 0 (model turns and tool calls interleaved)."""
    kind: StepKind
    source: str
    """``claude-stream-json``, ``codex-rollout``, ``codex-json``, ``mini-trajectory``,
    ``agent-events``, ``gateway``."""
    tool: str | None = None
    """Tool name as the harness calls it (``Edit``, ``exec_command``, ``bash`` …)."""
    action: Action | None = None
    paths: list[str] = Field(default_factory=list)
    """Files read or changed, relative to the workspace when inside it."""
    command: str | None = None
    """The shell command of a command-based step (at most 2000 characters)."""
    exit_code: Int32 | None = None
    ok: bool | None = None
    """Tool: it succeeded (not refused, not failed). Model: the call answered."""
    started_at_unix: float | None = Field(default=None, ge=0)
    ended_at_unix: float | None = Field(default=None, ge=0)
    input_tokens: Count64 | None = None
    output_tokens: Count64 | None = None
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    call_id: str | None = None
    """Tool call id; for a model turn the response id (joins the ``model_call`` event)."""
    tokens_from: Literal["harness", "gateway"] | None = None
    """Model turns: whose count the token fields are (the gateway's when it saw the call)."""
