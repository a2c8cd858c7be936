SELECT attempt, stage, exit_code, signal, timed_out, could_not_start, duration_s, input_tokens,
       output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_source, steps,
       time_to_first_edit_s, usage_source, verdict_status, checkpoint_sha, started_at, finished_at,
       harness_version, permission_denials, context_exhausted, gateway_calls, gateway_input_tokens,
       gateway_output_tokens, gateway_model_s
FROM {stages} WHERE run_id = $run AND trial_id = $trial
ORDER BY attempt, started_at NULLS LAST, stage
