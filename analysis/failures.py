"""Where trials go wrong: outcome classes and first-decisive-wrong-choice categories.

Category rule: per trial and annotator only the latest ``failure_category`` judgment
counts (by ``ts``, ties broken by the category text, descending); the category is
``category`` when given, else ``verdict``. Annotators are never merged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from analysis import scope
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb
    import polars as pl

OUTCOME_ORDER = ("accepted", "target_failed", "regression", "budget_exhausted",
                 "agent_output_error", "infra_error", "invalid")

_LATEST_SQL = """
SELECT trial_id, annotator, coalesce(category, verdict) AS value, note
FROM judgments
WHERE kind = ?
QUALIFY row_number() OVER (
  PARTITION BY trial_id, annotator
  ORDER BY ts DESC NULLS LAST, coalesce(category, verdict) DESC NULLS LAST
) = 1
"""


def latest_judgments(con: duckdb.DuckDBPyConnection, kind: str) -> pl.DataFrame:
    return con.sql(_LATEST_SQL, params=[kind]).pl()


def _agg(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    import polars as pl

    return df.group_by(keys).agg(
        count=pl.len(),
        lost_spend_usd=pl.when(pl.col("cost_usd").null_count() == 0)
        .then(pl.col("cost_usd").sum()).otherwise(None),
        cost_coverage=pl.col("cost_usd").is_not_null().mean(),
    )


class Failures(RowsResult):
    """Per configuration [× slice]: outcome classes and annotated categories with lost spend."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "dimension": "String", "value": "String", "annotator": "String",
        "count": "Int64", "total": "Int64", "share": "Float64", "lost_spend_usd": "Float64",
        "cost_coverage": "Float64"}


def failures(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
             by: list[str] | str | None = None) -> Failures:
    """Per configuration [× slice]: counts, shares (with totals) and lost spend per class."""
    import polars as pl

    filters = scope.resolve(con, filters)
    by_cols = check_by(by)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "trial_id", "outcome", "complete",
                                            "cost_usd", *by_cols])
    require_trials(df, filters)
    df = df.filter(pl.col("complete"))
    keys = ["config_id", *by_cols]
    names = df.group_by("config_id").agg([pl.col(k).drop_nulls().first()
                                          for k in CONFIG_KEYS if k != "config_id"])
    outcomes = _agg(df.rename({"outcome": "value"}), [*keys, "value"])
    totals = df.group_by(keys).agg(total=pl.len())
    outcomes = outcomes.join(totals, on=keys).with_columns(
        dimension=pl.lit("outcome"), annotator=pl.lit(None, pl.String))
    cats = latest_judgments(con, "failure_category")
    joined = df.join(cats.select("trial_id", "annotator", "value"), on="trial_id")
    if joined.height:
        cat = _agg(joined, [*keys, "annotator", "value"])
        ctot = joined.group_by([*keys, "annotator"]).agg(total=pl.len())
        cat = cat.join(ctot, on=[*keys, "annotator"], nulls_equal=True).with_columns(
            dimension=pl.lit("category"))
        parts = [outcomes, cat.select(outcomes.columns)]
    else:
        parts = [outcomes]
    out = pl.concat(parts, how="vertical_relaxed").with_columns(
        share=pl.col("count") / pl.col("total"))
    order = {v: i for i, v in enumerate(OUTCOME_ORDER)}
    out = out.join(names, on="config_id").with_columns(
        _o=pl.col("value").replace_strict(order, default=99, return_dtype=pl.Int64),
        _d=(pl.col("dimension") == "category").cast(pl.Int64))
    cols = [*CONFIG_KEYS, *by_cols, "dimension", "value", "annotator", "count", "total",
            "share", "lost_spend_usd", "cost_coverage"]
    out = (out.sort(["model", "harness", "harness_version", "config_id", *by_cols,
                     "_d", "annotator", "_o", "value"], descending=False, nulls_last=True)
           .select(cols).with_columns(pl.col("count").cast(pl.Int64),
                                      pl.col("total").cast(pl.Int64)))
    warnings = []
    if out.filter(pl.col("dimension") == "category").height == 0:
        warnings.append("no failure-category annotations in the selected trials: only outcome "
                        "classes are shown (record categories with `trialhouse annotate`)")
    return Failures(out.to_dicts(), by_cols, warnings)


class Disagreements(RowsResult):
    """Reviewer decisions that disagree with the grader's verdict, one row per trial."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "trial_id": "String", "case_id": "String", "outcome": "String",
        "review": "String", "annotator": "String", "note": "String"}


def review_disagreements(con: duckdb.DuckDBPyConnection,
                         filters: Filters | None = None) -> Disagreements:
    """Reviewer accept/reject decisions that disagree with the grader's verdict."""
    import polars as pl

    filters = scope.resolve(con, filters)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "trial_id", "case_id", "outcome",
                                            "complete"])
    reviews = latest_judgments(con, "review_decision").rename({"value": "review"})
    j = df.filter(pl.col("complete")).join(reviews, on="trial_id")
    accept = pl.col("review").str.to_lowercase().is_in(["accept", "accepted"])
    j = j.filter(accept != (pl.col("outcome") == "accepted"))
    j = j.select(*CONFIG_KEYS, "trial_id", "case_id", "outcome", "review", "annotator",
                 "note").sort(["config_id", "case_id", "trial_id"])
    return Disagreements(j.to_dicts())
