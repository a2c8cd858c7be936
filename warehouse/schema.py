"""The warehouse tables as Arrow schemas: the contract between ingest and analysis.

Every table is stored as hive-partitioned Parquet (``<table>/run_id=<id>/part-*.parquet``)
and exposed in the DuckDB file as a view of the same name. Every row carries the
``ingest_batch_id`` of the batch that wrote it. Nullable means *unknown*: a null
token count or cost is never 0.

``docs/tables.md`` is generated from this module (``trialhouse tables --markdown``)
and a test keeps it in sync.
"""

from __future__ import annotations

import pyarrow as pa

# Columns shared by every table (run_id is the hive partition key).
_BATCH = pa.field("ingest_batch_id", pa.string(), nullable=False)
_RUN = pa.field("run_id", pa.string(), nullable=False)

_TS = pa.timestamp("us", tz="UTC")


def _schema(doc: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema([_RUN, *fields, _BATCH], metadata={"doc": doc})


TABLES: dict[str, pa.Schema] = {
    "runs": _schema(
        "One row per run (our runner's run, or one foreign source: an Inspect log, a Harbor job, a runs-jsonl file).",
        pa.field("source_format", pa.string(), False),  # trialhouse | runs-jsonl | inspect | harbor | terminal-bench | swebench
        pa.field("source_path", pa.string()),
        pa.field("manifest_id", pa.string()),
        pa.field("manifest_sha256", pa.string()),
        pa.field("started_at", _TS),
        pa.field("finished_at", _TS),
        pa.field("status", pa.string()),  # completed | interrupted | running | failed_controls | imported
        pa.field("engine_version", pa.string()),
        pa.field("os", pa.string()),
        pa.field("python", pa.string()),
        pa.field("git_version", pa.string()),
        pa.field("repository", pa.string()),
        pa.field("initial_commit", pa.string()),
        pa.field("initial_tree", pa.string()),
        pa.field("repetitions", pa.int32()),
        pa.field("max_attempts", pa.int32()),
        pa.field("timeout_seconds", pa.float64()),
        pa.field("max_cost_usd", pa.float64()),
        pa.field("validation_only", pa.bool_()),
        pa.field("simulated", pa.bool_()),
        pa.field("prices_as_of", pa.string()),  # date of the price table used, when any
        pa.field("run_cost_usd", pa.float64()),  # run-level spend reported by a foreign tool; never spread over trials
        pa.field("details_json", pa.string()),  # input hashes, variants, anything else as JSON
    ),
    "configs": _schema(
        "One row per configuration seen in a run: the unit of comparison (never the model alone).",
        pa.field("config_id", pa.string(), False),
        pa.field("variant", pa.string()),
        pa.field("model", pa.string()),
        pa.field("harness", pa.string()),
        pa.field("harness_version", pa.string()),
        pa.field("reasoning_effort", pa.string()),
        pa.field("service_tier", pa.string()),
        pa.field("settings_json", pa.string()),
        pa.field("agent_kind", pa.string()),
        pa.field("simulated", pa.bool_(), False),
        pa.field("source_format", pa.string(), False),
        pa.field("variant_order", pa.int32()),  # position among the run's variants (0 = default baseline)
    ),
    "cases": _schema(
        "One row per task (case) in a run, with its labels.",
        pa.field("case_id", pa.string(), False),
        pa.field("holdout", pa.bool_(), False),
        pa.field("repository", pa.string()),
        pa.field("familiarity", pa.string()),  # known | unknown | null
        pa.field("task_class", pa.string()),
        pa.field("difficulty", pa.string()),
        pa.field("language", pa.string()),
        pa.field("subsystem", pa.string()),
        pa.field("benchmark", pa.string()),
        pa.field("initial_commit", pa.string()),
        pa.field("labels_json", pa.string()),
        pa.field("validated", pa.bool_()),  # controls passed (null when not validated)
    ),
    "trials": _schema(
        "One row per trial: a (case, configuration, repetition) with its outcome, cost, tokens and timing.",
        pa.field("trial_id", pa.string(), False),
        pa.field("source_format", pa.string(), False),
        pa.field("source_key", pa.string()),  # stable id in the source (dedupe key)
        pa.field("config_id", pa.string(), False),
        pa.field("variant", pa.string()),
        pa.field("model", pa.string()),
        pa.field("harness", pa.string()),
        pa.field("harness_version", pa.string()),
        pa.field("case_id", pa.string(), False),
        pa.field("repetition", pa.int32(), False),
        pa.field("outcome", pa.string()),  # one of runner.events.OUTCOMES; null = incomplete (no finish event)
        pa.field("complete", pa.bool_(), False),
        pa.field("reason", pa.string()),
        pa.field("attempts", pa.int32()),
        pa.field("started_at", _TS),
        pa.field("finished_at", _TS),
        pa.field("duration_s", pa.float64()),
        pa.field("setup_s", pa.float64()),
        pa.field("agent_s", pa.float64()),
        pa.field("verification_s", pa.float64()),
        pa.field("time_to_first_edit_s", pa.float64()),
        pa.field("input_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("cache_read_tokens", pa.int64()),
        pa.field("cache_write_tokens", pa.int64()),
        pa.field("steps", pa.int64()),
        pa.field("cost_usd", pa.float64()),
        pa.field("cost_source", pa.string()),  # reported | priced | null (unknown)
        pa.field("cost_budget_status", pa.string()),
        pa.field("flags", pa.int32()),
        pa.field("simulated", pa.bool_(), False),
        pa.field("failure_mode", pa.string()),  # source-provided failure label, if any
        pa.field("labels_json", pa.string()),  # trial-level labels (limit_hit, retries, error message, …)
    ),
    "attempts": _schema(
        "One row per attempt inside a trial (foreign formats: attempt 1 only).",
        pa.field("trial_id", pa.string(), False),
        pa.field("attempt", pa.int32(), False),
        pa.field("outcome", pa.string()),
        pa.field("findings_json", pa.string()),
        pa.field("started_at", _TS),
        pa.field("finished_at", _TS),
    ),
    "stages": _schema(
        "One row per agent stage invocation (build/qa/review) with usage and evidence.",
        pa.field("trial_id", pa.string(), False),
        pa.field("attempt", pa.int32(), False),
        pa.field("stage", pa.string(), False),
        pa.field("exit_code", pa.int32()),
        pa.field("signal", pa.int32()),
        pa.field("timed_out", pa.bool_()),
        pa.field("could_not_start", pa.bool_()),
        pa.field("duration_s", pa.float64()),
        pa.field("input_tokens", pa.int64()),
        pa.field("output_tokens", pa.int64()),
        pa.field("cache_read_tokens", pa.int64()),
        pa.field("cache_write_tokens", pa.int64()),
        pa.field("cost_usd", pa.float64()),
        pa.field("cost_source", pa.string()),
        pa.field("steps", pa.int64()),
        pa.field("time_to_first_edit_s", pa.float64()),
        pa.field("usage_source", pa.string()),
        pa.field("verdict_status", pa.string()),
        pa.field("checkpoint_sha", pa.string()),
        pa.field("started_at", _TS),
        pa.field("finished_at", _TS),
    ),
    "gradings": _schema(
        "One row per deterministic criterion evaluation (trials and validation controls).",
        pa.field("trial_id", pa.string()),  # null for validation controls
        pa.field("case_id", pa.string()),
        pa.field("attempt", pa.int32()),
        pa.field("final", pa.bool_()),
        pa.field("control", pa.string()),  # negative | positive | null (trial grading)
        pa.field("criterion_id", pa.string(), False),
        pa.field("layer", pa.string()),
        pa.field("exit_code", pa.int32()),
        pa.field("signal", pa.int32()),
        pa.field("timed_out", pa.bool_()),
        pa.field("verdict", pa.string(), False),
        pa.field("baseline", pa.string()),
        pa.field("duration_s", pa.float64()),
        pa.field("ts", _TS),
    ),
    "judgments": _schema(
        "Supplementary model judgments and human/judge annotations (who said it is kept).",
        pa.field("trial_id", pa.string(), False),
        pa.field("criterion_id", pa.string()),
        pa.field("kind", pa.string(), False),  # judge | failure_category | review_decision
        pa.field("verdict", pa.string()),  # passed/failed/inconclusive, accept/reject, or a category
        pa.field("category", pa.string()),
        pa.field("note", pa.string()),
        pa.field("annotator", pa.string()),
        pa.field("ts", _TS),
    ),
    "flags": _schema(
        "Patch inspection flags (for review, not failure).",
        pa.field("trial_id", pa.string(), False),
        pa.field("kind", pa.string(), False),
        pa.field("path", pa.string()),
        pa.field("detail", pa.string()),
    ),
    "events": _schema(
        "Every raw event line, typed envelope plus the full JSON payload.",
        pa.field("seq", pa.int64(), False),
        pa.field("event", pa.string(), False),
        pa.field("schema_version", pa.int32(), False),
        pa.field("trial_id", pa.string()),
        pa.field("ts", _TS),
        pa.field("source_file", pa.string()),
        pa.field("line", pa.int64()),
        pa.field("payload_json", pa.string(), False),
    ),
    "quarantine": _schema(
        "Lines or records that could not be ingested, with the reason. Nothing is dropped silently.",
        pa.field("source_file", pa.string(), False),
        pa.field("line", pa.int64()),
        pa.field("reason", pa.string(), False),
        pa.field("raw_text", pa.string()),
    ),
    "ingest_batches": _schema(
        "One row per ingest of one source: files with their sha256, rows per table, schema version.",
        pa.field("source_format", pa.string(), False),
        pa.field("source_files_json", pa.string(), False),  # [{path, sha256, bytes}]
        pa.field("rows_json", pa.string(), False),  # {table: rows}
        pa.field("schema_version", pa.int32()),
        pa.field("ingested_at", _TS, False),
        pa.field("trialhouse_version", pa.string()),
    ),
}


def empty_table(name: str) -> pa.Table:
    return TABLES[name].empty_table()


def table_from_rows(name: str, rows: list[dict]) -> pa.Table:
    """Build a typed Arrow table; missing keys become null, unknown keys are an error."""
    schema = TABLES[name]
    names = set(schema.names)
    for i, row in enumerate(rows):
        extra = set(row) - names
        if extra:
            raise KeyError(f"{name} row {i}: unknown columns {sorted(extra)}")
    return pa.Table.from_pylist(rows, schema=schema)
