"""The model gateway over real loopback HTTP: scripted answers, forwarding, faults, record/replay.

The upstream of a forwarding gateway is another gateway in scripted mode (or a small
aiohttp app where the test must see what arrived), so every byte crosses real sockets.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from runner.gateway import (
    Gateway,
    GatewayConfigError,
    Reply,
    Script,
    Step,
    Tokens,
    ToolCall,
    Upstream,
)
from runner.gateway.sse import SseDecoder

READ = ToolCall(name="Read", input={"file_path": "{workspace}/a.py"})


def script(*steps: Step, **kw) -> Script:
    return Script(steps=list(steps), **kw)


def two_steps(**first) -> Script:
    return script(Step(tool_calls=[READ], usage=Tokens(input_tokens=100, output_tokens=7, cache_read_tokens=900),
                       **first),
                  Step(text="done", usage=Tokens(input_tokens=120, output_tokens=9, cache_read_tokens=1000)))


def anthropic(results: list[str] = (), stream: bool = True, tools: bool = True, model: str = "m") -> dict:
    messages = [{"role": "user", "content": "fix it"}]
    for rid in results:
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": rid, "name": "Read", "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": rid, "content": "x"}]}]
    body = {"model": model, "max_tokens": 100, "stream": stream, "messages": messages}
    if tools:
        body["tools"] = [{"name": "Read", "input_schema": {"type": "object"}}]
    return body


def responses(results: list[str] = (), stream: bool = True) -> dict:
    items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix"}]}]
    for rid in results:
        items += [{"type": "function_call", "call_id": rid, "name": "exec_command", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": rid, "output": "ok"}]
    return {"model": "gpt-x", "stream": stream, "input": items, "tools": [{"type": "function", "name": "exec_command"}]}


def chat(results: list[str] = (), stream: bool = False) -> dict:
    messages = [{"role": "user", "content": "fix"}]
    for rid in results:
        messages += [{"role": "assistant", "tool_calls": [{"id": rid, "type": "function",
                                                           "function": {"name": "bash", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": rid, "content": "ok"}]
    body = {"model": "gpt-x", "messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]}
    if stream:
        body["stream"] = True
    return body


def sse_events(text: str) -> list[dict]:
    decoder = SseDecoder()
    events = decoder.feed(text.encode()) + decoder.close()
    return [e.json() for e in events if e.data != "[DONE]"]


# ---------------------------------------------------------------- scripted mode


def test_scripted_anthropic_stream_is_well_formed_and_recorded():
    calls = []
    with Gateway("scripted", script=two_steps(), on_call=calls.append) as gw:
        base = gw.open_trial("t1", variables={"workspace": "/ws"})
        r = httpx.post(f"{base}/v1/messages?beta=true", json=anthropic())
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = sse_events(r.text)
    assert [e["type"] for e in events] == ["message_start", "content_block_start", "content_block_delta",
                                           "content_block_stop", "message_delta", "message_stop"]
    assert json.loads(events[2]["delta"]["partial_json"]) == {"file_path": "/ws/a.py"}
    assert events[0]["message"]["usage"]["output_tokens"] == 1  # like the real API: final count comes later
    (call,) = calls
    assert (call.trial_id, call.provider, call.api, call.status, call.streamed) == ("t1", "anthropic", "messages", 200, True)
    assert (call.input_tokens, call.output_tokens, call.cache_read_tokens, call.cache_write_tokens) == (100, 7, 900, 0)
    assert call.tool_calls == ["Read"] and call.stop_reason == "tool_use"
    assert call.position == 0 and call.retries == 0 and not call.side_request
    assert call.ttft_s is not None and 0 <= call.ttft_s <= call.latency_s


@pytest.mark.parametrize("stream", [True, False])
def test_scripted_openai_apis_report_cached_tokens_apart(stream):
    calls = []
    with Gateway("scripted", script=two_steps(), on_call=calls.append) as gw:
        base = gw.open_trial("t1", variables={"workspace": "/ws"})
        r1 = httpx.post(f"{base}/v1/responses", json={**responses(stream=stream), "service_tier": "priority"})
        r2 = httpx.post(f"{base}/v1/chat/completions", json=chat(stream=stream))
    assert r1.status_code == r2.status_code == 200
    if stream:
        done = sse_events(r1.text)[-1]["response"]
        chunks = sse_events(r2.text)
        assert chunks[-1]["usage"]["prompt_tokens"] == 1000 and r2.text.rstrip().endswith("data: [DONE]")
    else:
        done = r1.json()
        assert r2.json()["usage"] == {"prompt_tokens": 1000, "completion_tokens": 7, "total_tokens": 1007,
                                      "prompt_tokens_details": {"cached_tokens": 900}}
    # OpenAI counts cached tokens inside input_tokens: 100 uncached + 900 cached
    assert done["usage"]["input_tokens"] == 1000 and done["usage"]["input_tokens_details"]["cached_tokens"] == 900
    for call in calls:
        assert (call.input_tokens, call.cache_read_tokens, call.output_tokens) == (100, 900, 7)
        assert call.cache_write_tokens is None  # OpenAI reports none: unknown, not 0
        assert call.provider == "openai" and call.tool_calls == ["Read"]
    assert [c.service_tier for c in calls] == ["priority", None]  # what each request asked for


def test_step_is_chosen_from_the_conversation_not_a_counter():
    calls = []
    with Gateway("scripted", script=two_steps(), on_call=calls.append) as gw:
        base = gw.open_trial("t1", variables={"workspace": "/ws"})
        first = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False)).json()
        again = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False)).json()  # a client retry
        side = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False, tools=False)).json()
        tool_id = first["content"][0]["id"]
        second = httpx.post(f"{base}/v1/messages", json=anthropic([tool_id], stream=False)).json()
    assert first["content"][0]["name"] == again["content"][0]["name"] == "Read"
    assert side["content"] == [{"type": "text", "text": "ok"}]
    assert second["content"] == [{"type": "text", "text": "done"}] and second["stop_reason"] == "end_turn"
    assert [(c.position, c.retries, c.side_request) for c in calls] == [(0, 0, False), (0, 1, False),
                                                                       (0, 0, True), (1, 0, False)]


def test_script_mismatch_is_a_clear_gateway_error():
    calls = []
    with Gateway("scripted", script=two_steps(), on_call=calls.append) as gw:
        base = gw.open_trial("t1")
        r = httpx.post(f"{base}/v1/messages", json=anthropic(["a", "b", "c"], stream=False))
    assert r.status_code == 400  # not retried by clients
    assert "no step at conversation position 3" in r.json()["error"]["message"]
    assert calls[0].gateway_error == "script_mismatch" and calls[0].status == 400


def test_scripted_faults_before_the_answer_and_context_exhaustion():
    calls = []
    faults = script(Step(tool_calls=[READ], before=[Reply(status=500), Reply(status=429)]),
                    Step(context_length=True))
    with Gateway("scripted", script=faults, on_call=calls.append) as gw:
        base = gw.open_trial("t1")
        statuses = [httpx.post(f"{base}/v1/messages", json=anthropic(stream=False)).status_code for _ in range(3)]
        ctx = httpx.post(f"{base}/v1/messages", json=anthropic(["toolu_scripted_000_2_0"], stream=False))
        failed = sse_events(httpx.post(f"{base}/v1/responses", json=responses(["x"])).text)
    assert statuses == [500, 429, 200]
    assert ctx.status_code == 400 and "prompt is too long" in ctx.json()["error"]["message"]
    assert failed[-1]["type"] == "response.failed"
    assert failed[-1]["response"]["error"]["code"] == "context_length_exceeded"
    assert [c.error_type for c in calls] == ["api_error", "rate_limit_error", None, "invalid_request_error",
                                            "context_length_exceeded"]
    assert [c.retries for c in calls[:3]] == [0, 1, 2]


def test_script_validation_names_the_problem():
    with pytest.raises(ValueError, match="only the last step"):
        Script(steps=[Step(text="a"), Step(text="b")])
    with pytest.raises(ValueError, match="either a message"):
        Reply(text="x", status=500)


# ---------------------------------------------------------------- routing


def test_trials_are_routed_by_unguessable_token_and_closed_routes_refuse():
    with Gateway("scripted", script=two_steps()) as gw:
        a = gw.open_trial("a")
        b = gw.open_trial("b", script=script(Step(text="b says hi")))
        assert a != b and a.rsplit("/", 1)[1] != "a"
        ra = httpx.post(f"{a}/v1/messages", json=anthropic(stream=False)).json()
        rb = httpx.post(f"{b}/v1/messages", json=anthropic(stream=False)).json()
        assert ra["content"][0]["type"] == "tool_use" and rb["content"][0]["text"] == "b says hi"
        assert len(gw.calls("a")) == len(gw.calls("b")) == 1
        assert httpx.post(f"{gw.base_url}/t/guess/v1/messages", json=anthropic()).status_code == 404
        assert httpx.post(f"{gw.base_url}/v1/messages", json=anthropic()).status_code == 404
        closed = gw.close_trial("a")
        assert len(closed) == 1
        assert httpx.post(f"{a}/v1/messages", json=anthropic()).status_code == 404
        with pytest.raises(GatewayConfigError, match="already open"):
            gw.open_trial("b")


def test_concurrent_trials_are_kept_apart():
    with Gateway("scripted", script=two_steps()) as gw:
        bases = {f"t{i}": gw.open_trial(f"t{i}", variables={"workspace": f"/w{i}"}) for i in range(8)}

        def run(base: str, out: list) -> None:
            for _ in range(5):
                out.append(httpx.post(f"{base}/v1/messages", json=anthropic(stream=False)).json())

        results = {t: [] for t in bases}
        threads = [threading.Thread(target=run, args=(bases[t], results[t])) for t in bases]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, trial in enumerate(bases):
            assert {r["content"][0]["input"]["file_path"] for r in results[trial]} == {f"/w{i}/a.py"}
            assert [c.call_index for c in gw.calls(trial)] == list(range(5))
            assert [c.retries for c in gw.calls(trial)] == list(range(5))


def test_bad_request_body_is_recorded_not_raised():
    with Gateway("scripted", script=two_steps()) as gw:
        base = gw.open_trial("t")
        r = httpx.post(f"{base}/v1/messages", content=b"{not json")
        assert r.status_code == 400 and gw.calls("t")[0].gateway_error == "bad_request"


# ---------------------------------------------------------------- forward mode and faults


@pytest.fixture
def upstream():
    """A scripted gateway playing the provider; yields a factory (script → Upstream)."""
    gateways = []

    def make(the_script: Script, key_env: str | None = None, **kw) -> Upstream:
        gw = Gateway("scripted", script=the_script, **kw)
        gw.start()
        gateways.append(gw)
        return Upstream(gw.open_trial("provider", variables={"workspace": "/up"}), key_env)

    yield make
    for gw in gateways:
        gw.stop()


def test_forward_streams_through_and_measures_the_same_tokens(upstream):
    calls = []
    up = upstream(two_steps())
    with Gateway("forward", upstreams={"anthropic": up, "openai": up}, on_call=calls.append) as gw:
        base = gw.open_trial("t1")
        streamed = httpx.post(f"{base}/v1/messages", json=anthropic()).text
        plain = httpx.post(f"{base}/v1/chat/completions", json=chat()).json()
    assert sse_events(streamed)[-2]["usage"] == {"output_tokens": 7}
    assert plain["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "Read"
    assert [(c.mode, c.status, c.input_tokens, c.output_tokens, c.cache_read_tokens) for c in calls] == [
        ("forward", 200, 100, 7, 900), ("forward", 200, 100, 7, 900)]
    assert calls[0].request_id == "req_scripted_000_0"  # the provider's request-id header


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error")])
def test_forward_passes_provider_errors_through(upstream, status, kind):
    calls = []
    up = upstream(script(Step(status=status, error_message=f"boom {status}")))
    with Gateway("forward", upstreams={"anthropic": up}, on_call=calls.append) as gw:
        r = httpx.post(f"{gw.open_trial('t')}/v1/messages", json=anthropic())
    assert r.status_code == status and r.json()["error"]["type"] == kind
    assert (calls[0].status, calls[0].error_type, calls[0].error) == (status, kind, f"boom {status}")
    assert calls[0].gateway_error is None  # the provider's failure, faithfully relayed


def test_forward_garbage_from_upstream_is_relayed_with_tokens_unknown(upstream):
    calls = []
    up = upstream(script(Step(garbage="<html>502 Bad Gateway</html>")))
    with Gateway("forward", upstreams={"anthropic": up}, on_call=calls.append) as gw:
        r = httpx.post(f"{gw.open_trial('t')}/v1/messages", json=anthropic(stream=False))
        s = httpx.post(f"{gw.open_trial('s')}/v1/messages", json=anthropic(stream=True))
    assert r.text == s.text == "<html>502 Bad Gateway</html>"
    for call in calls:
        assert call.status == 200 and call.input_tokens is None and call.output_tokens is None
        assert "tokens unknown" in call.usage_note


def test_forward_slow_stream_is_not_buffered(upstream):
    calls = []
    up = upstream(two_steps(stall_s=1.0))
    with Gateway("forward", upstreams={"anthropic": up}, on_call=calls.append) as gw:
        start = time.monotonic()
        with httpx.stream("POST", f"{gw.open_trial('t')}/v1/messages", json=anthropic()) as r:
            chunks = r.iter_bytes()
            first = next(chunks)
            first_at = time.monotonic() - start
            rest = b"".join(chunks)
        total = time.monotonic() - start
    assert b"message_start" in first and b"message_stop" in rest
    assert first_at < 0.9 <= total  # the first event arrived before the upstream's stall ended
    (call,) = calls
    assert call.latency_s >= 1.0 and call.ttft_s >= 1.0  # first content came after the stall
    assert call.output_tokens == 7


def test_forward_idle_upstream_times_out_with_a_gateway_error(upstream):
    calls = []
    up = upstream(two_steps(stall_s=3.0))
    with Gateway("forward", upstreams={"anthropic": up}, on_call=calls.append, idle_timeout_s=0.5) as gw:
        with httpx.stream("POST", f"{gw.open_trial('t')}/v1/messages", json=anthropic()) as r:
            body = b"".join(r.iter_bytes())
    assert b"message_start" in body and b"message_stop" not in body  # truncated, not hung
    assert calls[0].gateway_error == "upstream_timeout"


def test_forward_unreachable_upstream_is_a_502_with_a_gateway_error():
    calls = []
    dead = Upstream("http://127.0.0.1:9", None)  # discard port: nothing listens
    with Gateway("forward", upstreams={"anthropic": dead}, on_call=calls.append) as gw:
        r = httpx.post(f"{gw.open_trial('t')}/v1/messages", json=anthropic())
    assert r.status_code == 502
    assert calls[0].gateway_error == "upstream_unreachable" and calls[0].status == 502


def test_client_retries_are_counted_per_position(upstream):
    calls = []
    up = upstream(two_steps(before=[Reply(status=500), Reply(status=503)]))
    with Gateway("forward", upstreams={"anthropic": up}, on_call=calls.append) as gw:
        base = gw.open_trial("t")
        for _ in range(5):  # a client that retries until it gets an answer
            r = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False))
            if r.status_code == 200:
                break
    assert [(c.status, c.retries) for c in calls] == [(500, 0), (503, 1), (200, 2)]


# ---------------------------------------------------------------- secrets


class _Echo:
    """A provider stand-in that remembers the headers it received."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.headers.append(dict(request.headers))
        return web.json_response({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                                  "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                                  "usage": {"input_tokens": 3, "output_tokens": 1}})

    def __enter__(self) -> str:
        ready = threading.Event()
        self.loop = asyncio.new_event_loop()

        async def start() -> None:
            app = web.Application()
            app.router.add_post("/v1/messages", self.handle)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            site = web.TCPSite(self.runner, "127.0.0.1", 0)
            await site.start()
            self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
            ready.set()

        self.thread = threading.Thread(target=lambda: (self.loop.run_until_complete(start()), self.loop.run_forever()),
                                       daemon=True)
        self.thread.start()
        ready.wait()
        return self.url

    def __exit__(self, *exc) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


def test_gateway_key_replaces_the_agents_and_no_secret_is_stored(tmp_path: Path):
    real_key = "sk-ant-api03-REALKEYrealkeyREALKEY0123456789"
    secret = "hunter2-project-secret"
    echo = _Echo()
    calls = []
    with echo as url:
        gw = Gateway("record", upstreams={"anthropic": Upstream(url, "ANTHROPIC_API_KEY")},
                     recording_dir=tmp_path, on_call=calls.append,
                     env={"ANTHROPIC_API_KEY": real_key, "MY_SECRET": secret}, secret_env=["MY_SECRET"])
        with gw:
            base = gw.open_trial("t")
            body = anthropic(stream=False)
            body["messages"][0]["content"] = f"the password is {secret}, my token sk-proj-{'x' * 30}"
            r = httpx.post(f"{base}/v1/messages", json=body,
                           headers={"x-api-key": "agent-dummy", "authorization": "Bearer agent-bearer-0123456789"})
    assert r.status_code == 200
    (seen,) = echo.headers
    assert seen["x-api-key"] == real_key and "Authorization" not in seen  # the agent never held the real key
    stored = "\n".join(p.read_text() for p in tmp_path.rglob("*")) + json.dumps([c.model_dump(mode="json") for c in calls])
    for leaked in (real_key, secret, "agent-bearer-0123456789", "agent-dummy", "x" * 30):
        assert leaked not in stored
    assert "[REDACTED]" in stored


# ---------------------------------------------------------------- record and replay


def _conversation(base: str) -> list:
    failed = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False))
    first = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False)).json()  # the client's retry
    second = httpx.post(f"{base}/v1/messages", json=anthropic([first["content"][0]["id"]])).text
    return [(failed.status_code, failed.json()), first, sse_events(second)]


def test_record_then_replay_gives_the_same_answers_without_the_provider(upstream, tmp_path: Path):
    up = upstream(two_steps(before=[Reply(status=500)]))
    with Gateway("record", upstreams={"anthropic": up}, recording_dir=tmp_path) as gw:
        recorded = _conversation(gw.open_trial("trial-1"))
    replayed_calls = []
    with Gateway("replay", recording_dir=tmp_path, on_call=replayed_calls.append) as gw:
        replayed = _conversation(gw.open_trial("trial-1"))
    # the first call failed with 500 when recorded, so the replay fails it too
    assert recorded[0][0] == 500 and replayed[0] == recorded[0]
    assert replayed[1:] == recorded[1:]
    assert recorded[2][-2]["usage"] == {"output_tokens": 9}
    assert [(c.mode, c.status) for c in replayed_calls] == [("replay", 500), ("replay", 200), ("replay", 200)]
    assert replayed_calls[2].output_tokens == 9


def test_replay_mismatch_is_a_clear_error(upstream, tmp_path: Path):
    up = upstream(two_steps())
    with Gateway("record", upstreams={"anthropic": up}, recording_dir=tmp_path) as gw:
        base = gw.open_trial("trial-1")
        httpx.post(f"{base}/v1/messages", json=anthropic(stream=False))
    calls = []
    with Gateway("replay", recording_dir=tmp_path, on_call=calls.append) as gw:
        base = gw.open_trial("trial-1")
        wrong_ids = httpx.post(f"{base}/v1/messages", json=anthropic(["toolu_other"], stream=False))
        other_model = httpx.post(f"{base}/v1/messages", json=anthropic(stream=False, model="m2"))
    assert wrong_ids.status_code == other_model.status_code == 400
    assert "no call at conversation position 1" in wrong_ids.json()["error"]["message"]
    assert "model 'm2' != recorded 'm'" in other_model.json()["error"]["message"]
    assert [c.gateway_error for c in calls] == ["replay_mismatch", "replay_mismatch"]
    with Gateway("replay", recording_dir=tmp_path) as gw, pytest.raises(GatewayConfigError, match="no recording"):
        gw.open_trial("never-recorded")


def test_mode_needs_its_inputs():
    with pytest.raises(GatewayConfigError, match="recording_dir"):
        Gateway("replay")
    with pytest.raises(GatewayConfigError, match="unknown"):
        Gateway("proxy")  # type: ignore[arg-type]
    with Gateway("scripted") as gw, pytest.raises(GatewayConfigError, match="needs a script"):
        gw.open_trial("t")


def test_stage_routes_label_their_calls_and_can_follow_each_other(tmp_path: Path):
    with Gateway("scripted", script=two_steps()) as gw:
        build = gw.open_trial("t1", stage="build", attempt=1)
        httpx.post(f"{build}/v1/messages", json=anthropic(stream=False))
        (first,) = gw.close_trial("t1", stage="build", attempt=1)
        qa = gw.open_trial("t1", stage="qa", attempt=1)
        httpx.post(f"{qa}/v1/messages", json=anthropic(stream=False))
        (second,) = gw.calls("t1", stage="qa", attempt=1)
        assert httpx.post(f"{build}/v1/messages", json=anthropic()).status_code == 404
    assert (first.trial_id, first.stage, first.attempt) == ("t1", "build", 1)
    assert (second.stage, second.call_index) == ("qa", 0)


@pytest.mark.parametrize("mode", ["forward", "scripted"])
def test_agent_hanging_up_mid_stream_keeps_what_was_seen(upstream, mode):
    calls = []
    slow = two_steps(stall_s=2.0)
    kwargs = {"upstreams": {"anthropic": upstream(slow)}} if mode == "forward" else {"script": slow}
    with Gateway(mode, on_call=calls.append, **kwargs) as gw:
        base = gw.open_trial("t")
        with httpx.stream("POST", f"{base}/v1/messages", json=anthropic()) as r:
            first = next(r.iter_bytes())  # message_start only; then hang up
        assert b"message_start" in first
        deadline = time.monotonic() + 5
        while not calls and time.monotonic() < deadline:
            time.sleep(0.05)
    (call,) = calls
    assert call.error.startswith("agent closed the connection") and call.status == 200
    assert (call.input_tokens, call.cache_read_tokens) == (100, 900)  # from message_start
    assert call.output_tokens is None  # message_start says 1: not the count, which never came
    assert "output tokens unknown" in call.usage_note
