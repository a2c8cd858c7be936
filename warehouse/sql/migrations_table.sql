-- _migrations: one row per applied warehouse migration (name, when it was applied).
-- Created before any migration runs; warehouse.migrations.pending() only reads it.
CREATE TABLE IF NOT EXISTS _migrations (
    name VARCHAR PRIMARY KEY,
    applied_at TIMESTAMPTZ NOT NULL
);
