-- Ids long enough to be hashed in a path (viewer.site.slug): runs, and a run's configurations,
-- cases and trials; a hashed path segment is resolved against them.
SELECT 'run' AS kind, run_id AS id FROM runs WHERE strlen(run_id) > 60
UNION ALL SELECT 'config', config_id FROM configs WHERE run_id = $run AND strlen(config_id) > 60
UNION ALL SELECT 'case', case_id FROM cases WHERE run_id = $run AND strlen(case_id) > 60
UNION ALL SELECT 'case', case_id FROM trials WHERE run_id = $run AND strlen(case_id) > 60
UNION ALL SELECT 'trial', trial_id FROM trials WHERE run_id = $run AND strlen(trial_id) > 60
