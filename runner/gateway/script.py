"""Scripted mode: a small declarative model of a model, for tests and rehearsals.

A script is a list of steps. Which step answers a request is worked out from the
conversation the agent sent, not from a call counter: step *i* answers when the request
already holds the tool results of steps 0..i-1. So a harness that retries, or sends side
requests (titles, summaries, quota probes; recognised by offering no tools), gets the
same answer again instead of sliding down the script. Every step but the last must ask
for at least one tool (otherwise the next step could never be reached).

A reply is text, tool calls, or a failure: an HTTP error status, a provider-specific
context-window failure, a body that is not the API's format (garbage), plus a delay
before the answer and a stall inside a stream. ``before`` lists failures served to the
first attempts at a step, so "500 twice, then the answer" tests a harness's retries.

Strings in tool inputs and text may use ``{name}`` for the variables given with the
trial (``{workspace}`` typically); no other brace is touched.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from runner.gateway import sse
from runner.gateway.records import Api


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Tokens(_Model):
    """Usage the scripted provider reports for a reply (disjoint buckets, as in records)."""

    input_tokens: int = Field(default=1000, ge=0)
    output_tokens: int = Field(default=50, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)


class ToolCall(_Model):
    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    custom: str | None = None
    """Responses only: a custom (free-form) tool's raw input, answered as a ``custom_tool_call``
    (Codex's ``exec`` tool of its current model family takes JavaScript); ``input`` is then unused."""


class Reply(_Model):
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    status: int = Field(default=200, ge=200, le=599)
    """An error status (≥ 400) answers with the API's error body instead of a message."""
    error_type: str | None = None
    """Provider error type for an error status (default per status and API)."""
    error_message: str | None = None
    context_length: bool = False
    """Answer the way this API reports an exhausted context window."""
    garbage: str | None = None
    """Answer 200 with this raw body: not the API's format."""
    delay_s: float = Field(default=0.0, ge=0)
    """Wait before the response starts."""
    stall_s: float = Field(default=0.0, ge=0)
    """Streams: wait this long after the first event (a slow stream)."""
    usage: Tokens = Field(default_factory=Tokens)

    @model_validator(mode="after")
    def _one_kind(self) -> Reply:
        failures = sum([self.status >= 400, self.context_length, self.garbage is not None])
        if failures > 1 or (failures and (self.text is not None or self.tool_calls)):
            raise ValueError("a reply is either a message (text/tool_calls) or one failure")
        if not failures and self.text is None and not self.tool_calls:
            raise ValueError("a reply needs text, tool_calls, or a failure")
        if 200 < self.status < 400:
            raise ValueError("status: use 200 or an error status (>= 400)")
        return self


class Step(Reply):
    before: list[Reply] = Field(default_factory=list)
    """Replies for the first attempts at this step (retry tests), then the step itself."""


class Script(_Model):
    steps: list[Step] = Field(min_length=1)
    side: Reply = Field(default_factory=lambda: Reply(text="ok", usage=Tokens(input_tokens=50, output_tokens=5)))
    """Answer to side requests (requests that offer no tools)."""
    response_model: str | None = None
    """Model name the provider claims; default: the requested one."""

    @model_validator(mode="after")
    def _reachable(self) -> Script:
        for i, step in enumerate(self.steps[:-1]):
            if not step.tool_calls:
                raise ValueError(f"steps[{i}]: only the last step may end without tool calls")
        return self

    def starts(self) -> list[int]:
        """Conversation position (tool results present) at which each step answers."""
        out, position = [], 0
        for step in self.steps:
            out.append(position)
            position += len(step.tool_calls)
        return out


def load_script(doc: object) -> Script:
    """A script from parsed YAML/JSON (pydantic errors name the bad field)."""
    return Script.model_validate(doc)


class ScriptMismatch(LookupError):
    """The conversation is at a point the script does not describe."""


def pick(script: Script, position: int, attempt: int, side: bool) -> tuple[Reply, int]:
    """The reply for a request at ``position`` (``attempt`` earlier tries there) and its step."""
    if side:
        return script.side, -1
    starts = script.starts()
    if position not in starts:
        last = starts[-1] + len(script.steps[-1].tool_calls)
        raise ScriptMismatch(
            f"script has no step at conversation position {position} (tool results received); "
            f"steps start at {starts}" + (f", the script ends at {last}" if position >= last else "")
        )
    index = starts.index(position)
    step = script.steps[index]
    return (step.before[attempt] if attempt < len(step.before) else step), index


# ---------------------------------------------------------------- answers on the wire


@dataclass
class Answer:
    """A complete HTTP answer: status, content type, and body chunks with waits before them."""

    status: int
    content_type: str
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


def render(api: Api, reply: Reply, *, stream: bool, model: str, position: int, attempt: int,
           variables: dict[str, str]) -> Answer:
    """The reply in ``api``'s wire format; ids are deterministic (replays compare equal)."""
    tag = f"{position:03d}_{attempt}"
    headers = {"request-id" if api == "messages" else "x-request-id": f"req_scripted_{tag}"}
    if reply.garbage is not None:
        kind = "text/event-stream" if stream else "application/json"
        return Answer(200, kind, [(reply.delay_s, reply.garbage.encode())], headers)
    if reply.status >= 400 or (reply.context_length and (api != "responses" or not stream)):
        status, body = _error_body(api, reply)
        return Answer(status, "application/json", [(reply.delay_s, json.dumps(body).encode())], headers)
    calls = [ToolCall(name=c.name, input=_fill(c.input, variables), custom=_fill(c.custom, variables))
             for c in reply.tool_calls]
    text = _fill(reply.text, variables) if reply.text is not None else None
    builder = {"messages": _anthropic, "responses": _responses, "chat_completions": _chat}[api]
    events, body = builder(reply, text, calls, model, tag)
    if not stream:
        return Answer(200, "application/json", [(reply.delay_s, json.dumps(body).encode())], headers)
    # A stall splits the stream after its first event; otherwise it goes out in one write,
    # as a provider's buffered answer would (fewer sends, less noise in measurements).
    encoded = [sse.encode(name, data) for name, data in events]
    if reply.stall_s:
        chunks = [(reply.delay_s, encoded[0]), (reply.stall_s, b"".join(encoded[1:]))]
    else:
        chunks = [(reply.delay_s, b"".join(encoded))]
    return Answer(200, "text/event-stream", chunks, headers)


def _fill(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, replacement in variables.items():
            value = value.replace("{" + name + "}", replacement)
        return value
    if isinstance(value, dict):
        return {k: _fill(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, variables) for v in value]
    return value


_ANTHROPIC_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                     404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                     529: "overloaded_error"}
_OPENAI_ERRORS = {400: "invalid_request_error", 401: "invalid_api_key", 429: "rate_limit_exceeded"}
CONTEXT_MESSAGES = {
    "messages": "prompt is too long: 250000 tokens > 200000 maximum",
    "responses": "Your input exceeds the context window of this model. Please adjust your input and try again.",
    "chat_completions": ("This model's maximum context length is 128000 tokens. However, your messages resulted in "
                         "131072 tokens. Please reduce the length of the messages."),
}


def _error_body(api: Api, reply: Reply) -> tuple[int, dict[str, Any]]:
    if reply.context_length:
        if api == "messages":
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": CONTEXT_MESSAGES["messages"]}}
        return 400, {"error": {"message": CONTEXT_MESSAGES[api], "type": "invalid_request_error",
                               "param": "input", "code": "context_length_exceeded"}}
    status = reply.status
    message = reply.error_message or f"scripted error {status}"
    if api == "messages":
        kind = reply.error_type or _ANTHROPIC_ERRORS.get(status, "api_error")
        return status, {"type": "error", "error": {"type": kind, "message": message}}
    code = reply.error_type or _OPENAI_ERRORS.get(status, "server_error")
    return status, {"error": {"message": message, "type": code, "param": None, "code": code}}


def _anthropic(reply: Reply, text: str | None, calls: list[ToolCall], model: str, tag: str):
    u = reply.usage
    content: list[dict[str, Any]] = []
    if text is not None:
        content.append({"type": "text", "text": text})
    for k, call in enumerate(calls):
        content.append({"type": "tool_use", "id": f"toolu_scripted_{tag}_{k}", "name": call.name,
                        "input": call.input})
    stop = "tool_use" if calls else "end_turn"
    usage = {"input_tokens": u.input_tokens, "cache_read_input_tokens": u.cache_read_tokens,
             "cache_creation_input_tokens": u.cache_write_tokens, "output_tokens": u.output_tokens}
    message = {"id": f"msg_scripted_{tag}", "type": "message", "role": "assistant", "model": model,
               "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": {
        **message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}})]
    start: dict[str, Any]
    for index, block in enumerate(content):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": u.output_tokens}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events, message


def _responses(reply: Reply, text: str | None, calls: list[ToolCall], model: str, tag: str):
    u = reply.usage
    rid = f"resp_scripted_{tag}"
    base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model}
    if reply.context_length:  # streamed: Codex sees the failure as response.failed
        error = {"code": "context_length_exceeded", "message": CONTEXT_MESSAGES["responses"]}
        return [
            ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}}),
            ("response.failed", {"type": "response.failed", "response": {**base, "status": "failed", "output": [],
                                                                           "error": error, "usage": None}}),
        ], None
    items: list[dict[str, Any]] = []
    if text is not None:
        items.append({"type": "message", "id": f"msg_scripted_{tag}", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for k, call in enumerate(calls):
        ids = {"id": f"fc_scripted_{tag}_{k}", "call_id": f"call_scripted_{tag}_{k}", "name": call.name}
        if call.custom is not None:
            items.append({"type": "custom_tool_call", **ids, "input": call.custom, "status": "completed"})
        else:
            items.append({"type": "function_call", **ids, "arguments": json.dumps(call.input), "status": "completed"})
    total_in = u.input_tokens + u.cache_read_tokens
    usage = {"input_tokens": total_in, "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
             "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
             "total_tokens": total_in + u.output_tokens}
    done = {**base, "status": "completed", "output": items, "usage": usage}
    events: list[tuple[str, Any]] = [
        ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}})]
    for index, item in enumerate(items):
        events.append(("response.output_item.done",
                       {"type": "response.output_item.done", "output_index": index, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return events, done


def _chat(reply: Reply, text: str | None, calls: list[ToolCall], model: str, tag: str):
    u = reply.usage
    created = int(time.time())
    tool_calls = [{"id": f"call_scripted_{tag}_{k}", "type": "function",
                   "function": {"name": c.name, "arguments": json.dumps(c.input)}} for k, c in enumerate(calls)]
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    finish = "tool_calls" if calls else "stop"
    total_in = u.input_tokens + u.cache_read_tokens
    usage = {"prompt_tokens": total_in, "completion_tokens": u.output_tokens,
             "total_tokens": total_in + u.output_tokens,
             "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens}}
    cid = f"chatcmpl-scripted-{tag}"
    body = {"id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}
    head = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
    delta: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        delta["tool_calls"] = [{"index": k, **c} for k, c in enumerate(tool_calls)]
    events: list[tuple[str | None, Any]] = [
        (None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**head, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ]
    return events, body
