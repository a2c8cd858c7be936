-- A run's tasks (cases) with their trial counts ({trial_status} is the valid-trial rule).
SELECT c.case_id, c.task_class, c.difficulty, c.holdout, c.scored, c.unscored_reason,
       count(t.trial_id) AS trials, count(*) FILTER (WHERE t.solved) AS solved,
       count(*) FILTER (WHERE t.valid) AS valid
FROM cases c
LEFT JOIN {trial_status} t ON t.run_id = c.run_id AND t.case_id = c.case_id
WHERE c.run_id = $run
GROUP BY ALL
ORDER BY c.case_id
