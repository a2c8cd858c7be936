"""The real, pinned CLIs (``make tools``) driven through the harness adapters against the gateway.

Each run is a whole headless session of the real program, offline: the scripted model
asks it to read calc.py, run a check, edit, check again, finish; the fault runs fail
with HTTP 500, hit the turn limit, or have a tool denied. The harness's own account
(parsed output) is checked against the gateway's (what crossed the wire). mini-swe-agent
runs once live (it takes ~10 s to import litellm); its faults are tested on recordings.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from runner.agents.harness import HarnessSettings, parse_version, probe, version_argv
from runner.agents.rehearse import CALC_BUGGY, rehearse, scenario_script
from runner.agents.trajectory import attach_gateway, claude_steps, codex_steps, mini_steps
from runner.gateway import Gateway, Upstream, gateway_failure

from .conftest import REAL, TOOLS_BIN, tool

pytestmark = pytest.mark.slow
PATH = f"{TOOLS_BIN}:/usr/local/bin:/usr/bin:/bin"
KINDS = {"claude-code": "claude", "codex": "codex", "mini-swe-agent": "mini"}


def gateway_tokens(calls) -> tuple[int, int, int]:
    ok = [c for c in calls if c.status == 200]
    return tuple(sum(getattr(c, k) or 0 for c in ok) for k in ("input_tokens", "output_tokens", "cache_read_tokens"))


@pytest.mark.parametrize("kind", KINDS)
def test_installed_version_is_probed_and_has_recordings(kind):
    found = probe(HarnessSettings(kind=kind, model="m"), PATH)
    assert found.problem is None and found.path == str(TOOLS_BIN / KINDS[kind])
    # the fixtures must be recordings of the pinned version: re-record after a bump
    assert (REAL / f"{kind}-{found.version}").is_dir(), f"re-record: tests/runner/agents/record_real.py {kind}"


def test_a_missing_cli_is_a_clear_problem(tmp_path):
    found = probe(HarnessSettings(kind="claude-code", model="m"), str(tmp_path))
    assert found.path is None and "not on the agent's PATH" in found.problem and "make tools" in found.problem
    assert parse_version("codex", "codex-cli 9.9.9-beta\n") == "9.9.9-beta"
    # mini-swe-agent 2.4.6 has no --version (exit 2): its banner, printed by --help (exit 0)
    assert version_argv(HarnessSettings(kind="mini-swe-agent", model="m", binary="/x/mini")) == ["/x/mini", "--help"]


def test_the_mini_version_comes_from_its_banner_of_a_command_that_succeeds():
    import subprocess

    argv = version_argv(HarnessSettings(kind="mini-swe-agent", model="m", binary=tool("mini")))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={"PATH": PATH, "HOME": "/nonexistent"})
    assert proc.returncode == 0 and proc.stdout.startswith("This is mini-swe-agent version ")
    assert parse_version("mini-swe-agent", proc.stdout) == "2.4.6"
    refused = subprocess.run([tool("mini"), "--version"], capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, env={"PATH": PATH, "HOME": "/nonexistent"})
    assert refused.returncode == 2  # why the banner is read from --help


@pytest.mark.parametrize("kind", KINDS)
def test_a_whole_scripted_session_succeeds_and_agrees_with_the_gateway(kind, tmp_path):
    run = rehearse(kind, "success", tool(KINDS[kind]), root=tmp_path, path_env=PATH)
    result = run.result
    assert run.exit_code == 0 and run.workspace_fixed, run.stderr.read_text()[-2000:]
    u = result.report.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == gateway_tokens(run.calls) == (1600, 210, 10000)
    assert result.report.infra_error is False and result.report.budget_hit is False
    assert result.cli_version == probe(run.settings, PATH).version
    if kind != "mini-swe-agent":
        assert result.session_id
    if kind == "claude-code":
        steps = claude_steps(run.stdout, workspace=run.workspace)
    elif kind == "codex":
        steps = codex_steps(run.stdout, rollout=next(run.trajectory.rglob("rollout-*.jsonl")), workspace=run.workspace)
    else:
        steps = mini_steps(run.trajectory, workspace=run.workspace)
    steps = attach_gateway(steps, run.calls)
    assert [s.action for s in steps if s.kind == "tool"][:4] == ["read", "run", "edit", "run"]
    assert sum(s.output_tokens for s in steps if s.kind == "model") == 210


def test_claude_http_500_retries_then_fails_as_infra(tmp_path):
    run = rehearse("claude-code", "http-500", tool("claude"), root=tmp_path, path_env=PATH)
    assert [(c.status, c.retries) for c in run.calls] == [(500, 0), (500, 1)]
    assert run.result.report.infra_error is True and not run.workspace_fixed


def test_claude_tool_denied_under_accept_edits(tmp_path):
    run = rehearse("claude-code", "denied", tool("claude"), root=tmp_path, path_env=PATH)
    assert run.exit_code == 0 and run.result.report.status == "success"
    assert [d.tool_name for d in run.result.permission_denials] == ["Bash", "Bash"]
    assert run.workspace_fixed  # the edit was allowed: acceptEdits


def test_claude_turn_limit_is_a_budget_stop(tmp_path):
    run = rehearse("claude-code", "turn-limit", tool("claude"), root=tmp_path, path_env=PATH)
    assert (run.result.report.status, run.result.report.budget_hit) == ("error_max_turns", True)
    assert len(run.calls) == 2


def test_codex_failure_after_work_keeps_its_tokens(tmp_path):
    run = rehearse("codex", "fail-after-work", tool("codex"), root=tmp_path, path_env=PATH)
    assert run.workspace_fixed and run.exit_code == 1
    u = run.result.report.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == gateway_tokens(run.calls)
    assert run.result.tokens_from == "rollout"


def test_codex_removed_flag_names_the_cause(tmp_path):
    run = rehearse("codex", "bad-flag", tool("codex"), root=tmp_path, path_env=PATH)
    assert run.exit_code == 2 and run.calls == []
    assert "--full-auto" in run.result.report.message


def test_claude_recorded_then_replayed_without_the_provider(tmp_path):
    """Record a real session through the gateway, then re-run the CLI against the recording."""
    recordings = tmp_path / "recordings"
    root = tmp_path / "session"
    provider = Gateway("scripted", script=scenario_script("claude-code", "success"))
    with provider:
        upstream = Upstream(provider.open_trial("provider", variables={"workspace": str(root / "workspace")}))
        with Gateway("record", upstreams={"anthropic": upstream}, recording_dir=recordings) as recorder:
            first = rehearse("claude-code", "success", tool("claude"), root=root, path_env=PATH,
                             base_url=recorder.open_trial("trial-1"))
            recorded = recorder.calls("trial-1")
    assert first.workspace_fixed
    (root / "workspace" / "calc.py").write_text(CALC_BUGGY)
    shutil.rmtree(root / "home")
    with Gateway("replay", recording_dir=recordings) as replayer:
        again = rehearse("claude-code", "success", tool("claude"), root=root, path_env=PATH,
                         base_url=replayer.open_trial("trial-1"))
        replayed = replayer.calls("trial-1")
    assert again.exit_code == 0 and again.workspace_fixed
    assert gateway_failure(replayed) is None
    assert [c.mode for c in replayed] == ["replay"] * len(recorded)
    assert [(c.position, c.output_tokens) for c in replayed] == [(c.position, c.output_tokens) for c in recorded]
    assert again.result.report.usage == first.result.report.usage.model_copy(
        update={"time_to_first_edit_s": again.result.report.usage.time_to_first_edit_s})
    # a different configuration does not match the recording: a clear error, never a silent answer
    (root / "workspace" / "calc.py").write_text(CALC_BUGGY)
    with Gateway("replay", recording_dir=recordings) as replayer:
        other = rehearse("claude-code", "success", tool("claude"), root=root, path_env=PATH,
                         base_url=replayer.open_trial("trial-1"), model="th-other-model")
        mismatched = replayer.calls("trial-1")
    assert not other.workspace_fixed
    reason = gateway_failure(mismatched)
    assert reason is not None and "replay_mismatch" in reason and "th-other-model" in reason


def test_codex_fast_tier_reaches_codex_and_the_gateway_shows_what_was_sent(tmp_path):
    run = rehearse("codex", "success", tool("codex"), root=tmp_path, path_env=PATH,
                   overrides={"service_tier": "fast", "reasoning_effort": "high"})
    assert run.exit_code == 0 and run.workspace_fixed
    warnings = [line for line in run.stdout.read_text().splitlines() if "service tier" in line]
    # Codex read the setting (fast = "priority") but omits it for a model without metadata:
    # the gateway's records, not the configuration, say what the provider was asked for.
    assert warnings and "priority" in warnings[0]
    assert {c.service_tier for c in run.calls} == {None}


def test_rehearsal_refuses_an_unknown_scenario():
    with pytest.raises(ValueError, match="no scenario"):
        rehearse("codex", "denied", "codex")


def test_fixture_layout_is_what_record_real_writes():
    for directory in REAL.glob("*/*"):
        assert (directory / "meta.json").is_file() and (directory / "model_calls.jsonl").is_file(), directory
    assert Path(__file__).with_name("record_real.py").is_file()


def test_mini_with_an_anthropic_model_speaks_messages_to_the_gateway(tmp_path):
    """``anthropic/<model>``: litellm appends ``/v1/messages`` to its api_base itself (with
    ``<route>/v1`` it called ``/v1/v1/messages``, issue 33); the key goes in ANTHROPIC_API_KEY."""
    run = rehearse("mini-swe-agent", "success", tool("mini"), root=tmp_path, path_env=PATH,
                   model="anthropic/th-scripted-1")
    assert run.exit_code == 0 and run.workspace_fixed, run.stderr.read_text()[-2000:]
    assert {c.api for c in run.calls} == {"messages"} and [c.status for c in run.calls] == [200] * 5
    assert {c.model for c in run.calls} == {"th-scripted-1"}  # litellm drops its route prefix
    u = run.result.report.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == gateway_tokens(run.calls)
    (base,) = [a for a in run.argv if a.startswith("model.model_kwargs.api_base=")]
    assert not base.endswith("/v1")
