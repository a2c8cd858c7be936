-- One row per (configuration, case) of one run's trials: the counts every task-level
-- analysis needs (warehouse/rollup.py). The source after FROM is a read_parquet over a run's
-- trials files (a rebuild, or the view for runs whose rollup is not stored), wrapped in
-- trial_status.sql, which adds the valid and solved columns (warehouse/rules.py).
SELECT
    run_id,
    config_id,
    case_id,
    count(*) AS trials,
    count(*) FILTER (WHERE complete) AS complete,
    count(*) FILTER (WHERE valid) AS valid,
    count(*) FILTER (WHERE solved) AS solved,
    count(*) FILTER (WHERE complete AND outcome = 'infra_error') AS infra,
    count(*) FILTER (WHERE complete AND outcome = 'invalid') AS invalid,
    fsum(cost_usd) FILTER (WHERE complete) AS cost_usd,
    count(cost_usd) FILTER (WHERE complete) AS cost_known,
    min(ingest_batch_id) AS ingest_batch_id
FROM {source}
GROUP BY run_id, config_id, case_id
