"""Harness adapters as pure functions: argv, environment and files for one headless run."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from runner.agents.harness import GATEWAY_KEY, MODEL_KEY_ENV, HarnessSettings, plan, to_toml

WS, HOME, TMP = Path("/w/repo"), Path("/w/home"), Path("/w/tmp")
BASE = "http://127.0.0.1:4000/t/abc"


def make(kind: str, **fields):
    settings = HarnessSettings(kind=kind, model=fields.pop("model", "m-1"), **fields)
    return settings, plan(settings, prompt="-fix it", workspace=WS, home=HOME, tmp=TMP, model_base_url=BASE)


def test_claude_plan():
    _, p = make("claude-code", max_turns=30, reasoning_effort="high", allowed_tools=("Bash", "Edit"), max_retries=1)
    assert p.argv[:9] == ["claude", "-p", "--output-format", "stream-json", "--model", "m-1",
                          "--permission-mode", "acceptEdits", "--verbose"]
    assert p.argv[-2:] == ["--", "-fix it"]  # a prompt starting with "-" is not an option
    for pair in (["--max-turns", "30"], ["--effort", "high"], ["--allowedTools", "Bash,Edit"]):
        i = p.argv.index(pair[0])
        assert p.argv[i:i + 2] == pair
    assert p.env["ANTHROPIC_BASE_URL"] == BASE and p.env["ANTHROPIC_API_KEY"] == GATEWAY_KEY
    assert p.env["CLAUDE_CODE_MAX_RETRIES"] == "1" and p.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert (p.env["HOME"], p.env["TMPDIR"], p.cwd) == (str(HOME), str(TMP), WS)
    assert p.usage_format == "claude-stream-json" and p.files == {} and p.secret_values == ()


def test_codex_plan_writes_a_provider_and_fast_mode():
    _, p = make("codex", model="gpt-5-codex", service_tier="fast", reasoning_effort="high",
                config={"model_verbosity": "low"})
    assert p.argv == ["codex", "exec", "--json", "--skip-git-repo-check", "-s", "workspace-write", "-m",
                      "gpt-5-codex", "-C", str(WS), "--", "-fix it"]
    ((path, text),) = p.files.items()
    assert path == HOME / ".codex" / "config.toml" and p.env["CODEX_HOME"] == str(HOME / ".codex")
    config = tomllib.loads(text)
    assert config["model_provider"] == "trialhouse"
    assert config["model_providers"]["trialhouse"] == {
        "name": "trialhouse", "base_url": f"{BASE}/v1", "env_key": MODEL_KEY_ENV, "wire_api": "responses",
        "request_max_retries": 2, "stream_max_retries": 2}
    assert (config["service_tier"], config["features"]["fast_mode"]) == ("fast", True)
    assert (config["model_reasoning_effort"], config["model_verbosity"]) == ("high", "low")
    assert p.env[MODEL_KEY_ENV] == GATEWAY_KEY
    # Codex's sandbox refuses a CODEX_HOME under TMPDIR
    assert not Path(p.env["CODEX_HOME"]).is_relative_to(p.env["TMPDIR"])
    assert p.trajectory == HOME / ".codex" / "sessions"


def test_mini_plan():
    _, p = make("mini-swe-agent", max_turns=12, reasoning_effort="low")
    assert p.argv[:5] == ["mini", "-m", "openai/m-1", "-c", "mini.yaml"]
    overrides = [p.argv[i + 1] for i, a in enumerate(p.argv) if a == "-c"][1:]
    assert overrides == [f"model.model_kwargs.api_base={BASE}/v1", "agent.step_limit=12",
                         "model.model_kwargs.reasoning_effort=low", f"environment.cwd={WS}"]
    assert p.argv[p.argv.index("--cost-limit") + 1] == "0"
    assert p.argv[-2:] == ["-t", "-fix it"] and p.trajectory == TMP / "mini.traj.json"
    assert p.env["MSWEA_CONFIGURED"] == "true" and p.env["MSWEA_COST_TRACKING"] == "ignore_errors"
    assert p.env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] == "3" and p.env["OPENAI_API_KEY"] == GATEWAY_KEY
    _, p = make("mini-swe-agent", model="anthropic/claude-x")
    assert p.argv[2] == "anthropic/claude-x"


def test_direct_to_a_provider_needs_a_key_and_marks_it_secret():
    settings = HarnessSettings(kind="claude-code", model="m")
    with pytest.raises(ValueError, match="api_key is required"):
        plan(settings, prompt="p", workspace=WS, home=HOME, tmp=TMP, model_base_url=None)
    p = plan(settings, prompt="p", workspace=WS, home=HOME, tmp=TMP, model_base_url=None, api_key="sk-real-key")
    assert "ANTHROPIC_BASE_URL" not in p.env and p.secret_values == ("sk-real-key",)
    codex = plan(HarnessSettings(kind="codex", model="m"), prompt="p", workspace=WS, home=HOME, tmp=TMP,
                 model_base_url=None, api_key="sk-real-key")
    assert codex.env["OPENAI_API_KEY"] == "sk-real-key" and "model_provider" not in tomllib.loads(
        next(iter(codex.files.values())))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"kind": "codex", "max_turns": 5}, "no turn limit"),
        ({"kind": "codex", "max_budget_usd": 1.0}, "no budget limit"),
        ({"kind": "mini-swe-agent", "allowed_tools": ("Bash",)}, "only claude-code"),
        ({"kind": "claude-code", "config": {"a": 1}}, "takes no -c"),
        ({"kind": "aider"}, "kind"),
        ({"kind": "claude-code", "max_turns": 0}, "max_turns"),
        ({"kind": "claude-code", "surprise": 1}, "surprise"),
    ],
)
def test_settings_refuse_what_a_harness_cannot_do(fields, message):
    with pytest.raises(ValidationError, match=message):
        HarnessSettings(model="m", **fields)


def test_settings_record_is_the_identity_without_the_binary():
    record = HarnessSettings(kind="codex", model="m", binary="/opt/codex", service_tier="fast").settings_record()
    assert "binary" not in record and record["service_tier"] == "fast" and record["kind"] == "codex"


def test_to_toml_round_trips_through_tomllib():
    doc = {"a": "x \"quoted\"", "n": 3, "f.g": True, "t": {"k": [1, "two"]}, "p.q.r": 1.5}
    assert tomllib.loads(to_toml(doc)) == {"a": "x \"quoted\"", "n": 3, "f": {"g": True}, "t": {"k": [1, "two"]},
                                           "p": {"q": {"r": 1.5}}}
    with pytest.raises(ValueError, match="only strings"):
        to_toml({"x": {"y": object()}})
