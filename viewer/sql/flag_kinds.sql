SELECT run_id, trial_id, string_agg(DISTINCT kind, ' ' ORDER BY kind) AS flag_kinds
FROM flags GROUP BY run_id, trial_id
