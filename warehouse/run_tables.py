"""The run-level tables: ``runs``, ``configs``, ``cases``, ``run_status``, ``criteria``,
``skipped_trials`` (assembled in ``warehouse.schema``; docs/tables.md)."""

from __future__ import annotations

from warehouse.table_spec import Column, table_spec

SPECS = {
    "runs": table_spec(
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
        Column("integrity", "string"),  # hash chain, keyed seal, evidence: intact | chain intact, key not available | chain intact, unkeyed seal | unchained (older runs) | tampered or damaged: …
        Column("isolation_backend", "string"),  # bubblewrap | none | null (foreign, or before isolation)
        Column("isolated", "bool"),  # false: agents and graders were not isolated (reports say so)
        Column("network", "bool"),  # agents had the host's network (network_policy open)
        Column("network_policy", "string"),  # none | gateway | open (null: foreign, or before the policies)
        Column("executor", "string"),  # where the trials ran: local | ray | null (foreign, or before executors)
        Column("executor_address", "string"),  # ray: the cluster address joined; null: a local instance
        Column("ray_version", "string"),
        Column("control_repeats", "int32"),
        Column("controls_from", "string"),  # run id of the validation-only run whose controls were reused
        Column("grading_semantics", "int32"),  # runner.fingerprint.GRADING_SEMANTICS of the run
        Column("trials_skipped", "int64"),  # trials of unscored cases, not run
        Column("regrade_of", "string"),  # trialhouse regrade: the run whose trials' final states this run graded again
    ),
    "configs": table_spec(
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
        Column("timeout_seconds", "float64"),  # the variant's own time budget per trial (null: the case's or run's)
        Column("max_cost_usd", "float64"),  # the variant's own spend limit per trial (null: the case's or run's)
        Column("sweep", "string"),  # the budget sweep this configuration is a point of (null: none)
        Column("sweep_budget", "string"),  # timeout_seconds | max_cost_usd: what the sweep varies
        Column("sweep_value", "float64"),  # this point's value of sweep_budget
        Column("conditions_json", "string"),  # named conditions it ran under ({"cache":"cold"}); null: none declared
    ),
    "cases": table_spec(
        "One row per task (case) in a run, with its labels.",
        Column("case_id", "string", False),
        Column("holdout", "bool", False),
        Column("canary", "bool"),  # runs in every periodic run; its outcome watched for drift (null: unknown)
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
        Column("timeout_seconds", "float64"),  # the case's own time budget per trial (null: the run's)
        Column("max_cost_usd", "float64"),  # the case's own spend limit per trial (null: the run's)
        Column("pre_existing", "int32"),  # regression/repository criteria failing on the initial commit (noise)
        Column("pre_existing_json", "string"),  # [{criterion_id, layer, output, output_path}] of those criteria
    ),
    "run_status": table_spec(
        "One row per run an operator invalidated (`trialhouse runs invalidate`): kept, but left "
        "out of every other table's view (see `excluded_runs`). Never written by ingest.",
        Column("status", "string", False),  # invalidated
        Column("reason", "string", False),
        Column("set_at", "timestamp", False),
    ),
    "criteria": table_spec(
        "One row per criterion of a case in a run: its layer, kind and severity.",
        Column("case_id", "string", False),
        Column("criterion_id", "string", False),
        Column("layer", "string", False),  # target | regression | repository
        Column("kind", "string", False),  # command | judge
        Column("severity", "string"),  # blocker | major | minor (null: runs before severities)
        Column("description", "string"),
        Column("case_fingerprint", "string"),
        Column("visible", "bool"),  # the agent could run it ($TRIALHOUSE_CHECKS); false: hidden (null: older runs)
        Column("pooled", "bool"),  # drawn from the case's hidden pool for this run (runs.details_json rotation)
        Column("in_process", "bool"),  # declared: its grader imports workspace code in its own process
        Column("tier", "string"),  # fast | broad | scheduled: when it runs (null: runs before tiers, all fast)
        Column("subsystem", "string"),  # bank tags: what the check guards
        Column("mechanism", "string"),
        Column("consequence", "string"),
        Column("incident", "string"),
        Column("banked", "bool"),  # drawn from the behaviour bank for this run (runs.details_json bank)
    ),
    "skipped_trials": table_spec(
        "One row per trial not run because its case was not scored (failed or flaky controls), "
        "or not graded again by a regrade (its final state was not kept).",
        Column("trial_id", "string", False),
        Column("case_id", "string", False),
        Column("variant", "string"),
        Column("config_id", "string"),
        Column("repetition", "int32"),
        Column("reason", "string"),
        Column("case_fingerprint", "string"),
        Column("regraded_from_run_id", "string"),  # trialhouse regrade: a trial it did not grade again (why: reason)
        Column("regraded_from_trial_id", "string"),
        Column("original_outcome", "string"),
    ),
}
