"""The warehouse tables as Arrow schemas: the contract between ingest and analysis.

Every table is stored as hive-partitioned Parquet (``<table>/run_id=<id>/part-*.parquet``)
and exposed in the DuckDB file as a view of the same name. Every row carries the
``ingest_batch_id`` of the batch that wrote it. Nullable means *unknown*: a null
token count or cost is never 0.

``docs/tables.md`` is generated from this module (``trialhouse tables --markdown``)
and a test keeps it in sync.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import pyarrow as pa


class Column(NamedTuple):
    name: str
    type: str
    """string | int32 | int64 | float64 | bool | timestamp (UTC, microseconds)."""
    nullable: bool = True


_RUN = Column("run_id", "string", False)
_BATCH = Column("ingest_batch_id", "string", False)

ROW_GROUP_ROWS = 122_880
"""Rows per Parquet row group the warehouse writes: DuckDB's own row-group size, since it
scans a file in parallel by row group (one 1M-row group would use one core)."""

DUCKDB_TYPES = {"string": "VARCHAR", "int32": "INTEGER", "int64": "BIGINT",
                "float64": "DOUBLE", "bool": "BOOLEAN", "timestamp": "TIMESTAMPTZ"}


def _spec(doc: str, *columns: Column) -> tuple[str, tuple[Column, ...]]:
    return doc, (_RUN, *columns, _BATCH)


SPEC: dict[str, tuple[str, tuple[Column, ...]]] = {
    "runs": _spec(
        "One row per run (our runner's run, or one foreign source: an Inspect log, a Harbor job, a runs-jsonl file).",
        Column("source_format", "string", False),  # trialhouse | runs-jsonl | inspect | harbor | terminal-bench | swebench | mini-swe-agent
        Column("source_path", "string"),
        Column("manifest_id", "string"),
        Column("manifest_sha256", "string"),
        Column("started_at", "timestamp"),
        Column("finished_at", "timestamp"),
        Column("status", "string"),  # completed | interrupted | running | failed_controls | imported
        Column("engine_version", "string"),
        Column("os", "string"),
        Column("python", "string"),
        Column("git_version", "string"),
        Column("repository", "string"),
        Column("initial_commit", "string"),
        Column("initial_tree", "string"),
        Column("repetitions", "int32"),
        Column("max_attempts", "int32"),
        Column("timeout_seconds", "float64"),
        Column("max_cost_usd", "float64"),
        Column("validation_only", "bool"),
        Column("simulated", "bool"),
        Column("prices_as_of", "string"),  # date of the price table used, when any
        Column("run_cost_usd", "float64"),  # run-level spend reported by a foreign tool; never spread over trials
        Column("details_json", "string"),  # input hashes, variants, anything else as JSON
        Column("integrity", "string"),  # hash chain: intact | unchained (older runs) | tampered or damaged: …
        Column("isolation_backend", "string"),  # bubblewrap | none | null (foreign, or before isolation)
        Column("isolated", "bool"),  # false: agents and graders were not isolated (reports say so)
        Column("network", "bool"),
        Column("executor", "string"),  # where the trials ran: local | ray | null (foreign, or before executors)
        Column("executor_address", "string"),  # ray: the cluster address joined; null: a local instance
        Column("ray_version", "string"),
        Column("control_repeats", "int32"),
        Column("controls_from", "string"),  # run id of the validation-only run whose controls were reused
        Column("grading_semantics", "int32"),  # runner.fingerprint.GRADING_SEMANTICS of the run
        Column("trials_skipped", "int64"),  # trials of unscored cases, not run
    ),
    "configs": _spec(
        "One row per configuration seen in a run: the unit of comparison (never the model alone).",
        Column("config_id", "string", False),
        Column("variant", "string"),
        Column("model", "string"),
        Column("harness", "string"),
        Column("harness_version", "string"),
        Column("reasoning_effort", "string"),
        Column("service_tier", "string"),
        Column("settings_json", "string"),
        Column("agent_kind", "string"),
        Column("simulated", "bool", False),
        Column("source_format", "string", False),
        Column("variant_order", "int32"),  # position among the run's variants (0 = default baseline)
    ),
    "cases": _spec(
        "One row per task (case) in a run, with its labels.",
        Column("case_id", "string", False),
        Column("holdout", "bool", False),
        Column("repository", "string"),
        Column("familiarity", "string"),  # known | unknown | null
        Column("task_class", "string"),
        Column("difficulty", "string"),
        Column("language", "string"),
        Column("subsystem", "string"),
        Column("benchmark", "string"),
        Column("initial_commit", "string"),
        Column("labels_json", "string"),
        Column("validated", "bool"),  # controls passed (null when not validated)
        Column("fingerprint", "string"),  # evaluator fingerprint: (case_id, fingerprint) is the task version
        Column("scored", "bool"),  # false: failed or flaky controls, left out of analyses by default
        Column("unscored_reason", "string"),
    ),
    "run_status": _spec(
        "One row per run an operator invalidated (`trialhouse runs invalidate`): kept, but left "
        "out of every other table's view (see `excluded_runs`). Never written by ingest.",
        Column("status", "string", False),  # invalidated
        Column("reason", "string", False),
        Column("set_at", "timestamp", False),
    ),
    "criteria": _spec(
        "One row per criterion of a case in a run: its layer, kind and severity.",
        Column("case_id", "string", False),
        Column("criterion_id", "string", False),
        Column("layer", "string", False),  # target | regression | repository
        Column("kind", "string", False),  # command | judge
        Column("severity", "string"),  # blocker | major | minor (null: runs before severities)
        Column("description", "string"),
        Column("case_fingerprint", "string"),
    ),
    "skipped_trials": _spec(
        "One row per trial not run because its case was not scored (failed or flaky controls).",
        Column("trial_id", "string", False),
        Column("case_id", "string", False),
        Column("variant", "string"),
        Column("config_id", "string"),
        Column("repetition", "int32"),
        Column("reason", "string"),
        Column("case_fingerprint", "string"),
    ),
    "trials": _spec(
        "One row per trial: a (case, configuration, repetition) with its outcome, cost, tokens and timing.",
        Column("trial_id", "string", False),
        Column("source_format", "string", False),
        Column("source_key", "string"),  # stable id in the source (dedupe key)
        Column("config_id", "string", False),
        Column("variant", "string"),
        Column("model", "string"),
        Column("harness", "string"),
        Column("harness_version", "string"),
        Column("case_id", "string", False),
        Column("repetition", "int32", False),
        Column("outcome", "string"),  # one of contract.envelope.OUTCOMES; null = incomplete (no finish event)
        Column("complete", "bool", False),
        Column("reason", "string"),
        Column("attempts", "int32"),
        Column("started_at", "timestamp"),
        Column("finished_at", "timestamp"),
        Column("duration_s", "float64"),
        Column("setup_s", "float64"),
        Column("agent_s", "float64"),
        Column("verification_s", "float64"),
        Column("time_to_first_edit_s", "float64"),
        Column("input_tokens", "int64"),
        Column("output_tokens", "int64"),
        Column("cache_read_tokens", "int64"),
        Column("cache_write_tokens", "int64"),
        Column("steps", "int64"),
        Column("cost_usd", "float64"),
        Column("cost_source", "string"),  # reported | priced | null (unknown)
        Column("cost_budget_status", "string"),
        Column("flags", "int32"),
        Column("simulated", "bool", False),
        Column("failure_mode", "string"),  # source-provided failure label, if any
        Column("labels_json", "string"),  # trial-level labels (limit_hit, retries, error message, …)
        Column("case_fingerprint", "string"),  # the task version graded (our runs; foreign: what the source offers)
        Column("scored", "bool"),  # false: run with --score-unvalidated on a case that failed its controls
        Column("redactions", "int64"),  # secrets and credential shapes redacted from this trial's evidence
        Column("secrets_leaked", "int64"),  # of those, the run's own secret values the agent wrote out
    ),
    "attempts": _spec(
        "One row per attempt inside a trial (foreign formats: attempt 1 only).",
        Column("trial_id", "string", False),
        Column("attempt", "int32", False),
        Column("outcome", "string"),
        Column("findings_json", "string"),
        Column("started_at", "timestamp"),
        Column("finished_at", "timestamp"),
    ),
    "stages": _spec(
        "One row per agent stage invocation (build/qa/review) with usage and evidence.",
        Column("trial_id", "string", False),
        Column("attempt", "int32", False),
        Column("stage", "string", False),
        Column("exit_code", "int32"),
        Column("signal", "int32"),
        Column("timed_out", "bool"),
        Column("could_not_start", "bool"),
        Column("duration_s", "float64"),
        Column("input_tokens", "int64"),
        Column("output_tokens", "int64"),
        Column("cache_read_tokens", "int64"),
        Column("cache_write_tokens", "int64"),
        Column("cost_usd", "float64"),
        Column("cost_source", "string"),
        Column("steps", "int64"),
        Column("time_to_first_edit_s", "float64"),
        Column("usage_source", "string"),
        Column("verdict_status", "string"),
        Column("checkpoint_sha", "string"),
        Column("started_at", "timestamp"),
        Column("finished_at", "timestamp"),
    ),
    "gradings": _spec(
        "One row per deterministic criterion evaluation (trials and validation controls).",
        Column("trial_id", "string"),  # null for validation controls
        Column("case_id", "string"),
        Column("attempt", "int32"),
        Column("final", "bool"),
        Column("control", "string"),  # negative | positive | null (trial grading)
        Column("criterion_id", "string", False),
        Column("layer", "string"),
        Column("exit_code", "int32"),
        Column("signal", "int32"),
        Column("timed_out", "bool"),
        Column("verdict", "string", False),
        Column("baseline", "string"),
        Column("duration_s", "float64"),
        Column("ts", "timestamp"),
    ),
    "judgments": _spec(
        "Supplementary model judgments and human/judge annotations (who said it is kept).",
        Column("trial_id", "string", False),
        Column("criterion_id", "string"),
        Column("kind", "string", False),  # judge | failure_category | review_decision
        Column("verdict", "string"),  # passed/failed/inconclusive, accept/reject, or a category
        Column("category", "string"),
        Column("note", "string"),
        Column("annotator", "string"),
        Column("ts", "timestamp"),
        Column("attempt", "int32"),  # judge: the attempt judged
        Column("judge_host", "string"),  # judge: claude-code | codex | command | builtin
        Column("judge_provider", "string"),
        Column("judge_effort", "string"),
        Column("rubric_sha256", "string"),  # judge: the rubric as snapshotted by the run
        Column("error", "string"),  # judge: why the answer was unusable (then inconclusive)
        Column("rubric", "string"),  # judge: the rubric path (relative to the manifest)
    ),
    "judge_calibrations": _spec(
        "One row per `calibrate-judge` run: the judge (host, provider, model, effort) and rubric hash "
        "it holds for, and its agreement with human labels. A change of any of them makes it stale.",
        Column("calibration_id", "string", False),
        Column("rubric", "string", False),
        Column("rubric_sha256", "string", False),
        Column("dataset_sha256", "string", False),
        Column("variant", "string"),
        Column("judge_host", "string", False),
        Column("judge_provider", "string"),
        Column("judge_model", "string"),
        Column("judge_effort", "string"),
        Column("examples", "int64", False),
        Column("abstained", "int64", False),
        Column("agreement", "float64"),  # raw agreement over the examples the judge answered
        Column("kappa", "float64"),  # Cohen's kappa (statsmodels), answered examples
        Column("kappa_low", "float64"),  # 95% interval (asymptotic standard error)
        Column("kappa_high", "float64"),
        Column("abstention_rate", "float64"),
        Column("confusion_json", "string", False),  # {human: {judge: n}}, judge incl. inconclusive
        Column("per_label_json", "string", False),  # {label: {precision, recall, support}}
        Column("calibrated_at", "timestamp", False),
    ),
    "judge_calibration_items": _spec(
        "The examples of a calibration: the human label and what the judge said (disagreements listed in reports).",
        Column("calibration_id", "string", False),
        Column("example_id", "string", False),
        Column("human_label", "string", False),
        Column("judge_verdict", "string", False),  # pass | fail | inconclusive
        Column("judge_reasons", "string"),
        Column("error", "string"),
        Column("rationale", "string"),  # the human's
    ),
    "reviews": _spec(
        "Human review decisions (`trialhouse review import`): who, accept/reject, the reason code when the "
        "decision disagrees with the grader, minutes spent, the anchored grid and a failure category.",
        Column("trial_id", "string", False),
        Column("trial_run_id", "string", False),  # the run the reviewed trial belongs to
        Column("reviewer", "string", False),
        Column("decision", "string", False),  # accept | reject
        Column("grader_verdict", "string"),  # accept (outcome accepted) | reject, at import
        Column("reason_code", "string"),  # required when decision != grader_verdict
        Column("minutes", "float64"),
        Column("grid_json", "string"),  # {item: choice} from the review rubric
        Column("grid_rubric", "string"),  # review rubric id@version
        Column("failure_category", "string"),
        Column("note", "string"),
        Column("reviewed_at", "timestamp"),
        Column("source_line", "int64"),
    ),
    "flags": _spec(
        "Patch inspection flags (for review, not failure).",
        Column("trial_id", "string", False),
        Column("kind", "string", False),
        Column("path", "string"),
        Column("detail", "string"),
    ),
    "events": _spec(
        "Every raw event line, typed envelope plus the full JSON payload.",
        Column("seq", "int64", False),
        Column("event", "string", False),
        Column("schema_version", "int32", False),
        Column("trial_id", "string"),
        Column("ts", "timestamp"),
        Column("source_file", "string"),
        Column("line", "int64"),
        Column("payload_json", "string", False),
    ),
    "quarantine": _spec(
        "Lines or records that could not be ingested, with the reason. Nothing is dropped silently.",
        Column("source_file", "string", False),
        Column("line", "int64"),
        Column("reason", "string", False),
        Column("raw_text", "string"),
    ),
    "ingest_batches": _spec(
        "One row per ingest of one source: files with their sha256, rows per table, schema version.",
        Column("source_format", "string", False),
        Column("source_files_json", "string", False),  # [{path, sha256, bytes}]
        Column("rows_json", "string", False),  # {table: rows}
        Column("schema_version", "int32"),
        Column("ingested_at", "timestamp", False),
        Column("trialhouse_version", "string"),
    ),
}


DERIVED: dict[str, tuple[str, tuple[Column, ...]]] = {
    "task_rollup": _spec(
        "Derived, not ingested: one row per (run, configuration, case) with its trial counts and "
        "known cost, rebuilt from the run's `trials` whenever they are written (see "
        "`warehouse/rollup.py`). Task-level analyses read it instead of grouping every trial.",
        Column("config_id", "string", False),
        Column("case_id", "string", False),
        Column("trials", "int64", False),  # all trials, incomplete ones included
        Column("complete", "int64", False),  # trials with a finish (complete = true)
        Column("valid", "int64", False),  # complete and outcome not infra_error/invalid
        Column("solved", "int64", False),  # complete and outcome = accepted
        Column("infra", "int64", False),  # complete and outcome = infra_error
        Column("invalid", "int64", False),  # complete and outcome = invalid
        Column("cost_usd", "float64"),  # exact sum (fsum) of the known costs of complete trials; null when none
        Column("cost_known", "int64", False),  # complete trials whose cost is known
    ),
    "config_rollup": _spec(
        "Derived, not ingested: one row per (run, configuration) with the medians and quantiles "
        "of its complete trials, rebuilt with `task_rollup` (see `warehouse/rollup.py`). "
        "`summarize` reads it when its trials are exactly each configuration's trials of one "
        "run; any other selection scans the trials.",
        Column("config_id", "string", False),
        Column("complete", "int64", False),  # complete trials
        Column("valid", "int64", False),  # complete and outcome not infra_error/invalid
        Column("med_steps", "float64"),  # median steps of valid trials
        Column("med_tokens", "float64"),  # median input + output tokens of valid trials
        Column("cost_p50", "float64"),  # quantile_cont of the known costs; null when none
        Column("cost_p90", "float64"),
        Column("cost_p95", "float64"),
        Column("latency_p50", "float64"),  # quantile_cont of duration_s (wall seconds)
        Column("latency_p90", "float64"),
        Column("latency_p95", "float64"),
    ),
}
"""Tables computed from other tables when they are written (never by an importer)."""


def columns(name: str) -> tuple[Column, ...]:
    """The columns of a table, without importing pyarrow (views, docs, SQL)."""
    return SPEC[name][1] if name in SPEC else DERIVED[name][1]


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    return {"string": pa.string(), "int32": pa.int32(), "int64": pa.int64(),
            "float64": pa.float64(), "bool": pa.bool_(),
            "timestamp": pa.timestamp("us", tz="UTC")}[kind]


def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema of a table or derived table (its doc in the metadata)."""
    import pyarrow as pa

    doc, cols = SPEC[name] if name in SPEC else DERIVED[name]
    return pa.schema([pa.field(c.name, _arrow_type(c.type), c.nullable) for c in cols],
                     metadata={"doc": doc})


def empty_select(name: str) -> str:
    """A SELECT of no rows with the table's columns and types (a view before any file)."""
    cols = ", ".join(f"CAST(NULL AS {DUCKDB_TYPES[c.type]}) AS {c.name}" for c in columns(name))
    return f"SELECT {cols} WHERE FALSE"


class _ArrowSchemas(Mapping[str, "pa.Schema"]):
    """Table name → ``pa.Schema``, built on first use so readers don't import pyarrow."""

    def __init__(self) -> None:
        self._built: dict[str, pa.Schema] = {}

    def __getitem__(self, name: str) -> pa.Schema:
        if name not in SPEC:
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = arrow_schema(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(SPEC)

    def __len__(self) -> int:
        return len(SPEC)


TABLES: Mapping[str, pa.Schema] = _ArrowSchemas()
"""Table name → Arrow schema (the contract between ingest and analysis)."""


def empty_table(name: str) -> pa.Table:
    return TABLES[name].empty_table()


def table_from_rows(name: str, rows: list[dict]) -> pa.Table:
    """Build a typed Arrow table; missing keys become null, unknown keys are an error."""
    import pyarrow as pa

    schema = TABLES[name]
    names = set(schema.names)
    for i, row in enumerate(rows):
        extra = set(row) - names
        if extra:
            raise KeyError(f"{name} row {i}: unknown columns {sorted(extra)}")
    return pa.Table.from_pylist(rows, schema=schema)


# ---------------------------------------------------------------- trajectories and model calls
# Additive block (issue 17): two tables filled by ``ingest/steps.py`` from the ``step`` and
# ``model_call`` events, and columns added to ``stages``/``trials`` from ``stage_finished``
# and ``trial_finished``. Older Parquet files lack the new columns: the views read them as
# null (``union_by_name``), which is what they are — unknown.

SPEC.update({
    "steps": _spec(
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
    "model_calls": _spec(
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
})

_ADDED_COLUMNS: dict[str, tuple[str, tuple[Column, ...]]] = {
    "stages": _spec(
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
    "trials": _spec(
        "(columns added to trials)",
        Column("cost_basis", "string"),  # basis of cost_usd when reported: reported | computed
        Column("gateway_calls", "int32"),  # model calls through the gateway (null: no gateway)
        Column("gateway_input_tokens", "int64"),
        Column("gateway_output_tokens", "int64"),
        Column("gateway_cache_read_tokens", "int64"),
        Column("gateway_cache_write_tokens", "int64"),
        Column("gateway_model_s", "float64"),
        Column("patch_paths_json", "string"),  # paths changes.patch touches (JSON list; null: not recorded)
    ),
}
for _name, (_doc, _cols) in _ADDED_COLUMNS.items():
    _table_doc, _existing = SPEC[_name]
    SPEC[_name] = (_table_doc, (*_existing[:-1], *_cols[1:-1], _existing[-1]))  # before ingest_batch_id
