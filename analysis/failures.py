"""Where trials go wrong: outcome classes and first-decisive-wrong-choice categories.

Category rule: a trial's categories are those its reviewers (``review import``),
annotators (``annotate``) and judges gave, the latest of each
(``analysis.review.assigned_categories``); who assigned each is kept (``assigned_by``:
reviewer / annotator / judge, ``annotator``: the name) and assigners are never merged.
Trials whose assigners disagree on the category are listed (``category_disagreements``).
Lost spend is the cost of the trials of a failure class: never of accepted trials (an
accepted outcome loses nothing), unknown when any trial in the class has no known cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from analysis import scope
from analysis.data import CONFIG_KEYS, load_trials, require_trials
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb
    import polars as pl

OUTCOME_ORDER = ("accepted", "target_failed", "regression", "budget_exhausted",
                 "agent_output_error", "infra_error", "invalid")


def _agg(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    import polars as pl

    return df.group_by(keys).agg(
        count=pl.len(),
        lost_spend_usd=pl.when(pl.col("cost_usd").null_count() == 0)
        .then(pl.col("cost_usd").sum()).otherwise(None),
        cost_coverage=pl.col("cost_usd").is_not_null().mean(),
    )


class Failures(RowsResult):
    """Per configuration [× slice]: outcome classes and assigned categories with lost spend,
    and the trials whose assigners disagree on the category."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "dimension": "String", "value": "String", "assigned_by": "String",
        "annotator": "String", "count": "Int64", "total": "Int64", "share": "Float64",
        "lost_spend_usd": "Float64", "cost_coverage": "Float64"}

    category_disagreements: list[dict[str, Any]] | None = None

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return {**super().as_dict(),
                "category_disagreements": clean(self.category_disagreements or [])}


def _categories(con: duckdb.DuckDBPyConnection, df: pl.DataFrame) -> pl.DataFrame:
    """The selected trials × their assigned categories (a category recorded without the
    trial's run matches the trial id in any run)."""
    import polars as pl

    from analysis.review import assigned_categories

    cats = assigned_categories(con).rename({"run_id": "cat_run", "assigner": "annotator",
                                            "category": "value"})
    joined = df.join(cats, on="trial_id")
    return joined.filter(pl.col("cat_run").is_null() | (pl.col("cat_run") == pl.col("run_id")))


def _disagreements(joined: pl.DataFrame) -> list[dict[str, Any]]:
    """Trials two assigners gave different categories, each with who said what."""
    import polars as pl

    who = pl.col("assigned_by") + ":" + pl.col("annotator") + "=" + pl.col("value")
    per = (joined.sort("assigned_by", "annotator", "value")
           .group_by([*CONFIG_KEYS, "run_id", "trial_id", "case_id"], maintain_order=True)
           .agg(pl.col("value").n_unique().alias("n"), who.alias("categories"))
           .filter(pl.col("n") > 1).drop("n").sort("config_id", "case_id", "trial_id"))
    return per.to_dicts()


def failures(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
             by: list[str] | str | None = None) -> Failures:
    """Per configuration [× slice]: counts, shares (with totals) and lost spend per class."""
    import polars as pl

    filters = scope.resolve(con, filters)
    by_cols = check_by(by)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "run_id", "trial_id", "case_id",
                                            "outcome", "complete", "cost_usd", *by_cols])
    require_trials(df, filters)
    df = df.filter(pl.col("complete"))
    keys = ["config_id", *by_cols]
    names = df.group_by("config_id").agg([pl.col(k).drop_nulls().first()
                                          for k in CONFIG_KEYS if k != "config_id"])
    outcomes = _agg(df.rename({"outcome": "value"}), [*keys, "value"])
    totals = df.group_by(keys).agg(total=pl.len())
    outcomes = outcomes.join(totals, on=keys).with_columns(
        dimension=pl.lit("outcome"), assigned_by=pl.lit(None, pl.String),
        annotator=pl.lit(None, pl.String))
    joined = _categories(con, df)
    parts = [outcomes]
    if joined.height:
        who = [*keys, "assigned_by", "annotator"]
        cat = _agg(joined, [*who, "value"])
        ctot = joined.group_by(who).agg(total=pl.len())
        parts.append(cat.join(ctot, on=who, nulls_equal=True).with_columns(
            dimension=pl.lit("category")).select(outcomes.columns))
    out = pl.concat(parts, how="vertical_relaxed").with_columns(
        share=pl.col("count") / pl.col("total"))
    accepted = (pl.col("dimension") == "outcome") & (pl.col("value") == "accepted")
    out = out.with_columns(  # an accepted outcome loses nothing
        lost_spend_usd=pl.when(accepted).then(None).otherwise(pl.col("lost_spend_usd")),
        cost_coverage=pl.when(accepted).then(None).otherwise(pl.col("cost_coverage")))
    order = {v: i for i, v in enumerate(OUTCOME_ORDER)}
    out = out.join(names, on="config_id").with_columns(
        _o=pl.col("value").replace_strict(order, default=99, return_dtype=pl.Int64),
        _d=(pl.col("dimension") == "category").cast(pl.Int64))
    cols = [*CONFIG_KEYS, *by_cols, "dimension", "value", "assigned_by", "annotator", "count",
            "total", "share", "lost_spend_usd", "cost_coverage"]
    out = (out.sort(["model", "harness", "harness_version", "config_id", *by_cols,
                     "_d", "assigned_by", "annotator", "_o", "value"], nulls_last=True)
           .select(cols).with_columns(pl.col("count").cast(pl.Int64),
                                      pl.col("total").cast(pl.Int64)))
    warnings = []
    if not joined.height:
        warnings.append("no failure categories in the selected trials: only outcome classes "
                        "are shown (categories come from `trialhouse review import`, "
                        "`trialhouse annotate` and judges)")
    result = Failures(out.to_dicts(), by_cols, warnings)
    result.category_disagreements = _disagreements(joined) if joined.height else []
    return result


class Disagreements(RowsResult):
    """Reviewer decisions that disagree with the grader's verdict, one row per trial and
    reviewer (``analysis.review.review_decisions``: review import and annotations)."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "run_id": "String", "trial_id": "String", "case_id": "String",
        "outcome": "String", "review": "String", "annotator": "String", "source": "String",
        "reason_code": "String", "note": "String"}


def review_disagreements(con: duckdb.DuckDBPyConnection,
                         filters: Filters | None = None) -> Disagreements:
    """Reviewer accept/reject decisions that disagree with the grader's verdict, among the
    selected trials (the same decisions ``review summary`` and ``inspect-queue`` count)."""
    import polars as pl

    from analysis.review import review_decisions

    filters = scope.resolve(con, filters)
    df = load_trials(con, filters, columns=[*CONFIG_KEYS, "run_id", "trial_id", "case_id",
                                            "outcome"])
    dec = review_decisions(con).filter(pl.col("decision") != pl.col("grader_verdict"))
    j = df.join(dec, on=["run_id", "trial_id"]).rename({"decision": "review",
                                                        "reviewer": "annotator"})
    j = j.select(*CONFIG_KEYS, "run_id", "trial_id", "case_id", "outcome", "review",
                 "annotator", "source", "reason_code", "note").sort(
        ["config_id", "case_id", "trial_id", "annotator"])
    return Disagreements(j.to_dicts())
