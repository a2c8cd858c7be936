-- One row per task (case) a configuration ran in a run ({trial_status} is the valid-trial rule).
SELECT t.case_id, count(*) AS trials, count(*) FILTER (WHERE t.complete) AS complete,
       count(*) FILTER (WHERE t.valid) AS valid, count(*) FILTER (WHERE t.solved) AS solved,
       string_agg(coalesce(t.outcome, 'incomplete'), ', ' ORDER BY t.repetition) AS outcomes,
       sum(t.cost_usd) AS cost_usd, median(t.duration_s) AS med_duration_s,
       any_value(c.task_class) AS task_class, any_value(c.difficulty) AS difficulty,
       any_value(c.holdout) AS holdout, any_value(c.scored) AS scored
FROM {trial_status} t
LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
WHERE t.run_id = $run AND t.config_id = $config
GROUP BY t.case_id
ORDER BY t.case_id
