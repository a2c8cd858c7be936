-- The trial's judge judgments with their reasons (calibration status: analysis.judges).
SELECT criterion_id, verdict, category, note, annotator AS judge_model, judge_host, judge_provider,
       judge_effort, rubric, rubric_sha256, error, attempt, ts
FROM {judgments} WHERE run_id = $run AND trial_id = $trial AND kind = 'judge'
ORDER BY criterion_id, ts
