-- trial_status: the valid-trial rule, written once. A trial is *valid* when it finished
-- (complete) with an outcome other than infra_error or invalid: those two are excluded
-- from every rate and counted apart. *solved* = complete with outcome accepted.
-- *patch_flags*: patch-inspection findings; only our runner inspects patches, so for any
-- other source the count is unknown (null), never the 0 an importer may have written
-- ({inspecting} is warehouse.rules.INSPECTING_SOURCES).
-- Not a stored view but a SELECT over {source} (`trials`, or a read_parquet of one run's
-- trials files): warehouse/rules.py wraps it, so the analyses and the rollups read the
-- same two columns without needing a migration on a read-only warehouse.
SELECT *,
    complete AND coalesce(outcome NOT IN ('infra_error', 'invalid'), FALSE) AS valid,
    complete AND coalesce(outcome = 'accepted', FALSE) AS solved,
    CASE WHEN source_format IN {inspecting} THEN flags END AS patch_flags
FROM {source}
