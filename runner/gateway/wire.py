"""What the gateway reads from the three wire formats, and nothing more.

Requests: which API, which model, streamed or not, where in the conversation (tool
results already present), whether it is a side request (no tools offered, neither as
``tools`` nor, for Codex's current models, in an ``additional_tools`` input item). Responses:
ids, model, stop reason, the tools asked for, usage, errors, read from a JSON body or
tapped from an SSE stream event by event. Unknown fields and event types are ignored;
a body that is not what the API promises leaves every field unknown and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runner.agents.agent_report import count, short
from runner.gateway.records import Api, Provider
from runner.gateway.sse import SseEvent

ROUTES: dict[str, Api] = {
    "/v1/messages": "messages",
    "/v1/responses": "responses",
    "/v1/chat/completions": "chat_completions",
}
PROVIDER: dict[Api, Provider] = {
    "messages": "anthropic",
    "responses": "openai",
    "chat_completions": "openai",
}
OUTPUT_EVENTS = frozenset(
    {
        "content_block_start",
        "content_block_delta",
        "response.output_text.delta",
        "response.output_item.added",
        "response.output_item.done",
        "response.function_call_arguments.delta",
        "response.custom_tool_call_input.delta",
        "response.reasoning_summary_text.delta",
    }
)
"""SSE event names that carry model output: the first one is the time to first token."""


class BadRequest(ValueError):
    """The agent sent something that is not a request of the API it called."""


@dataclass(frozen=True)
class RequestInfo:
    api: Api
    model: str | None
    stream: bool
    position: int
    """Tool results in the conversation so far (see ``CallRecord.position``)."""
    tool_result_ids: tuple[str, ...]
    side: bool
    """No tools offered: a title, summary or probe request, not a loop step."""
    service_tier: str | None = None
    """The ``service_tier`` the request asked for (OpenAI ``priority``/``flex``, Anthropic ``auto``…)."""

    @property
    def provider(self) -> Provider:
        return PROVIDER[self.api]


def read_request(api: Api, body: bytes) -> RequestInfo:
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise BadRequest(f"request body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest("request body is not a JSON object")
    model = doc.get("model") if isinstance(doc.get("model"), str) else None
    ids = tuple(_tool_result_ids(api, doc))
    return RequestInfo(
        api=api,
        model=model,
        stream=doc.get("stream") is True,
        position=len(ids),
        tool_result_ids=ids,
        side=not offers_tools(api, doc),
        service_tier=doc.get("service_tier") if isinstance(doc.get("service_tier"), str) else None,
    )


def offers_tools(api: Api, doc: dict[str, Any]) -> bool:
    """The request offers the model tools: a main-loop call, not a side request.

    Responses requests of Codex's current model family (``gpt-6.2-sol``, measured on Codex
    0.171) carry no top-level ``tools``: they come as an ``additional_tools`` input item
    (role ``developer``) holding tool ``namespace`` groups (``functions``: the ``exec``
    custom tool and ``wait`` …; ``clock``; ``collaboration``)."""
    if _list(doc.get("tools")):
        return True
    if api != "responses":
        return False
    return any(isinstance(item, dict) and item.get("type") == "additional_tools" and _list(item.get("tools"))
               for item in _list(doc.get("input")))


def _tool_result_ids(api: Api, doc: dict[str, Any]):
    if api == "messages":
        for message in _list(doc.get("messages")):
            if isinstance(message, dict) and message.get("role") == "user":
                for block in _list(message.get("content")):
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        yield str(block.get("tool_use_id"))
    elif api == "responses":
        for item in _list(doc.get("input")):
            kind = item.get("type") if isinstance(item, dict) else None
            if isinstance(kind, str) and kind.endswith("_call_output"):
                yield str(item.get("call_id"))
    else:
        for message in _list(doc.get("messages")):
            if isinstance(message, dict) and message.get("role") == "tool":
                yield str(message.get("tool_call_id"))


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass
class ResponseTap:
    """Accumulates what a response says, from a JSON body or SSE events."""

    api: Api
    response_id: str | None = None
    response_model: str | None = None
    stop_reason: str | None = None
    tool_calls: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    error_type: str | None = None
    error: str | None = None
    events: int = 0
    unparsed: int = 0
    """SSE events whose data was not JSON (``[DONE]`` excepted)."""
    _tool_ids: set[str] = field(default_factory=set)
    _start_only: bool = False
    """Anthropic stream cut before ``message_delta``: ``output_tokens`` is message_start's 1."""

    # ------------------------------------------------------------ input

    def on_event(self, event: SseEvent) -> bool:
        """Read one SSE event; True when it carried model output."""
        self.events += 1
        if event.data.strip() == "[DONE]":
            return False
        doc = event.json()
        if not isinstance(doc, dict):
            self.unparsed += 1
            return False
        kind = doc.get("type")
        if not isinstance(kind, str):
            kind = event.event
        if self.api == "messages":
            return self._anthropic_event(kind, doc)
        if self.api == "responses":
            return self._responses_event(kind, doc)
        return self._chat_chunk(doc)

    def on_body(self, body: bytes, status: int) -> None:
        """Read a whole (non-streamed or error) JSON body."""
        try:
            doc = json.loads(body)
        except ValueError:
            self.unparsed += 1
            if status >= 400:
                self.error = short(body.decode("utf-8", errors="replace"), 500)
            return
        if not isinstance(doc, dict):
            self.unparsed += 1
            return
        if isinstance(doc.get("error"), dict):
            self._error(doc["error"])
            return
        if self.api == "messages":
            self._anthropic_message(doc)
        elif self.api == "responses":
            self._response_object(doc)
        else:
            self._chat_chunk(doc)

    # ------------------------------------------------------------ per API

    def _anthropic_event(self, kind: str, doc: dict[str, Any]) -> bool:
        if kind == "message_start" and isinstance(doc.get("message"), dict):
            self._anthropic_message(doc["message"])
            self._start_only = True
        elif kind == "content_block_start":
            block = doc.get("content_block")
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                self.tool_calls.append(str(block.get("name")))
            return True
        elif kind == "content_block_delta":
            return True
        elif kind == "message_delta":
            delta = doc.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
            if isinstance(doc.get("usage"), dict):
                self.usage = {**(self.usage or {}), **doc["usage"]}
                self._start_only = False
        elif kind == "error" and isinstance(doc.get("error"), dict):
            self._error(doc["error"])
        return False

    def _anthropic_message(self, message: dict[str, Any]) -> None:
        self.response_id = _str(message.get("id")) or self.response_id
        self.response_model = _str(message.get("model")) or self.response_model
        self.stop_reason = _str(message.get("stop_reason")) or self.stop_reason
        for block in _list(message.get("content")):
            if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
                self.tool_calls.append(str(block.get("name")))
        if isinstance(message.get("usage"), dict):
            self.usage = dict(message["usage"])

    def _responses_event(self, kind: str, doc: dict[str, Any]) -> bool:
        if kind in ("response.created", "response.in_progress", "response.completed",
                    "response.incomplete", "response.failed"):
            if isinstance(doc.get("response"), dict):
                self._response_object(doc["response"], items=False)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = doc.get("item")
            if isinstance(item, dict):
                self._response_item(item)
            return True
        elif kind == "error":
            error = doc.get("error")
            self._error(error if isinstance(error, dict) else doc)
        return kind in OUTPUT_EVENTS

    def _response_object(self, response: dict[str, Any], items: bool = True) -> None:
        self.response_id = _str(response.get("id")) or self.response_id
        self.response_model = _str(response.get("model")) or self.response_model
        status = _str(response.get("status"))
        if status and status not in ("in_progress", "queued"):
            self.stop_reason = status
        details = response.get("incomplete_details")
        if isinstance(details, dict) and isinstance(details.get("reason"), str):
            self.stop_reason = f"incomplete:{details['reason']}"
        if isinstance(response.get("usage"), dict):
            self.usage = dict(response["usage"])
        if isinstance(response.get("error"), dict):
            self._error(response["error"])
        if items:
            for item in _list(response.get("output")):
                if isinstance(item, dict):
                    self._response_item(item)

    def _response_item(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if not (isinstance(kind, str) and kind.endswith("_call")):
            return
        key = str(item.get("id") or item.get("call_id") or len(self._tool_ids))
        if key in self._tool_ids:
            return
        self._tool_ids.add(key)
        self.tool_calls.append(str(item.get("name") or kind))

    def _chat_chunk(self, doc: dict[str, Any]) -> bool:
        self.response_id = _str(doc.get("id")) or self.response_id
        self.response_model = _str(doc.get("model")) or self.response_model
        if isinstance(doc.get("usage"), dict):
            self.usage = dict(doc["usage"])
        output = False
        for choice in _list(doc.get("choices")):
            if not isinstance(choice, dict):
                continue
            if isinstance(choice.get("finish_reason"), str):
                self.stop_reason = choice["finish_reason"]
            message = choice.get("delta") if isinstance(choice.get("delta"), dict) else choice.get("message")
            if not isinstance(message, dict):
                continue
            output |= bool(message.get("content") or message.get("tool_calls"))
            for call in _list(message.get("tool_calls")):
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    self.tool_calls.append(function["name"])
        if isinstance(doc.get("error"), dict):
            self._error(doc["error"])
        return output

    def _error(self, error: dict[str, Any]) -> None:
        self.error_type = _str(error.get("code")) or _str(error.get("type")) or self.error_type
        self.error = short(error.get("message"), 500) or self.error

    # ------------------------------------------------------------ output

    @property
    def cut_short(self) -> bool:
        """The stream ended before the provider's final usage (output tokens unknown)."""
        return self._start_only

    def tokens(self) -> dict[str, int | None]:
        """Usage in the event contract's buckets (uncached input; see records.py)."""
        u = self.usage or {}
        if self.api == "messages":
            return {
                "input_tokens": count(u.get("input_tokens")),
                "output_tokens": None if self._start_only else count(u.get("output_tokens")),
                "cache_read_tokens": count(u.get("cache_read_input_tokens")),
                "cache_write_tokens": count(u.get("cache_creation_input_tokens")),
                "reasoning_tokens": None,
            }
        if self.api == "responses":
            total, out = count(u.get("input_tokens")), count(u.get("output_tokens"))
            cached = count(_get(u, "input_tokens_details", "cached_tokens"))
            reasoning = count(_get(u, "output_tokens_details", "reasoning_tokens"))
        else:
            total, out = count(u.get("prompt_tokens")), count(u.get("completion_tokens"))
            cached = count(_get(u, "prompt_tokens_details", "cached_tokens"))
            reasoning = count(_get(u, "completion_tokens_details", "reasoning_tokens"))
        uncached = None if total is None else max(total - (cached or 0), 0)
        return {
            "input_tokens": uncached,
            "output_tokens": out,
            "cache_read_tokens": cached,
            "cache_write_tokens": None,
            "reasoning_tokens": reasoning,
        }


def _get(doc: dict[str, Any], outer: str, inner: str) -> object:
    value = doc.get(outer)
    return value.get(inner) if isinstance(value, dict) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
