-- One trial with its configuration and run (where its evidence is).
SELECT t.*, cf.agent_kind, cf.reasoning_effort, cf.service_tier, cf.settings_json,
       r.source_path, r.source_format AS run_source_format, r.started_at AS run_started_at,
       r.integrity, r.initial_commit AS run_initial_commit, c.initial_commit AS case_initial_commit,
       c.repository, c.scored AS case_scored, c.unscored_reason
FROM {trials} t
LEFT JOIN {configs} cf ON cf.run_id = t.run_id AND cf.config_id = t.config_id
LEFT JOIN {runs} r ON r.run_id = t.run_id
LEFT JOIN {cases} c ON c.run_id = t.run_id AND c.case_id = t.case_id
WHERE t.run_id = $run AND t.trial_id = $trial
