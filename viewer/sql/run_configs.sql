-- One row per configuration of a run: its names and trial counts ({trial_status} is the valid-trial rule).
SELECT cf.config_id, cf.variant, cf.model, cf.harness, cf.harness_version, cf.agent_kind, cf.simulated,
       cf.variant_order, cf.reasoning_effort,
       count(t.trial_id) AS trials, count(*) FILTER (WHERE t.complete) AS complete,
       count(*) FILTER (WHERE t.valid) AS valid, count(*) FILTER (WHERE t.solved) AS solved,
       count(*) FILTER (WHERE t.outcome = 'infra_error') AS infra,
       count(*) FILTER (WHERE t.outcome = 'invalid') AS invalid,
       count(DISTINCT t.case_id) AS cases,
       sum(t.cost_usd) AS cost_usd, count(t.cost_usd) AS cost_known,
       median(t.duration_s) AS med_duration_s, sum(coalesce(t.flags, 0)) AS flags
FROM configs cf
LEFT JOIN {trial_status} t ON t.run_id = cf.run_id AND t.config_id = cf.config_id
WHERE cf.run_id = $run
GROUP BY ALL
ORDER BY cf.variant_order NULLS LAST, cf.variant, cf.config_id
