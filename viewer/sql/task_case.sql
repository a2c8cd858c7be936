-- A case's labels and criteria in a run.
SELECT c.case_id, c.repository, c.task_class, c.difficulty, c.language, c.subsystem, c.benchmark,
       c.familiarity, c.holdout, c.initial_commit, c.validated, c.scored, c.unscored_reason,
       c.fingerprint, c.labels_json
FROM cases c
WHERE c.run_id = $run AND c.case_id = $case
