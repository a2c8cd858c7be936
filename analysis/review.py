"""Human review as data: grader–reviewer agreement, review minutes, failure categories by
who assigned them, and the inspection queue (``trialhouse inspect-queue``).

Agreement is per configuration: Cohen's kappa (statsmodels) between the grader's verdict
(accept = outcome ``accepted``) and the latest decision of each reviewer, with the
disagreeing trials listed. Minutes per accepted result: the review minutes of trials the
reviewer accepted (median and 90th percentile, next to the known cost).
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from warehouse.rules import trial_status

LATEST_REVIEWS = """
SELECT r.*, t.config_id, t.variant, t.case_id, t.outcome, t.cost_usd, t.duration_s, t.started_at
FROM (SELECT *, row_number() OVER (PARTITION BY trial_run_id, trial_id, reviewer ORDER BY reviewed_at DESC,
                                   source_line DESC) AS k FROM reviews) r
JOIN trials t ON t.run_id = r.trial_run_id AND t.trial_id = r.trial_id
WHERE r.k = 1
"""


def reviews(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return con.sql(LATEST_REVIEWS).pl()


def _kappa(grader: list[str], reviewer: list[str]) -> tuple[float | None, float | None, float | None]:
    from analysis.judges import kappa_interval

    labels = ("accept", "reject")
    table = np.array([[sum(1 for g, r in zip(grader, reviewer, strict=True) if g == a and r == b) for b in labels]
                      for a in labels], dtype=float)
    return kappa_interval(table)


PERIODS = ("week", "month")


def agreement(con: duckdb.DuckDBPyConnection, period: str | None = None) -> pl.DataFrame:
    """Per configuration (and per ``period`` of the trials' start, ``week``/``month``, for
    agreement over time): reviewed trials, disagreement rate, kappa [95% CI], disagreeing trials."""
    facts = con.sql("SELECT run_id, trial_id, config_id, variant, started_at FROM trials").pl()
    df = review_decisions(con).join(facts, on=["run_id", "trial_id"]).sort("config_id", "trial_id")
    keys = ["config_id"]
    if period is not None:
        if period not in PERIODS:
            raise ValueError(f"period {period!r}: expected one of {', '.join(PERIODS)}")
        df = df.with_columns(pl.col("started_at").dt.truncate("1w" if period == "week" else "1mo")
                             .dt.date().cast(pl.String).alias("period"))
        keys.append("period")
    rows = []
    for key, g in df.group_by(keys, maintain_order=True):
        config = key[0]
        grader, decided = g["grader_verdict"].to_list(), g["decision"].to_list()
        k, lo, hi = _kappa(grader, decided)
        dis = g.filter(pl.col("grader_verdict") != pl.col("decision"))
        rows.append({"config_id": config, "variant": g["variant"][0], **({"period": key[1]} if period else {}),
                     "reviewed": g.height, "disagreements": dis.height,
                     "disagreement_rate": dis.height / g.height, "kappa": k, "kappa_low": lo, "kappa_high": hi,
                     "disagreeing_trials": ", ".join(sorted(set(dis["trial_id"].to_list())))})
    return pl.DataFrame(rows, schema={"config_id": pl.String, "variant": pl.String,
                                      **({"period": pl.String} if period else {}),
                                      "reviewed": pl.Int64, "disagreements": pl.Int64,
                                      "disagreement_rate": pl.Float64, "kappa": pl.Float64, "kappa_low": pl.Float64,
                                      "kappa_high": pl.Float64, "disagreeing_trials": pl.String})


def review_minutes(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Review minutes per accepted result, per configuration (median, p90 linear), next to known cost."""
    return minutes_per_accepted(reviews(con), ["config_id"])


def minutes_per_accepted(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The one definition of review minutes per accepted result, per ``keys``: the minutes of
    every latest review (``LATEST_REVIEWS`` rows; unknown minutes count as none) over the
    reviews that accepted, null when none accepted; ``minutes_known`` of ``reviewed`` say how
    many minutes were recorded. ``review_minutes`` and the dashboard (``analysis.dashboard``)
    both read it."""
    df = df.sort(*keys, "trial_run_id", "trial_id", "reviewer")  # sums in one order
    acc = pl.col("decision") == "accept"
    return (df.group_by(keys, maintain_order=True)
            .agg(pl.col("variant").first(), acc.sum().cast(pl.Int64).alias("accepted_by_review"),
                 pl.col("minutes").filter(acc).median().alias("minutes_median"),
                 pl.col("minutes").filter(acc).quantile(0.9, "linear").alias("minutes_p90"),
                 (pl.col("minutes").sum() / acc.sum()).alias("minutes_per_accepted"),
                 pl.col("minutes").count().cast(pl.Int64).alias("minutes_known"),
                 pl.len().cast(pl.Int64).alias("reviewed"),
                 pl.col("cost_usd").filter(acc).median().alias("cost_median_usd"))
            .with_columns(pl.when(pl.col("accepted_by_review") > 0).then(pl.col("minutes_per_accepted"))
                          .otherwise(None).alias("minutes_per_accepted"))
            .sort(keys))


_DECISIONS_SQL = """
SELECT r.trial_run_id AS run_id, r.trial_id, r.reviewer, 'review' AS source, r.decision,
       coalesce(r.grader_verdict, CASE WHEN t.outcome = 'accepted' THEN 'accept' ELSE 'reject' END)
         AS grader_verdict, r.reason_code, r.note
FROM ({latest}) r JOIN trials t ON t.run_id = r.trial_run_id AND t.trial_id = r.trial_id
UNION ALL
SELECT t.run_id, j.trial_id, coalesce(j.annotator, '?'), 'annotation', lower(j.verdict),
       CASE WHEN t.outcome = 'accepted' THEN 'accept' ELSE 'reject' END, NULL, j.note
FROM judgments j JOIN trials t ON t.trial_id = j.trial_id
WHERE j.kind = 'review_decision'
QUALIFY row_number() OVER (PARTITION BY j.trial_id, j.annotator
                           ORDER BY j.ts DESC NULLS LAST, j.verdict DESC NULLS LAST) = 1
"""


def review_decisions(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every reviewer's latest accept/reject per trial, from both places a decision is
    recorded: ``review import`` (the ``reviews`` table) and ``annotate --kind
    review_decision`` (``judgments``), beside the grader's verdict (accept = outcome
    accepted). The one source of grader–reviewer agreement, of ``failures
    --disagreements`` and of the queue's review disagreements, so they count alike."""
    sql = _DECISIONS_SQL.replace("{latest}", LATEST_REVIEWS)
    return con.sql(sql).pl().sort("run_id", "trial_id", "reviewer", "source")


_CATEGORIES_SQL = """
SELECT r.trial_run_id AS run_id, r.trial_id, 'reviewer' AS assigned_by, r.reviewer AS assigner,
       r.failure_category AS category
FROM ({latest}) r WHERE r.failure_category IS NOT NULL
UNION ALL
SELECT NULL, trial_id, 'annotator', coalesce(annotator, '?'), coalesce(category, verdict)
FROM judgments WHERE kind = 'failure_category'
QUALIFY row_number() OVER (PARTITION BY trial_id, annotator
  ORDER BY ts DESC NULLS LAST, coalesce(category, verdict) DESC NULLS LAST) = 1
UNION ALL
SELECT run_id, trial_id, 'judge', coalesce(judge_host, '?') || ' ' || coalesce(annotator, '?'),
       category
FROM judgments WHERE kind = 'judge' AND category IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY run_id, trial_id, judge_host, annotator
  ORDER BY attempt DESC NULLS LAST, ts DESC NULLS LAST, category DESC) = 1
"""
ASSIGNERS = ("reviewer", "annotator", "judge")
"""Who assigns a failure category: a reviewer (``review import``), an annotator
(``annotate``) or a judge (a rubric's answer)."""


def assigned_categories(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per trial and assigner: the failure category each reviewer, annotator and
    judge gave (its latest), with who (``assigned_by``: reviewer / annotator / judge, and
    ``assigner``: the name, or the judge's host and model). ``run_id`` is the trial's run
    when the source records it (an annotations CSV names trials only). ``failures``, lost
    spend by category, ``review summary`` and the report all read this."""
    sql = _CATEGORIES_SQL.replace("{latest}", LATEST_REVIEWS)
    return con.sql(sql).pl().sort("trial_id", "assigned_by", "assigner", "category",
                                  nulls_last=True)


def categories_by_assigner(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Failure categories with lost spend by who assigned them (``assigned_categories``;
    ``assigned_by`` written ``reviewer:bob``, ``annotator:alice``, ``judge:<host> <model>``).
    Lost spend is ``analysis.failures``'s rule: the cost of the trials in the category, unknown
    when any of them has no known cost (``cost_known`` says how many do)."""
    cats = assigned_categories(con)
    trials = con.sql("SELECT run_id, trial_id, cost_usd FROM trials").pl()
    cats = cats.join(trials, on="trial_id", how="left", suffix="_t").filter(
        pl.col("run_id").is_null() | pl.col("run_id_t").is_null()
        | (pl.col("run_id") == pl.col("run_id_t")))
    cats = cats.select("category", (pl.col("assigned_by") + ":" + pl.col("assigner"))
                       .alias("assigned_by"), "cost_usd")
    # Rows in a fixed order before summing (a float sum depends on its order) and a total
    # sort after: the same table on every run.
    cats = cats.sort(["category", "assigned_by", "cost_usd"], nulls_last=True)
    return (cats.group_by(["category", "assigned_by"], maintain_order=True)
            .agg(pl.len().cast(pl.Int64).alias("trials"), pl.col("cost_usd").sum().alias("lost_spend_usd"),
                 pl.col("cost_usd").count().cast(pl.Int64).alias("cost_known"))
            .with_columns(pl.when(pl.col("cost_known") == pl.col("trials"))
                          .then(pl.col("lost_spend_usd")).otherwise(None).alias("lost_spend_usd"))
            .sort(["lost_spend_usd", "category", "assigned_by"], descending=[True, False, False],
                  nulls_last=True))


_QUEUE_TEMPLATE = """
WITH t AS (SELECT * FROM {trials} WHERE complete AND ($run IS NULL OR run_id = $run)),
agents AS (SELECT * FROM t WHERE NOT EXISTS (
  SELECT 1 FROM configs b WHERE b.run_id = t.run_id AND b.config_id = t.config_id
    AND b.agent_kind IN (SELECT unnest($baselines::VARCHAR[])))),
med AS (SELECT case_id, median(duration_s) AS med FROM agents WHERE valid GROUP BY case_id),
every_fail AS (SELECT case_id FROM agents GROUP BY case_id
               HAVING count(*) FILTER (WHERE solved) = 0
                  AND count(*) FILTER (WHERE valid) > 0
                  AND count(DISTINCT config_id) > 1),
timeouts AS (SELECT t.run_id, t.config_id, t.case_id,
                    coalesce(c.repository, json_extract_string(c.labels_json, '$.repository'),
                             r.repository, '?') AS repository
             FROM t LEFT JOIN cases c ON c.run_id = t.run_id AND c.case_id = t.case_id
             LEFT JOIN runs r ON r.run_id = t.run_id
             WHERE (t.outcome = 'budget_exhausted' AND t.reason ILIKE '%time budget%')
                OR EXISTS (SELECT 1 FROM gradings g WHERE g.run_id = t.run_id
                           AND g.trial_id = t.trial_id AND g.timed_out))
SELECT 'infra_error' AS kind, run_id, trial_id, case_id, config_id, reason AS detail FROM t WHERE outcome = 'infra_error'
UNION ALL
SELECT 'fast_success', t.run_id, trial_id, t.case_id, config_id,
       printf('accepted in %.1fs, under a tenth of the case median %.1fs', duration_s, med.med)
FROM agents t JOIN med USING (case_id) WHERE outcome = 'accepted' AND duration_s < med.med / 10
UNION ALL
SELECT 'every_configuration_fails', min(run_id), NULL, case_id, NULL,
       'no configuration solved this case (baselines aside)'
FROM agents WHERE case_id IN (SELECT case_id FROM every_fail) GROUP BY case_id
UNION ALL
SELECT 'repository_timeouts', min(run_id), NULL, min(case_id), NULL,
       printf('repository %s: %d trial(s) timed out across %d configurations (cases: %s): '
              || 'likely an evaluator problem (a slow or hanging check, prepare command or '
              || 'environment), not the agents', repository, count(*), count(DISTINCT config_id),
              string_agg(DISTINCT case_id, ', ' ORDER BY case_id))
FROM timeouts GROUP BY repository HAVING count(DISTINCT config_id) >= $timeout_configs
UNION ALL
SELECT 'judge_abstained', j.run_id, j.trial_id, t.case_id, t.config_id, coalesce(j.error, 'inconclusive')
FROM judgments j JOIN t ON t.run_id = j.run_id AND t.trial_id = j.trial_id
WHERE j.kind = 'judge' AND j.verdict IN ('abstained', 'inconclusive')
ORDER BY kind, trial_id, case_id, run_id, config_id, detail
"""
TIMEOUT_CONFIGS = 2
"""A repository whose trials timed out (the trial's time budget, or a grader's timeout) under
at least this many configurations is listed as ``repository_timeouts``: when every agent runs
out of time there, the evaluator is the likelier cause (docs/judges.md)."""
QUEUE_SQL = _QUEUE_TEMPLATE.replace("{trials}", trial_status())
"""The queue over ``trials`` with the one valid-trial rule (``warehouse.rules.trial_status``)."""


def inspect_queue(con: duckdb.DuckDBPyConnection, run_id: str | None = None,
                  runs_root: str | None = None) -> pl.DataFrame:
    """What to look at by hand, each with the path to its evidence (``<runs_root>/trials/<trial>``).

    Baselines (``analysis.eligibility.BASELINE_KINDS``: null, reference) are reference
    points: the oracle solving a case does not stop "every configuration fails" from firing,
    and neither baseline enters the fast-success queue (nor the case median it is measured
    against); their infra errors are still listed."""
    from analysis.eligibility import BASELINE_KINDS

    q = con.sql(QUEUE_SQL, params={"run": run_id, "baselines": list(BASELINE_KINDS),
                                   "timeout_configs": TIMEOUT_CONFIGS}).pl()
    try:
        rev = review_decisions(con).filter(pl.col("grader_verdict") != pl.col("decision"))
    except duckdb.Error:
        rev = pl.DataFrame()
    if rev.height:
        facts = con.sql("SELECT run_id, trial_id, case_id, config_id FROM trials").pl()
        extra = rev.join(facts, on=["run_id", "trial_id"]).select(
            pl.lit("review_disagreement").alias("kind"), "run_id", "trial_id", "case_id",
            "config_id", (pl.col("reviewer") + pl.lit(" said ") + pl.col("decision") + pl.lit(" (")
                          + pl.col("reason_code").fill_null("?") + pl.lit("), grader ")
                          + pl.col("grader_verdict")).alias("detail"))
        if run_id is not None:
            extra = extra.filter(pl.col("run_id") == run_id)
        extra = extra.sort("trial_id", "run_id", "detail")  # as the queue's own ORDER BY
        q = pl.concat([q, extra], how="vertical_relaxed")
    root = runs_root or "<run dir>"
    return q.with_columns(pl.when(pl.col("trial_id").is_not_null())
                          .then(pl.lit(root + "/trials/") + pl.col("trial_id")).otherwise(None).alias("evidence"))


def _safe(fn, con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """An analysis over a table an older warehouse may lack: empty, never an error."""
    try:
        return fn(con)
    except duckdb.CatalogException:
        return pl.DataFrame()


def judged_and_reviewed(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict[str, pl.DataFrame]:
    """What the report's judgments-and-review section lays out, for the report's runs:
    judgments per configuration and calibration status, the calibrations, grader–reviewer
    agreement and review minutes (reviews of these runs' trials only)."""
    from analysis.judges import judgment_status

    try:
        status = judgment_status(con).filter(pl.col("run_id").is_in(run_ids))
    except duckdb.CatalogException:
        status = pl.DataFrame()
    by = pl.DataFrame()
    if status.height:
        by = (status.group_by(["config_id", "criterion_id", "judge_host", "judge_model", "calibration"])
              .agg(pl.len().alias("judgments"), (pl.col("verdict") == "passed").sum().alias("passed"),
                   (pl.col("verdict") == "failed").sum().alias("failed"),
                   pl.col("verdict").is_in(["abstained", "inconclusive"]).sum().alias("abstained"),
                   pl.col("kappa").first(), pl.col("kappa_low").first(), pl.col("kappa_high").first())
              .sort(["config_id", "criterion_id", "judge_host", "judge_model", "calibration"],
                    nulls_last=True))
    try:
        cal = con.sql("SELECT * EXCLUDE (run_id, ingest_batch_id) FROM judge_calibrations "
                      "ORDER BY calibrated_at").pl()
    except duckdb.CatalogException:
        cal = pl.DataFrame()

    agree = _safe(agreement, con)
    minutes = _safe(review_minutes, con)
    if run_ids and agree.height:
        configs = {r[0] for r in con.execute(
            "SELECT DISTINCT config_id FROM trials WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [run_ids]).fetchall()}
        agree = agree.filter(pl.col("config_id").is_in(configs))
        minutes = minutes.filter(pl.col("config_id").is_in(configs))
    return {"judgments": by, "calibrations": cal, "agreement": agree, "minutes": minutes}
