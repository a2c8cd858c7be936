"""Harness parsers on real recordings of Claude Code, Codex CLI and mini-swe-agent.

Every recording was made by the real CLI against the scripted gateway (record_real.py);
the gateway's own ``model_call`` records of the same run are the independent check for
tokens. Each test names the defect of issue 17 it guards against.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from runner.agents.usage import parse_agent_output
from runner.agents.usage_claude import read_claude, timestamp
from runner.agents.usage_codex import find_rollout, read_codex, read_rollout
from runner.agents.usage_mini import read_mini

from .conftest import Recording, params, recordings


def claude(rec: Recording):
    return read_claude(rec.stdout, stream=rec.stream, stderr=rec.stderr, stage_started_at=rec.started)


def codex(rec: Recording):
    return read_codex(rec.stdout, stderr=rec.stderr, sessions_dir=rec.dir, stage_started_at=rec.started)


def mini(rec: Recording):
    return read_mini(rec.dir / "trajectory.json", stderr=rec.stderr, stage_started_at=rec.started)


# ---------------------------------------------------------------- tokens agree with the gateway


@pytest.mark.parametrize(
    ("harness", "read"),
    [("claude-code", claude), ("codex", codex), ("mini-swe-agent", mini)],
)
def test_successful_runs_report_the_tokens_the_gateway_measured(harness, read):
    for rec in recordings(harness, "success"):
        result = read(rec)
        u = result.report.usage
        assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == rec.gateway_tokens(), rec
        # scripted usage per step i: 300+10i uncached, 40+i out, 1000i cached, five steps
        assert rec.gateway_tokens() == (1600, 210, 10000)
        assert result.report.infra_error is False and result.report.budget_hit is False
        assert rec.meta["workspace_fixed"] is True


# ---------------------------------------------------------------- Claude Code


@params("claude-code", "success")
def test_claude_invented_price_is_a_claim_with_unknown_basis(rec):
    """Defect: Claude Code prices a model it does not know at a made-up rate (never 0)."""
    result = claude(rec)
    assert rec.meta["settings"]["model"] == "th-scripted-1"  # no such model: no real price exists
    claimed = json.loads(rec.stdout.read_text().splitlines()[-1])["total_cost_usd"]
    assert claimed > 0
    assert result.claimed_cost_usd == pytest.approx(claimed)
    assert result.cost_basis == "reported_unknown_basis"
    assert result.report.usage.cost_usd is None  # never taken as the trial's reported cost
    # the unchanged runner entry point gives the same answer
    assert parse_agent_output("claude-stream-json", rec.stdout, None).usage.cost_usd is None


@params("claude-code", "success-json")
def test_claude_list_price_of_a_known_model_is_reported(rec):
    result = claude(rec)
    # claude-sonnet-4-5 list prices: $3/M input, $0.30/M cache read, $15/M output
    expected = (1600 * 3 + 10000 * 0.30 + 210 * 15) / 1e6
    assert result.report.usage.cost_usd == pytest.approx(expected)
    assert result.cost_basis == "reported"


@params("claude-code", "killed")
def test_claude_stream_without_result_leaves_output_tokens_unknown(rec):
    """Defect: summing assistant lines gave output_tokens = 1 per message (message_start)."""
    snapshots = [line["message"]["usage"]["output_tokens"] for line in rec.lines() if line["type"] == "assistant"]
    assert snapshots and set(snapshots) == {1}  # what the real lines carry
    result = claude(rec)
    u = result.report.usage
    gateway_in, gateway_out, gateway_cached = rec.gateway_tokens()
    assert gateway_out == 40  # the final count the provider sent in message_delta
    assert u.output_tokens is None
    assert (u.input_tokens, u.cache_read_tokens) == (gateway_in, gateway_cached)
    assert result.report.status == "no_result" and result.report.infra_error
    assert any("output tokens unknown" in note for note in result.notes)


@params("claude-code", "success")
def test_claude_time_to_first_edit_from_stage_start(rec):
    """Defect: measured from the first assistant line, and null without line timestamps."""
    lines = rec.lines()
    edit_id = next(block["id"] for line in lines if line["type"] == "assistant"
                   for block in line["message"]["content"] if block.get("type") == "tool_use"
                   and block["name"] == "Edit")
    done = next(timestamp(line["timestamp"]) for line in lines if line["type"] == "user"
                and line["message"]["content"][0].get("tool_use_id") == edit_id)
    result = claude(rec)
    assert result.report.usage.time_to_first_edit_s == pytest.approx((done - rec.started).total_seconds())
    assert result.first_edit_at == done
    first_line_ts = [timestamp(line.get("timestamp")) for line in lines if line.get("timestamp")][0]
    assert first_line_ts > rec.started  # so "from the first line" would be a different number


def test_claude_2_1_197_assistant_lines_have_no_timestamps_yet_edit_time_is_known():
    (rec,) = [r for r in recordings("claude-code", "success") if r.version == "2.1.197"]
    assert not any("timestamp" in line for line in rec.lines() if line["type"] == "assistant")
    assert claude(rec).report.usage.time_to_first_edit_s is not None


@params("claude-code", "denied")
def test_claude_permission_denials_are_recorded(rec):
    """Defect: Bash refused under acceptEdits while the run reports success."""
    result = claude(rec)
    assert result.report.status == "success" and not result.report.infra_error
    assert [d.tool_name for d in result.permission_denials] == ["Bash", "Bash"]
    refused = {d.tool_use_id for d in result.permission_denials}
    asked = {c["request_id"].replace("req_scripted_", "toolu_scripted_") + "_0"
             for c in rec.calls() if c["tool_calls"] == ["Bash"]}
    assert refused == asked


@params("claude-code", "success")
def test_claude_session_id_and_cli_version(rec):
    init = rec.lines()[0]
    result = claude(rec)
    assert result.session_id == init["session_id"]
    assert result.cli_version == rec.version == init["claude_code_version"]


@params("claude-code", "context-length")
def test_claude_context_exhaustion_is_the_agents_failure(rec):
    """Defect: Claude's HTTP 400 "prompt is too long" was infra, Codex's the agent's."""
    result = claude(rec)
    assert result.context_exhausted is True
    assert result.report.infra_error is False
    assert any(c["status"] == 400 for c in rec.calls())


@params("claude-code", "http-500")
def test_claude_http_500_is_infra_and_retries_are_counted(rec):
    result = claude(rec)
    assert result.report.infra_error is True and "500" in result.report.message
    calls = rec.calls()
    assert [c["status"] for c in calls] == [500, 500]
    assert [c["retries"] for c in calls] == [0, 1]  # CLAUDE_CODE_MAX_RETRIES=1


@params("claude-code", "turn-limit")
def test_claude_turn_limit_is_a_budget_stop(rec):
    result = claude(rec)
    assert (result.report.status, result.report.budget_hit, result.report.infra_error) == (
        "error_max_turns", True, False)


# ---------------------------------------------------------------- Codex


@params("codex", "bad-flag")
def test_codex_removed_flag_surfaces_the_stderr_cause(rec):
    """Defect: only "no turn.completed or turn.failed event"; the cause was on stderr."""
    assert rec.stdout.read_text() == "" and rec.meta["exit_code"] == 2
    result = codex(rec)
    assert "unexpected argument '--full-auto'" in result.report.message
    assert "--full-auto" in result.stderr_excerpt
    assert result.report.infra_error is True


@params("codex", "fail-after-work")
def test_codex_failed_run_reads_tokens_from_the_rollout(rec):
    """Defect: a run that failed after doing work reported tokens as unknown."""
    assert not any(line["type"] == "turn.completed" for line in rec.lines())
    result = codex(rec)
    u = result.report.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == rec.gateway_tokens() == (930, 123, 3000)
    assert result.tokens_from == "rollout"
    assert result.report.infra_error is True and "internal_server_error" in result.report.message


@params("codex", "context-length")
def test_codex_context_exhaustion_is_the_agents_failure_and_ignores_the_zeroed_total(rec):
    result = codex(rec)
    assert result.context_exhausted is True and result.report.infra_error is False
    # the rollout's last token_count is a zeroed marker; the real spend is the first call
    assert (result.report.usage.input_tokens, result.report.usage.output_tokens) == (300, 40)


@params("codex", "success")
def test_codex_thread_id_version_model_and_first_edit(rec):
    thread = rec.lines()[0]["thread_id"]
    result = codex(rec)
    assert result.session_id == thread
    assert result.cli_version == rec.version
    assert result.model == rec.meta["settings"]["model"]
    rollout = read_rollout(find_rollout(rec.dir, thread))
    change = next(i for i in rollout.items if i["type"] == "FileChange")
    assert result.report.usage.time_to_first_edit_s == pytest.approx((change["_ts"] - rec.started).total_seconds())


@params("codex", "http-500")
def test_codex_http_500_is_infra_and_the_gateway_keeps_the_real_status(rec):
    result = codex(rec)
    assert result.report.infra_error is True
    assert "high demand" in result.report.message  # what Codex says about a 500
    assert {c["status"] for c in rec.calls()} == {500}  # what really happened


# ---------------------------------------------------------------- mini-swe-agent


@params("mini-swe-agent", "success")
def test_mini_zero_cost_is_unknown_not_free(rec):
    data = json.loads((rec.dir / "trajectory.json").read_text())
    assert data["info"]["model_stats"] == {"instance_cost": 0.0, "api_calls": 5}
    result = mini(rec)
    assert result.report.usage.cost_usd is None and result.cost_basis == "reported_unknown_basis"
    assert result.report.usage.steps == 5
    assert result.cli_version == rec.version and result.report.status == "Submitted"
    edit_obs = [m for m in data["messages"] if m["role"] == "tool"][2]  # read, check, then the sed edit
    expected = datetime.fromtimestamp(edit_obs["extra"]["timestamp"], rec.started.tzinfo)
    assert result.first_edit_at == expected


@params("mini-swe-agent", "turn-limit")
def test_mini_step_limit_is_a_budget_stop(rec):
    result = mini(rec)
    assert (result.report.status, result.report.budget_hit, result.report.infra_error) == (
        "LimitsExceeded", True, False)
    assert result.report.usage.steps == 2


@params("mini-swe-agent", "context-length")
def test_mini_context_exhaustion_is_the_agents_failure(rec):
    result = mini(rec)
    assert result.context_exhausted is True and result.report.infra_error is False


@params("mini-swe-agent", "unpriced-budget")
def test_mini_unpriced_model_with_a_budget_is_infra_with_the_fix_never_context_exhaustion(rec):
    # litellm's message quotes ".../model_prices_and_context_window.json": text matching read it as context
    trajectory = json.loads((rec.dir / "trajectory.json").read_text())
    (exit_message,) = [m for m in trajectory["messages"] if m["role"] == "exit"]
    assert "context_window" in exit_message["content"]
    result = mini(rec)
    assert (result.context_exhausted, result.report.infra_error, result.report.status) == (False, True, "RuntimeError")
    assert "remove max_budget_usd or use a model litellm prices" in result.report.message


def test_mini_classification_reads_the_exception_class_not_the_message():
    from runner.agents.usage_mini import _raised

    trace = ('Traceback (most recent call last):\n  File "/x/litellm_model.py", line 110, in _query\n'
             '    raise e\nlitellm.exceptions.ContextWindowExceededError: litellm.ContextWindowExceededError: '
             'too long\n')
    assert _raised([{"role": "exit", "extra": {"traceback": trace}}]) == ("ContextWindowExceededError", {"_query"})
    assert _raised([{"role": "exit", "content": "context window", "extra": {}}]) == (None, set())


@params("mini-swe-agent", "http-500")
def test_mini_api_error_is_infra_with_tokens_unknown(rec):
    result = mini(rec)
    assert result.report.infra_error is True and "InternalServerError" in result.report.status
    assert result.report.usage.input_tokens is None


# ---------------------------------------------------------------- one rule for all


@pytest.mark.parametrize(
    ("harness", "read"),
    [("claude-code", claude), ("codex", codex), ("mini-swe-agent", mini)],
)
def test_context_exhaustion_is_classified_the_same_for_every_harness(harness, read):
    for rec in recordings(harness, "context-length"):
        result = read(rec)
        assert (result.context_exhausted, result.report.infra_error) == (True, False), rec


def test_recorded_gateway_records_are_valid_model_calls():
    from runner.gateway import CallRecord

    from .conftest import REAL

    files = list(REAL.glob("*/*/model_calls.jsonl"))
    assert files
    for path in files:
        for line in path.read_text().splitlines():
            CallRecord.model_validate_json(line)  # re-record when the record's shape changes


def test_a_changed_output_format_gives_nulls_and_a_note_never_an_error(tmp_path):
    """A newer CLI version: unknown fields and events ignored, missing fields null, a note."""
    (rec,) = [r for r in recordings("claude-code", "success") if r.version == "2.1.332"]
    lines = rec.lines()
    result = lines[-1]
    for gone in ("modelUsage", "usage"):
        result.pop(gone)
    result["brand_new_field"] = {"x": 1}
    changed = tmp_path / "claude.jsonl"
    changed.write_text("\n".join(json.dumps(x) for x in [*lines[:-1], {"type": "telemetry_v9"}, result]) + "\n")
    parsed = read_claude(changed, stream=True, stage_started_at=rec.started)
    assert parsed.report.status == "success" and parsed.report.malformed_lines == 0
    assert parsed.report.usage.input_tokens == 1600  # fell back to the assistant lines
    assert parsed.report.usage.output_tokens is None
    assert any("no modelUsage or usage" in n for n in parsed.notes)

    (crec,) = recordings("codex", "success")
    extra = [{"type": "turn.paused", "why": "new"},
             {"type": "item.completed", "item": {"id": "item_99", "type": "hologram"}}]
    changed = tmp_path / "codex.jsonl"
    changed.write_text("\n".join(json.dumps(x) for x in [*crec.lines()[:-1], *extra, crec.lines()[-1]]) + "\n")
    parsed = read_codex(changed, sessions_dir=crec.dir)
    assert parsed.report.status == "turn.completed" and parsed.report.usage.input_tokens == 1600
    assert any("turn.paused" in n for n in parsed.notes)

    (mrec,) = recordings("mini-swe-agent", "success")
    doc = json.loads((mrec.dir / "trajectory.json").read_text())
    doc["trajectory_format"] = "mini-swe-agent-3"
    changed = tmp_path / "traj.json"
    changed.write_text(json.dumps(doc))
    parsed = read_mini(changed)
    assert parsed.report.usage.input_tokens == 1600 and any("mini-swe-agent-3" in n for n in parsed.notes)
