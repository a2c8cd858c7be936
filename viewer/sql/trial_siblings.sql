-- Other trials of the same task (case), any run: what a trial can be compared with.
SELECT t.run_id, t.trial_id, coalesce(t.variant, cf.variant) AS variant, t.repetition, t.outcome
FROM {trials} t
LEFT JOIN {configs} cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
WHERE t.case_id = $case AND NOT (t.run_id = $run AND t.trial_id = $trial)
ORDER BY t.run_id = $run DESC, cf.variant_order NULLS LAST, variant, t.repetition, t.run_id
LIMIT 200
