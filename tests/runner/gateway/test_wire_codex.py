"""What the gateway reads from Codex 0.171's requests for its default model (issue 33 item 1).

The fixture is the first request the real pinned CLI sent for ``gpt-6.2-sol`` (captured on
loopback; long descriptions and texts shortened): no top-level ``tools``, the tools in an
``additional_tools`` input item. Whole trials with the real CLI are in
tests/runner/agents/test_codex_current.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from runner.gateway.sse import SseEvent
from runner.gateway.wire import ResponseTap, read_request

REQUEST = Path(__file__).parent / "fixtures" / "codex-0.171-gpt-6.2-sol-request.json"


def test_tools_in_additional_tools_make_a_main_loop_call():
    doc = json.loads(REQUEST.read_text())
    assert "tools" not in doc and doc["input"][0]["type"] == "additional_tools"
    info = read_request("responses", REQUEST.read_bytes())
    assert info.model == "gpt-6.2-sol" and info.stream and info.position == 0 and not info.side
    without = {**doc, "input": [i for i in doc["input"] if i["type"] != "additional_tools"]}
    assert read_request("responses", json.dumps(without).encode()).side  # nothing offered: a side request
    empty = {**doc, "input": [{**doc["input"][0], "tools": []}, *doc["input"][1:]]}
    assert read_request("responses", json.dumps(empty).encode()).side


def test_exec_calls_and_their_outputs_place_the_conversation():
    doc = json.loads(REQUEST.read_text())
    doc["input"] += [{"type": "custom_tool_call", "call_id": "c1", "name": "exec", "input": "text(1)"},
                     {"type": "custom_tool_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "1"}]}]
    info = read_request("responses", json.dumps(doc).encode())
    assert (info.position, info.tool_result_ids, info.side) == (1, ("c1",), False)


def test_a_streamed_custom_tool_call_is_counted_and_is_model_output():
    tap = ResponseTap("responses")
    item = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c1", "name": "exec", "input": "text(1)"}
    events = [{"type": "response.output_item.added", "item": {**item, "input": ""}},
              {"type": "response.custom_tool_call_input.delta", "item_id": "ctc_1", "delta": "text(1)"},
              {"type": "response.output_item.done", "item": item},
              {"type": "response.completed", "response": {"id": "resp_1", "model": "gpt-6.2-sol", "status": "completed",
                                                          "usage": {"input_tokens": 10, "output_tokens": 3}}}]
    output = [tap.on_event(SseEvent(e["type"], json.dumps(e))) for e in events]
    assert output == [True, True, True, False]
    assert tap.tool_calls == ["exec"] and tap.stop_reason == "completed" and tap.tokens()["output_tokens"] == 3
