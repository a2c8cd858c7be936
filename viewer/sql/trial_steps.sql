-- The trajectory: steps with the gateway's record of each model turn (joined on the response id).
SELECT s.attempt, s.stage, s.step_index, s.kind, s.source, s.tool, s.action, s.paths_json, s.command,
       s.exit_code, s.ok, s.started_at, s.ended_at, s.duration_s, s.input_tokens, s.output_tokens,
       s.cache_read_tokens, s.tokens_from, s.call_id,
       m.latency_s, m.ttft_s, m.status AS call_status, m.model AS call_model, m.call_index
FROM {steps} s
LEFT JOIN {model_calls} m ON m.run_id = s.run_id AND m.trial_id = s.trial_id AND m.attempt = s.attempt
     AND m.stage = s.stage AND s.kind = 'model' AND m.response_id = s.call_id
WHERE s.run_id = $run AND s.trial_id = $trial
ORDER BY s.attempt, s.stage, s.step_index
LIMIT $limit
