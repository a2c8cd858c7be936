-- Every trial of one task (case) in a run, every configuration.
SELECT t.trial_id, t.config_id, coalesce(t.variant, cf.variant) AS variant, t.model, t.harness,
       t.repetition, t.outcome, t.reason, t.attempts, t.duration_s, t.cost_usd, t.input_tokens,
       t.output_tokens, t.steps, t.flags, t.simulated, cf.variant_order
FROM trials t
LEFT JOIN configs cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE t.run_id = $run AND t.case_id = $case
ORDER BY cf.variant_order NULLS LAST, variant, t.repetition, t.trial_id
