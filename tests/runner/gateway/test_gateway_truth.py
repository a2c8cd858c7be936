"""Gateway truth (issue 33 item 5): retries counted once, a substituted model flagged.

Calls cross real loopback HTTP to a scripted gateway; the stage and trial totals are the
runner's own (``runner.agents.harness_stage``), computed from the records it produced.
"""

from __future__ import annotations

import httpx

from contract.stage_events import GatewayUsage
from runner.agents.harness_stage import gateway_usage, model_substituted, sum_gateway
from runner.gateway import Gateway, Reply, Script, Step, Tokens, ToolCall

READ = ToolCall(name="Read", input={"file_path": "{workspace}/a.py"})


def _body(model: str, tools: bool = True) -> dict:
    body = {"model": model, "max_tokens": 10, "stream": False, "messages": [{"role": "user", "content": "fix"}]}
    if tools:
        body["tools"] = [{"name": "Read", "input_schema": {"type": "object"}}]
    return body


def test_five_retries_are_five_not_the_sum_of_their_ordinals():
    fails = [Reply(status=500)] * 5
    script = Script(steps=[Step(tool_calls=[READ], usage=Tokens(input_tokens=10, output_tokens=2), before=fails)])
    calls = []
    with Gateway("scripted", script=script, on_call=calls.append) as gw:
        base = gw.open_trial("t")
        statuses = [httpx.post(f"{base}/v1/messages", json=_body("m")).status_code for _ in range(6)]
    assert statuses == [500] * 5 + [200]
    assert [c.retries for c in calls] == [0, 1, 2, 3, 4, 5]  # each call's ordinal at its position
    usage = gateway_usage(calls)
    assert usage.retries == 5 and usage.calls == 6 and usage.failed_calls == 5  # not 0+1+…+5 = 15
    two = sum_gateway([usage, gateway_usage(calls[:2])])
    assert two is not None and two.retries == 6


def test_the_models_asked_for_are_kept_and_a_side_request_is_not_a_substitution():
    calls = []
    script = Script(steps=[Step(text="done", usage=Tokens(input_tokens=1, output_tokens=1))])
    with Gateway("scripted", script=script, on_call=calls.append) as gw:
        base = gw.open_trial("t")
        httpx.post(f"{base}/v1/messages", json=_body("claude-haiku-4-5", tools=False))  # a title request
        httpx.post(f"{base}/v1/messages", json=_body("claude-opus-5-5"))
    usage = gateway_usage(calls)
    assert usage.models == ["claude-opus-5-5"]
    assert model_substituted("claude-opus-4-1", usage) is True
    assert model_substituted("claude-opus-5-5", usage) is False
    assert model_substituted("anthropic/claude-opus-5-5", usage) is False  # a litellm prefix is not sent


def test_substitution_rules():
    def usage(*models: str) -> GatewayUsage:
        return GatewayUsage(models=list(models))

    assert model_substituted("claude-sonnet-4-5", usage("claude-sonnet-4-5-20250929")) is False  # a dated snapshot
    assert model_substituted("gpt-5", usage("gpt-5-2025-08-07")) is False
    assert model_substituted("gpt-5", usage("gpt-5", "gpt-5-mini")) is True  # one main-loop call elsewhere
    assert model_substituted("gpt-5", usage()) is None  # no main-loop call: nothing to compare
    assert model_substituted(None, usage("gpt-5")) is None
    assert model_substituted("gpt-5", None) is None


def _chat(model: str) -> dict:
    return {"model": model, "messages": [{"role": "user", "content": "fix"}]}  # no tools: aider's edit formats


def test_main_loop_rules_for_agents_without_tool_calling():
    script = Script(steps=[Step(text="done", usage=Tokens(input_tokens=1, output_tokens=1))])
    seen: dict[str, list] = {}
    with Gateway("scripted", script=script) as gw:
        for rule in ("tools", "model", "all"):
            base = gw.open_trial(rule, main_loop=(rule, "openai/gpt-9"))
            for model in ("gpt-9", "gpt-9-mini"):  # the main model, then a weak model's summary
                assert httpx.post(f"{base}/v1/chat/completions", json=_chat(model)).status_code == 200
            seen[rule] = [c.side_request for c in gw.calls(rule)]
    assert seen == {"tools": [True, True], "model": [False, True], "all": [False, False]}
