-- What the runs page adds to warehouse.runs.list_runs: network policy, engine and evaluator versions.
SELECT r.run_id, r.source_path, r.network, r.engine_version, r.grading_semantics, r.validation_only,
       r.simulated, r.repository, r.initial_commit, r.finished_at, r.control_repeats, r.trials_skipped,
       (SELECT count(DISTINCT c.fingerprint) FROM cases c WHERE c.run_id = r.run_id) AS fingerprints,
       (SELECT count(*) FROM cases c WHERE c.run_id = r.run_id) AS cases,
       (SELECT count(*) FROM cases c WHERE c.run_id = r.run_id AND c.scored = FALSE) AS unscored_cases
FROM runs r
