"""What a trial's final grading says per layer, for the rates that read it (docs/rollout.md).

The one place two per-trial facts are defined: whether a trial's *target layer passed*
(every final target-layer grading passed) and whether it *broke* a regression or
repository-health criterion that passed on the initial commit (``gradings.baseline``).
``rules check`` (``regression_free_rate``) and the dashboard rates (``analysis.dashboard``)
both count through these functions, so a stop rule and the dashboard can never disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb
    import polars as pl

BROKE_SQL = """
SELECT run_id, trial_id, bool_or(verdict = 'failed') AS broke
FROM gradings
WHERE final AND layer IN ('regression', 'repository') AND baseline = 'passed'
  AND run_id IN (SELECT unnest(?::VARCHAR[])) AND trial_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY run_id, trial_id
"""
"""Per graded trial: whether it broke a regression or repository criterion that passed on the
initial commit."""

TARGET_SQL = """
SELECT run_id, trial_id, bool_and(verdict = 'passed') AS target_passed
FROM gradings
WHERE final AND layer = 'target'
  AND run_id IN (SELECT unnest(?::VARCHAR[])) AND trial_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY run_id, trial_id
"""
"""Per trial graded on its target layer: whether every final target grading passed."""


def _graded(con: duckdb.DuckDBPyConnection, sql: str, valid: pl.DataFrame) -> pl.DataFrame:
    per_trial = con.sql(sql, params=[valid["run_id"].unique().to_list(),
                                     valid["trial_id"].unique().to_list()]).pl()
    return valid.join(per_trial, on=["run_id", "trial_id"], how="inner")


def regression_free(con: duckdb.DuckDBPyConnection, valid: pl.DataFrame) -> pl.DataFrame:
    """The valid trials (``run_id``, ``trial_id`` and any other columns) graded on at least one
    regression/repository criterion that passed before, with ``broke``: the regression-free
    rate is ``(~broke).sum() / height``."""
    return _graded(con, BROKE_SQL, valid)


def target_fixed(con: duckdb.DuckDBPyConnection, valid: pl.DataFrame) -> pl.DataFrame:
    """The valid trials graded on their target layer, with ``target_passed``: the target-fix
    rate is ``target_passed.sum() / height``."""
    return _graded(con, TARGET_SQL, valid)
