-- Failure categories and decisions annotated for the trial (not the judges: analysis.judges has those).
SELECT kind, verdict, category, note, annotator, ts, run_id AS source
FROM {judgments}
WHERE trial_id = $trial AND kind <> 'judge' AND (run_id = $run OR run_id LIKE 'annotations-%')
ORDER BY ts NULLS LAST
