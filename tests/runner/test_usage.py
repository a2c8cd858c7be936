"""Agent usage parsers against recorded sample outputs (tests/runner/fixtures/agents).

Every expected number is worked out by hand from the fixture, in the comment next to it.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runner.agents.agent_report import AgentReport
from runner.agents.usage import parse_agent_output
from runner.agents.usage_codex import classify_failure
from runner.errors import RunnerError

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
EVENTS = FIXTURES / "agent_events_malformed.jsonl"


def parse(fmt: str, name: str, events: Path | None = None) -> AgentReport:
    return parse_agent_output(fmt, FIXTURES / name, events)


def test_claude_json_object_sums_model_usage_not_main_loop_usage():
    report = parse("claude-json", "claude_json_object.json")
    u = report.usage
    # modelUsage: sonnet 45 + haiku 1210 input; 3120 + 96 output; cache read 182340 + 0; write 21877 + 0
    assert (u.input_tokens, u.output_tokens) == (1255, 3216)
    assert (u.cache_read_tokens, u.cache_write_tokens) == (182340, 21877)
    assert u.cost_usd == pytest.approx(0.22314)
    assert u.steps == 14
    assert u.time_to_first_edit_s is None
    assert u.source == "claude-json"
    assert (report.status, report.infra_error, report.budget_hit) == ("success", False, False)
    assert report.message is None


def test_claude_json_array_takes_last_result_and_zero_cost_with_tokens_is_unpriced():
    report = parse("claude-json", "claude_json_array.json")
    u = report.usage
    # no modelUsage: the result's own usage block
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (8, 101, 9120, 9300)
    assert u.cost_usd is None  # total_cost_usd 0 next to 18529 tokens means "unpriced"
    assert u.steps == 3
    assert report.status == "success"


def test_claude_json_zero_cost_without_tokens_stays_zero(tmp_path):
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                               "num_turns": 0, "total_cost_usd": 0, "usage": {"input_tokens": 0, "output_tokens": 0}}))
    assert parse_agent_output("claude-json", out, None).usage.cost_usd == 0.0


def test_claude_error_max_turns_is_budget_not_infra():
    report = parse("claude-json", "claude_json_max_turns.json")
    assert (report.status, report.budget_hit, report.infra_error) == ("error_max_turns", True, False)
    assert report.message == "Reached maximum number of turns (5)"
    assert report.usage.input_tokens == 19 and report.usage.steps == 6


@pytest.mark.parametrize(
    ("fields", "infra", "budget"),
    [
        ({"subtype": "success", "is_error": True, "result": "API Error: 529 overloaded"}, True, False),
        ({"subtype": "success", "is_error": False, "api_error_status": 503}, True, False),
        ({"subtype": "error_during_execution", "is_error": True}, True, False),
        ({"subtype": "error_max_budget_usd", "is_error": True}, False, True),
        ({"subtype": "error_max_structured_output_retries", "is_error": True}, False, False),
    ],
)
def test_claude_result_subtypes(tmp_path, fields, infra, budget):
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"type": "result", "session_id": "s", **fields}))
    report = parse_agent_output("claude-json", out, None)
    assert (report.status, report.infra_error, report.budget_hit) == (fields["subtype"], infra, budget)
    assert report.usage.input_tokens is None and report.usage.cost_usd is None


def test_claude_plain_text_stdout_is_no_result():
    report = parse("claude-json", "claude_plain_error.txt")
    assert report.status == "no_result" and report.infra_error
    assert "requires --verbose" in report.message
    assert report.usage.model_dump(exclude={"source"}) == dict.fromkeys(
        ["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd",
         "cost_basis", "steps", "time_to_first_edit_s"])


def test_claude_json_empty_or_missing_stdout(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for path in (empty, tmp_path / "missing.json"):
        report = parse_agent_output("claude-json", path, None)
        assert report.status == "no_result" and report.usage.input_tokens is None


def test_claude_json_found_line_by_line_around_noise(tmp_path):
    out = tmp_path / "out.json"
    result = (FIXTURES / "claude_json_max_turns.json").read_text().strip()
    out.write_text("warning: something on stdout\n" + result + "\n")
    report = parse_agent_output("claude-json", out, None)
    assert report.status == "error_max_turns" and report.malformed_lines == 1


def test_claude_stream_json_uses_result_line_and_tolerates_hooks():
    report = parse("claude-stream-json", "claude_stream.jsonl")
    u = report.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (15, 240, 16450, 8650)
    assert u.cost_usd == pytest.approx(0.04892)
    assert u.steps == 4  # num_turns from the result line
    assert u.time_to_first_edit_s is None  # stream lines carry no timestamps
    assert report.status == "success" and report.malformed_lines == 0


def test_claude_stream_json_without_result_dedupes_by_message_id():
    report = parse("claude-stream-json", "claude_stream_truncated.jsonl")
    u = report.usage
    # msg_01AAA appears 3 times with the same usage; counted once: 4+6+5, 0+8000+8450, 8000+450+200.
    # Output tokens stay unknown: real assistant lines carry message_start's snapshot (see
    # test_harness_parsers_real.py), so their sum would undercount.
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (15, None, 16450, 8650)
    assert u.steps == 3  # distinct assistant message ids
    assert u.cost_usd is None
    assert (report.status, report.infra_error) == ("no_result", True)


def test_claude_stream_json_time_to_first_edit_from_stage_start(tmp_path):
    lines = [
        {"type": "system", "subtype": "init", "timestamp": "2026-01-05T10:00:00Z"},
        {"type": "assistant", "timestamp": "2026-01-05T10:00:03Z",
         "message": {"id": "m1", "content": [{"type": "tool_use", "name": "Read", "input": {}}]}},
        {"type": "assistant", "timestamp": "2026-01-05T10:00:07.5Z",
         "message": {"id": "m2", "content": [{"type": "tool_use", "name": "MultiEdit", "input": {}}]}},
        {"type": "assistant", "timestamp": "2026-01-05T10:00:09Z",
         "message": {"id": "m3", "error": "rate_limit", "content": []}, "error": "rate_limit"},
    ]
    out = tmp_path / "stream.jsonl"
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    started = datetime(2026, 1, 5, 9, 59, 58, tzinfo=UTC)
    report = parse_agent_output("claude-stream-json", out, None, stage_started_at=started)
    assert report.usage.time_to_first_edit_s == 9.5  # from the stage start, not the first line
    assert parse_agent_output("claude-stream-json", out, None).usage.time_to_first_edit_s is None
    assert report.usage.steps == 3
    assert report.usage.input_tokens is None  # no message reported usage
    assert report.malformed_lines == 1
    assert "rate_limit" in report.message


def test_codex_exec_takes_last_cumulative_turn_usage():
    report = parse("codex-json", "codex_exec_success.jsonl")
    u = report.usage
    # last turn.completed: input 53120 includes cached 44800 → uncached 8320
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (8320, 44800, 1873)
    assert u.cache_write_tokens is None and u.cost_usd is None
    # completed command_execution ×3 (item_2, item_3 failed-but-completed, item_8), file_change, mcp_tool_call
    assert u.steps == 5
    assert (report.status, report.infra_error) == ("turn.completed", False)  # reroute error item is a warning


def test_codex_turn_failed_rate_limit_is_infra():
    report = parse("codex-json", "codex_turn_failed_rate_limit.jsonl")
    assert (report.status, report.infra_error, report.budget_hit) == ("turn.failed", True, False)
    assert "429" in report.message
    assert report.usage.input_tokens is None and report.usage.output_tokens is None
    assert report.usage.steps == 1


def test_codex_context_window_failure_is_not_infra(tmp_path):
    out = tmp_path / "codex.jsonl"
    out.write_text(
        '{"type":"thread.started","thread_id":"t"}\n{"type":"turn.started"}\n'
        '{"type":"turn.failed","error":{"message":"Your input exceeds the context window of this model."}}\n'
    )
    report = parse_agent_output("codex-json", out, None)
    assert report.status == "turn.failed" and report.infra_error is False


@pytest.mark.parametrize(
    ("message", "infra"),
    [
        ("stream disconnected before completion: error sending request", True),
        ("unexpected status 401 Unauthorized", True),
        ("You've hit your usage limit.", True),
        ("unexpected status 500 Internal Server Error", True),
        ("context_length_exceeded: maximum context length is 272000 tokens", False),
    ],
)
def test_codex_failure_classification(message, infra):
    assert classify_failure(message) is infra


def test_codex_no_terminal_event_is_no_result(tmp_path):
    lines = (FIXTURES / "codex_exec_success.jsonl").read_text().splitlines()[:8]
    out = tmp_path / "codex.jsonl"
    out.write_text("\n".join(lines) + "\n")
    report = parse_agent_output("codex-json", out, None)
    assert (report.status, report.infra_error) == ("no_result", True)
    assert report.usage.input_tokens is None
    assert report.usage.steps == 2


def test_codex_legacy_protocol_reads_total_token_usage():
    report = parse("codex-json", "codex_legacy.jsonl")
    u = report.usage
    # last info.total_token_usage: 21450 input incl. 15360 cached → 6090 uncached
    assert (u.input_tokens, u.cache_read_tokens, u.output_tokens) == (6090, 15360, 702)
    assert u.steps == 2  # exec_command_end + patch_apply_end
    assert u.source == "codex-json-legacy"
    assert report.status == "task_complete" and "legacy" in report.message


def test_codex_legacy_flat_token_count_is_left_unknown(tmp_path):
    out = tmp_path / "legacy.jsonl"
    out.write_text(
        '{"id":"0","msg":{"type":"task_started"}}\n'
        '{"id":"0","msg":{"type":"token_count","input_tokens":900,"cached_input_tokens":0,"output_tokens":40}}\n'
        '{"id":"0","msg":{"type":"task_complete"}}\n'
    )
    report = parse_agent_output("codex-json", out, None)
    assert report.usage.input_tokens is None and report.usage.output_tokens is None
    assert "upgrade codex" in report.message


def test_agent_events_sums_usage_counts_steps_and_malformed_lines():
    report = parse_agent_output("agent-events", FIXTURES / "nonexistent-stdout", EVENTS)
    u = report.usage
    # usage lines: 1000+500 input; 200 output (the -5 line is rejected); 3000 cache read; cost 0.01
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens) == (1500, 200, 3000)
    assert u.cache_write_tokens is None  # no line reported it
    assert u.cost_usd == pytest.approx(0.01)
    assert u.steps == 2
    assert u.time_to_first_edit_s == 4.5
    # not JSON, a JSON array, no type, negative tokens, a truncated last line
    assert report.malformed_lines == 5
    assert report.status is None and report.infra_error is False


def test_agent_events_missing_or_empty_file_reports_nothing(tmp_path):
    empty = tmp_path / "events.jsonl"
    empty.write_text("")
    for events in (empty, tmp_path / "missing.jsonl", None):
        report = parse_agent_output("agent-events", tmp_path / "stdout", events)
        assert report == AgentReport()


def test_merge_structured_stdout_wins_and_events_fill_gaps():
    report = parse("claude-json", "claude_json_object.json", EVENTS)
    u = report.usage
    assert u.input_tokens == 1255 and u.cost_usd == pytest.approx(0.22314) and u.steps == 14  # stdout wins
    assert u.time_to_first_edit_s == 4.5  # only the events file reported it
    assert u.source == "claude-json+agent-events"
    assert report.malformed_lines == 5


def test_merge_codex_gets_cost_from_events_only_when_reported():
    report = parse("codex-json", "codex_exec_success.jsonl", EVENTS)
    u = report.usage
    assert u.input_tokens == 8320 and u.steps == 5
    assert u.cost_usd == pytest.approx(0.01)  # codex reports none; the agent's events file did
    assert u.cache_write_tokens is None


def test_none_format_ignores_stdout_but_reads_events():
    assert parse("none", "claude_json_object.json").usage.input_tokens is None
    assert parse("none", "claude_json_object.json", EVENTS).usage.input_tokens == 1500


def test_unknown_format_is_a_user_error():
    with pytest.raises(RunnerError, match="usage_format"):
        parse("gemini-json", "claude_json_object.json")


def test_garbage_never_raises(tmp_path):
    out = tmp_path / "garbage"
    out.write_bytes(b"\xff\xfe\x00garbage\n{\"type\": 5}\n{\"type\":\"result\",\"num_turns\":-3,\"total_cost_usd\":\"x\"}\n")
    for fmt in ("claude-json", "claude-stream-json", "codex-json", "agent-events"):
        report = parse_agent_output(fmt, out, out)
        assert isinstance(report, AgentReport)
