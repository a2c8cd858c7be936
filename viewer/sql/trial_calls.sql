-- Model calls through the gateway (judge calls too: stage judge.<criterion>).
SELECT attempt, stage, call_index, started_at, mode, provider, api, model, response_model, status,
       streamed, side_request, retries, stop_reason, input_tokens, output_tokens, cache_read_tokens,
       reasoning_tokens, latency_s, ttft_s, error_type, error, gateway_error, usage_note, response_id
FROM {model_calls} WHERE run_id = $run AND trial_id = $trial
ORDER BY attempt NULLS LAST, started_at NULLS LAST, stage, call_index
LIMIT $limit
