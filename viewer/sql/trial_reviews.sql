SELECT reviewer, decision, grader_verdict, reason_code, minutes, grid_json, grid_rubric,
       failure_category, note, reviewed_at, run_id AS source
FROM {reviews} WHERE trial_run_id = $run AND trial_id = $trial
ORDER BY reviewed_at, source_line
