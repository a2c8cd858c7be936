"""Replay keyed to its task (issue 33 item 3): a recording made for one task is refused,
naming what differs, when a route for another task opens, before any call is answered.

Real loopback HTTP: a scripted gateway plays the provider, a record-mode gateway records,
a replay-mode gateway answers.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from runner.gateway import Gateway, GatewayConfigError, Script, Step, Tokens, Upstream

TASK = {"prompt_sha256": "p" * 64, "case_sha256": "c" * 64, "tree": "t" * 40, "harness_sha256": "h" * 64,
        "harness": {"kind": "codex", "model": "gpt-6.2-sol", "max_retries": 2}}
BODY = {"model": "m", "max_tokens": 10, "stream": False, "messages": [{"role": "user", "content": "fix"}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}]}


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    script = Script(steps=[Step(text="done", usage=Tokens(input_tokens=5, output_tokens=1))])
    with Gateway("scripted", script=script) as provider:
        up = Upstream(provider.open_trial("provider"), None)
        with Gateway("record", upstreams={"anthropic": up}, recording_dir=tmp_path) as gw:
            assert httpx.post(f"{gw.open_trial('trial-1', task=TASK)}/v1/messages", json=BODY).status_code == 200
    return tmp_path


def test_the_same_task_replays(recorded):
    with Gateway("replay", recording_dir=recorded) as gw:
        r = httpx.post(f"{gw.open_trial('trial-1', task=TASK)}/v1/messages", json=BODY)
    assert r.status_code == 200 and r.json()["usage"]["output_tokens"] == 1


@pytest.mark.parametrize(("change", "named"), [
    ({"prompt_sha256": "q" * 64}, "the prompt differs"),
    ({"tree": "u" * 40}, "the repository tree differs"),
    ({"case_sha256": "d" * 64}, "the case differs"),
    ({"harness_sha256": "i" * 64, "harness": {**TASK["harness"], "max_retries": 0}},
     "the harness settings differ (recorded hhhhhhhhhhhh, now iiiiiiiiiiii): max_retries 0 (recorded 2)"),
])
def test_another_task_is_refused_when_the_route_opens(recorded, change, named):
    with Gateway("replay", recording_dir=recorded) as gw:
        with pytest.raises(GatewayConfigError) as caught:
            gw.open_trial("trial-1", task={**TASK, **change})
    message = str(caught.value)
    assert message.startswith("replay_mismatch: recording trial-1-") and named in message
    assert sum(w in message for w in ("prompt", "repository", "case differs", "harness")) == 1  # only what differs


def test_a_recording_without_a_task_key_is_refused_for_a_keyed_route(tmp_path):
    script = Script(steps=[Step(text="done", usage=Tokens(input_tokens=5, output_tokens=1))])
    with Gateway("scripted", script=script) as provider:
        up = Upstream(provider.open_trial("provider"), None)
        with Gateway("record", upstreams={"anthropic": up}, recording_dir=tmp_path) as gw:
            httpx.post(f"{gw.open_trial('trial-1')}/v1/messages", json=BODY)
    with Gateway("replay", recording_dir=tmp_path) as gw:
        with pytest.raises(GatewayConfigError, match="carries no task key"):
            gw.open_trial("trial-1", task=TASK)
        assert httpx.post(f"{gw.open_trial('trial-1')}/v1/messages", json=BODY).status_code == 200  # unkeyed: as before
