-- _warehouse_info: one row per key describing this warehouse file (layout version,
-- where its Parquet lives relative to the DuckDB file).
CREATE TABLE IF NOT EXISTS _warehouse_info (
    key VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
INSERT OR REPLACE INTO _warehouse_info VALUES
    ('layout', 'hive-partitioned parquet: <stem>.parquet/<table>/run_id=<id>/part-0.parquet'),
    ('layout_version', '1');
