SELECT run_id FROM runs ORDER BY started_at DESC NULLS LAST, run_id
