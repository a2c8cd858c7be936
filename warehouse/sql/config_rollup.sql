-- One row per configuration of one run's complete trials: the medians and quantiles of a
-- whole-run summary (warehouse/rollup.py). They need every value, so unlike counts they
-- cannot be added up from task_rollup rows; summarize reads them when its trials are
-- exactly each configuration's trials of one run, and scans the trials otherwise.
-- The source after FROM is a read_parquet over a run's trials files, wrapped in
-- trial_status.sql (valid and solved columns; warehouse/rules.py).
SELECT
    run_id, config_id, complete, valid, med_steps, med_tokens,
    cost_q[1] AS cost_p50, cost_q[2] AS cost_p90, cost_q[3] AS cost_p95,
    lat_q[1] AS latency_p50, lat_q[2] AS latency_p90, lat_q[3] AS latency_p95,
    ingest_batch_id
FROM (
    SELECT
        run_id,
        config_id,
        count(*) AS complete,
        count(*) FILTER (WHERE valid) AS valid,
        median(steps) FILTER (WHERE valid) AS med_steps,
        median(input_tokens + output_tokens) FILTER (WHERE valid) AS med_tokens,
        quantile_cont(cost_usd, [0.5, 0.9, 0.95]) AS cost_q,
        quantile_cont(duration_s, [0.5, 0.9, 0.95]) AS lat_q,
        min(ingest_batch_id) AS ingest_batch_id
    FROM {source}
    WHERE complete
    GROUP BY run_id, config_id
)
