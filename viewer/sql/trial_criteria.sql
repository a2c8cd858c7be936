-- Every criterion of the trial's case (judge criteria too), with each grading of this trial.
WITH crit AS (
    SELECT criterion_id, layer, kind, severity, description FROM {criteria}
    WHERE run_id = $run AND case_id = $case
), graded AS (
    SELECT criterion_id, layer, attempt, final, exit_code, signal, timed_out, verdict, baseline,
           duration_s, ts
    FROM {gradings} WHERE run_id = $run AND trial_id = $trial AND control IS NULL
)
SELECT coalesce(c.criterion_id, g.criterion_id) AS criterion_id, coalesce(c.layer, g.layer) AS layer,
       c.kind, c.severity, c.description, g.attempt, g.final, g.exit_code, g.signal, g.timed_out,
       g.verdict, g.baseline, g.duration_s, g.ts
FROM crit c FULL OUTER JOIN graded g ON g.criterion_id = c.criterion_id
ORDER BY CASE coalesce(c.layer, g.layer) WHEN 'target' THEN 0 WHEN 'regression' THEN 1
         WHEN 'repository' THEN 2 ELSE 3 END, criterion_id, g.attempt NULLS FIRST
