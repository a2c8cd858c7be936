-- trial_facts: one row per trial with everything analysis needs: the trial (outcome,
-- cost, tokens, timing), its case labels (holdout, repository, familiarity, task class,
-- difficulty, language), its configuration (settings, variant order) and run status.
-- valid = complete and not infra_error/invalid; solved = outcome 'accepted';
-- total_tokens is null unless both input and output tokens are known.
CREATE OR REPLACE VIEW trial_facts AS
SELECT
    t.run_id,
    t.trial_id,
    t.source_format,
    t.config_id,
    t.variant,
    t.model,
    t.harness,
    t.harness_version,
    g.reasoning_effort,
    g.service_tier,
    g.settings_json,
    g.agent_kind,
    g.variant_order,
    t.case_id,
    t.repetition,
    t.outcome,
    t.complete,
    t.complete AND t.outcome NOT IN ('infra_error', 'invalid') AS valid,
    t.outcome = 'accepted' AS solved,
    t.reason,
    t.attempts,
    t.started_at,
    t.finished_at,
    t.duration_s,
    t.setup_s,
    t.agent_s,
    t.verification_s,
    t.time_to_first_edit_s,
    t.input_tokens,
    t.output_tokens,
    t.input_tokens + t.output_tokens AS total_tokens,
    t.cache_read_tokens,
    t.cache_write_tokens,
    t.steps,
    t.cost_usd,
    t.cost_source,
    t.cost_budget_status,
    t.flags,
    t.simulated,
    t.failure_mode,
    t.labels_json AS trial_labels_json,
    coalesce(c.holdout, false) AS holdout,
    c.repository,
    c.familiarity,
    c.task_class,
    c.difficulty,
    c.language,
    c.subsystem,
    c.benchmark,
    c.validated AS case_validated,
    c.labels_json AS case_labels_json,
    r.status AS run_status,
    r.started_at AS run_started_at,
    r.prices_as_of,
    t.ingest_batch_id
FROM trials AS t
LEFT JOIN (
    SELECT * FROM cases QUALIFY row_number() OVER (PARTITION BY run_id, case_id) = 1
) AS c ON c.run_id = t.run_id AND c.case_id = t.case_id
LEFT JOIN (
    SELECT * FROM configs QUALIFY row_number() OVER (PARTITION BY run_id, config_id) = 1
) AS g ON g.run_id = t.run_id AND g.config_id = t.config_id
LEFT JOIN runs AS r ON r.run_id = t.run_id;
