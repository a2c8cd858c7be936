"""A ``command`` agent through the run's model gateway, inside bubblewrap: its route, the
dummy key, ``model_call`` events, steps merged from its agent-events file and the gateway,
and a gateway failure (the script does not describe the conversation) as ``infra_error``."""

from __future__ import annotations

import json
import subprocess
import sys

from contract.call_events import ModelCall, TrajectoryStep
from contract.trial_events import Grading, TrialFinished
from runner.eventlog import read_events

PY = sys.executable
ADD_MUL = "python3 -c \"open('calc.py', 'a').write('\\n\\ndef mul(a, b):\\n    return a * b\\n')\""


def chat_corpus(kit, root, steps):
    (root).mkdir(parents=True, exist_ok=True)
    agent = kit.agent("chat", "{model_base_url}", gateway=True)
    m = kit.make_corpus(root, variants=[{"id": "chat", "model": "chat-model", "agent": agent}])
    (root / "script.json").write_text(json.dumps({"steps": steps}))
    data = json.loads(m.read_text())
    data["gateway"] = {"mode": "scripted", "script": "script.json"}
    m.write_text(json.dumps(data))
    return m


def run(m, out):
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_events(out / "events.jsonl")


def test_a_command_agent_through_the_gateway(kit, corpus_root, tmp_path):
    m = chat_corpus(kit, corpus_root, [
        {"tool_calls": [{"name": "bash", "input": {"command": ADD_MUL}}],
         "usage": {"input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 50}},
        {"text": "added mul", "usage": {"input_tokens": 260, "output_tokens": 5, "cache_read_tokens": 50}},
    ])
    events = run(m, tmp_path / "out")
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "accepted", fin.reason
    calls = [e for e in events if isinstance(e, ModelCall)]
    assert [(c.status, c.position, c.api, c.stage) for c in calls] == [
        (200, 0, "chat_completions", "build"), (200, 1, "chat_completions", "build")]
    # the agent printed no usage of its own: the gateway measured every call, and fills what the
    # agent left unreported, saying so in the source (issue 33: aider's trial tokens were null)
    assert (fin.gateway_usage.input_tokens, fin.gateway_usage.output_tokens, fin.gateway_usage.cache_read_tokens) == (
        460, 25, 100)
    assert (fin.usage.input_tokens, fin.usage.output_tokens, fin.usage.cache_read_tokens) == (460, 25, 100)
    assert fin.usage.source == "agent-events+gateway" and fin.usage.steps == 2 and fin.usage.cost_usd is None
    steps = [e for e in events if isinstance(e, TrajectoryStep)]
    # agent-events gave the tool call; the gateway gave the model turns, merged by time
    assert [(s.kind, s.source) for s in steps] == [("model", "gateway"), ("tool", "agent-events"),
                                                   ("model", "gateway")]
    assert steps[1].command == ADD_MUL and steps[1].exit_code == 0 and steps[1].action == "run"
    assert [s.tokens_from for s in steps if s.kind == "model"] == ["gateway", "gateway"]


def test_a_gateway_failure_makes_the_trial_infra_error_with_the_reason(kit, corpus_root, tmp_path):
    # the script ends after its first step: the agent's second request is at a position it
    # does not describe, which the gateway answers with HTTP 400 trialhouse_script_mismatch
    m = chat_corpus(kit, corpus_root, [{"tool_calls": [{"name": "bash", "input": {"command": ADD_MUL}}]}])
    events = run(m, tmp_path / "out")
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "infra_error"  # though the edit was made: the run measured the setup
    assert "model gateway: script_mismatch on call 1" in fin.reason
    (bad,) = [e for e in events if isinstance(e, ModelCall) and e.gateway_error]
    assert (bad.status, bad.gateway_error, bad.position) == (400, "script_mismatch", 1)
    assert not [e for e in events if isinstance(e, Grading)]  # not graded
