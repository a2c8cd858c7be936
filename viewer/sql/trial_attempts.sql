SELECT attempt, outcome, findings_json, started_at, finished_at,
       date_diff('millisecond', started_at, finished_at) / 1000.0 AS duration_s
FROM {attempts} WHERE run_id = $run AND trial_id = $trial ORDER BY attempt
