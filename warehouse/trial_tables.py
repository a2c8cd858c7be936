"""The per-trial tables: ``trials``, ``attempts``, ``stages``, ``gradings`` (assembled in
``warehouse.schema``; docs/tables.md)."""

from __future__ import annotations

from warehouse.table_spec import Column, table_spec

SPECS = {
    "trials": table_spec(
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
        Column("regraded_from_run_id", "string"),  # trialhouse regrade: the run of the trial graded again
        Column("regraded_from_trial_id", "string"),  # ... and its trial id (null: not a regrade)
        Column("original_outcome", "string"),  # that trial's outcome under its own evaluator
        Column("original_fingerprint", "string"),  # that trial's evaluator fingerprint
        Column("regrade_s", "float64"),  # seconds the regrade spent rebuilding and grading (apart from duration_s)
    ),
    "attempts": table_spec(
        "One row per attempt inside a trial (foreign formats: attempt 1 only).",
        Column("trial_id", "string", False),
        Column("attempt", "int32", False),
        Column("outcome", "string"),
        Column("findings_json", "string"),
        Column("started_at", "timestamp"),
        Column("finished_at", "timestamp"),
    ),
    "stages": table_spec(
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
    "gradings": table_spec(
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
        Column("output_key", "string"),  # the grader's output normalised and hashed (contract.grader_output)
    ),
}
