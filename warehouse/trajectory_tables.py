"""Trajectories and model calls, an additive block (issue 17; docs/design.md, "The warehouse
additions are additive blocks"): two tables filled by ``ingest/steps.py`` from the ``step``
and ``model_call`` events, and columns added to ``stages``/``trials`` from ``stage_finished``
and ``trial_finished`` (``ADDED_COLUMNS``, appended by ``warehouse.schema`` before
``ingest_batch_id``). Older Parquet files lack the new columns: the views read them as null
(``union_by_name``), which is what they are — unknown."""

from __future__ import annotations

from warehouse.table_spec import Column, TableSpec, table_spec

SPECS = {
    "steps": table_spec(
        "One row per model turn or tool call of a stage's trajectory (harness log, agent-events file or gateway).",
        Column("trial_id", "string", False),
        Column("attempt", "int32", False),
        Column("stage", "string", False),
        Column("step_index", "int32", False),  # order within the stage, from 0
        Column("kind", "string", False),  # model | tool
        Column("source", "string", False),  # claude-stream-json | codex-rollout | codex-json | mini-trajectory | agent-events | gateway | atif
        Column("tool", "string"),  # the harness's tool name (Edit, exec_command, bash …)
        Column("action", "string"),  # read | edit | run | search | other
        Column("paths_json", "string"),  # files read or changed (JSON list, workspace-relative)
        Column("command", "string"),  # the shell command of a command step
        Column("exit_code", "int32"),
        Column("ok", "bool"),  # tool: succeeded (not refused, not failed); model: the call answered
        Column("started_at", "timestamp"),
        Column("ended_at", "timestamp"),
        Column("duration_s", "float64"),  # ended_at - started_at when both are known
        Column("input_tokens", "int64"),  # model turns: uncached input
        Column("output_tokens", "int64"),
        Column("cache_read_tokens", "int64"),
        Column("cache_write_tokens", "int64"),
        Column("call_id", "string"),  # tool call id; model turn: response id (joins model_calls.response_id)
        Column("tokens_from", "string"),  # harness | gateway: whose count the token columns are
    ),
    "model_calls": table_spec(
        "One row per model call through the run's gateway: the provider's own tokens, status and timing.",
        Column("trial_id", "string", False),
        Column("attempt", "int32"),
        Column("stage", "string"),
        Column("call_index", "int32", False),  # order of arrival within the stage's route
        Column("started_at", "timestamp"),  # arrival at the gateway
        Column("mode", "string", False),  # forward | record | replay | scripted
        Column("provider", "string", False),  # anthropic | openai
        Column("api", "string", False),  # messages | responses | chat_completions
        Column("model", "string"),  # asked for
        Column("response_model", "string"),  # what the provider said answered
        Column("service_tier", "string"),  # as sent on the wire
        Column("request_id", "string"),
        Column("response_id", "string"),
        Column("status", "int32"),  # HTTP status returned to the agent; null: never answered
        Column("streamed", "bool"),
        Column("position", "int32"),  # tool results already in the conversation
        Column("side_request", "bool"),  # offered no tools (titles, probes): not a step
        Column("retries", "int32"),  # the agent's earlier tries at this point of the conversation
        Column("stop_reason", "string"),
        Column("tool_calls_json", "string"),  # tools the answer asked for (JSON list)
        Column("input_tokens", "int64"),  # uncached, as the provider reported
        Column("output_tokens", "int64"),
        Column("cache_read_tokens", "int64"),
        Column("cache_write_tokens", "int64"),
        Column("reasoning_tokens", "int64"),
        Column("latency_s", "float64"),
        Column("ttft_s", "float64"),  # time to first output token (streams)
        Column("error_type", "string"),
        Column("error", "string"),
        Column("gateway_error", "string"),  # the gateway's own failure: the trial is infra_error
        Column("usage_note", "string"),  # why tokens are unknown when they are
    ),
    "network_connections": table_spec(
        "One row per connection an agent asked the gateway's proxy for (isolation.network gateway).",
        Column("trial_id", "string", False),
        Column("attempt", "int32"),
        Column("stage", "string"),
        Column("host", "string", False),  # as asked for, lower-cased
        Column("port", "int32", False),
        Column("method", "string", False),  # CONNECT (HTTPS tunnel) or a plain-HTTP method
        Column("allowed", "bool", False),  # on isolation.allow_hosts; refused ones are rows too
        Column("reason", "string"),  # why refused or failed
        Column("bytes_up", "int64"),  # agent → host
        Column("bytes_down", "int64"),
        Column("duration_s", "float64"),
        Column("started_at", "timestamp"),
    ),
}

ADDED_COLUMNS: dict[str, TableSpec] = {
    "stages": table_spec(
        "(columns added to stages)",
        Column("harness_version", "string"),  # the CLI's own version (harness kinds)
        Column("session_id", "string"),  # Claude session / Codex thread id
        Column("cost_basis", "string"),  # basis of cost_usd: reported | computed; null: no cost
        Column("claimed_cost_usd", "float64"),  # the harness's cost claim, whatever its basis
        Column("claimed_cost_basis", "string"),  # reported | reported_unknown_basis (never a cost)
        Column("permission_denials", "int32"),  # tool calls the permission mode refused
        Column("denied_tools_json", "string"),  # their tool names (JSON list)
        Column("context_exhausted", "bool"),
        Column("tokens_from", "string"),  # result | stream | stdout | rollout | trajectory
        Column("trajectory_steps", "int64"),  # step rows of this stage
        Column("gateway_calls", "int32"),  # model calls through the gateway (null: no gateway)
        Column("gateway_failed_calls", "int32"),
        Column("gateway_retries", "int32"),
        Column("gateway_input_tokens", "int64"),  # what the gateway measured (the provider's counts)
        Column("gateway_output_tokens", "int64"),
        Column("gateway_cache_read_tokens", "int64"),
        Column("gateway_cache_write_tokens", "int64"),
        Column("gateway_model_s", "float64"),  # time spent waiting on the model
    ),
    "trials": table_spec(
        "(columns added to trials)",
        Column("cost_basis", "string"),  # basis of cost_usd when reported: reported | computed
        Column("gateway_calls", "int32"),  # model calls through the gateway (null: no gateway)
        Column("gateway_input_tokens", "int64"),
        Column("gateway_output_tokens", "int64"),
        Column("gateway_cache_read_tokens", "int64"),
        Column("gateway_cache_write_tokens", "int64"),
        Column("gateway_model_s", "float64"),
        Column("patch_paths_json", "string"),  # paths changes.patch touches (JSON list; null: not recorded)
        Column("gateway_models_json", "string"),  # models the main-loop calls asked for (JSON list)
        Column("model_substituted", "bool"),  # a main-loop call asked for a model other than the label
    ),
}
