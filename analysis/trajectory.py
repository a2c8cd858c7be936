"""Trajectory metrics over the warehouse: one function per question, each a polars DataFrame.

The definitions are ``analysis.trajectory_metrics`` (docs/trajectories.md); this module
reads the ``steps`` table for the selected trials (``analysis.filters.Filters``), groups
the rows by stage invocation (trial, attempt, stage) and applies them. Every row carries
the trial's configuration and outcome, because none of these metrics is a quality score:
they are read next to whether the trial was accepted (``by_configuration`` puts the two
side by side). Unknown stays unknown: a metric whose inputs are missing is null, and the
counts of what could be measured come with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from statistics import median
from typing import TYPE_CHECKING, Any, ClassVar

from analysis import trajectory_metrics as tm
from analysis.data import CONFIG_KEYS, load_trials, require_trials, trials_sql
from analysis.filters import Filters
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb
    import polars as pl

KEYS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "harness_version", "case_id", "outcome"]
STAGE_KEYS = [*KEYS, "attempt", "stage"]


@dataclass(frozen=True)
class StepRow:
    """One ``steps`` row with the attributes the metric functions read."""

    kind: str
    action: str | None
    tool: str | None
    command: str | None
    paths: tuple[str, ...]
    ok: bool | None
    exit_code: int | None
    started_at: datetime | None
    ended_at: datetime | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None


_STEPS_SQL = """
WITH sel AS ({trials})
SELECT {keys}, st.attempt, st.stage, s.step_index, s.kind, s.action, s.tool, s.command, s.paths_json, s.ok,
       s.exit_code, s.started_at, s.ended_at, s.input_tokens, s.output_tokens, s.cache_read_tokens,
       s.cache_write_tokens, st.started_at AS stage_started_at, tr.patch_paths_json
FROM stages st
JOIN sel ON sel.run_id = st.run_id AND sel.trial_id = st.trial_id
LEFT JOIN steps s ON s.run_id = st.run_id AND s.trial_id = st.trial_id AND s.attempt = st.attempt
                 AND s.stage = st.stage
LEFT JOIN trials tr ON tr.run_id = st.run_id AND tr.trial_id = st.trial_id
ORDER BY st.run_id, st.trial_id, st.attempt, st.stage, s.step_index NULLS FIRST
"""


def load_steps(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """The step rows of the selected trials' stages, in trajectory order, with each trial's
    configuration, outcome, its stage's start and its final patch's paths. A stage without
    any step row appears once with the step columns null (its metrics are unknown)."""
    trials, params = trials_sql(filters, KEYS)
    sql = _STEPS_SQL.format(trials=trials, keys=", ".join(f"sel.{k}" for k in KEYS))  # fixed fragments only
    return con.sql(sql, params=params).pl()


@dataclass
class _Stage:
    key: dict[str, Any]
    steps: list[StepRow]
    started_at: datetime | None
    patch_paths: list[str] | None


def _stages(con: duckdb.DuckDBPyConnection, filters: Filters | None) -> Iterator[_Stage]:
    frame = load_steps(con, filters)
    current: _Stage | None = None
    for row in frame.iter_rows(named=True):
        key = {k: row[k] for k in STAGE_KEYS}
        if current is None or current.key != key:
            if current is not None:
                yield current
            patch = json.loads(row["patch_paths_json"]) if row["patch_paths_json"] is not None else None
            current = _Stage(key, [], row["stage_started_at"], patch)
        if row["kind"] is None:  # a stage without a trajectory
            continue
        current.steps.append(StepRow(
            row["kind"], row["action"], row["tool"], row["command"],
            tuple(json.loads(row["paths_json"] or "[]")), row["ok"], row["exit_code"], row["started_at"],
            row["ended_at"], row["input_tokens"], row["output_tokens"], row["cache_read_tokens"],
            row["cache_write_tokens"]))
    if current is not None:
        yield current


def _per_stage(con: duckdb.DuckDBPyConnection, filters: Filters | None,
               metric: Callable[[_Stage], dict[str, Any]], schema: dict[str, Any]) -> pl.DataFrame:
    import polars as pl

    unknown = dict.fromkeys(schema)  # a stage without a trajectory: every metric unknown, never 0
    rows = [{**s.key, "accepted": s.key["outcome"] == "accepted", **(metric(s) if s.steps else unknown)}
            for s in _stages(con, filters)]
    base = {k: pl.Utf8 for k in KEYS} | {"attempt": pl.Int32, "stage": pl.Utf8, "accepted": pl.Boolean}
    return pl.DataFrame(rows, schema={**base, **schema}, orient="row")


def _float():
    import polars as pl

    return pl.Float64


def _int():
    import polars as pl

    return pl.Int64


def repeated_calls(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per stage: tool calls identical to an earlier one with no edit in between."""
    def metric(s: _Stage) -> dict[str, Any]:
        r = tm.repeated_calls(s.steps)
        return {"repeats": r.repeats, "tool_calls": r.tool_calls, "share": r.share}

    return _per_stage(con, filters, metric, {"repeats": _int(), "tool_calls": _int(), "share": _float()})


def failed_check_to_edit(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                         pattern: str | None = None) -> pl.DataFrame:
    """Per stage: seconds from a failed check to the next edit (median and max over the
    stage's recoveries), failed checks never followed by an edit, pairs without times.
    ``pattern``: only commands matching it count as checks (e.g. ``pytest|npm test``)."""
    rx = re.compile(pattern) if pattern else None

    def metric(s: _Stage) -> dict[str, Any]:
        r = tm.failed_check_to_edit(s.steps, rx)
        return {"recoveries": len(r.seconds), "median_s": median(r.seconds) if r.seconds else None,
                "max_s": max(r.seconds) if r.seconds else None, "unanswered": r.unanswered, "untimed": r.untimed}

    return _per_stage(con, filters, metric, {"recoveries": _int(), "median_s": _float(), "max_s": _float(),
                                             "unanswered": _int(), "untimed": _int()})


def outside_reads(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per stage: distinct files read outside the subsystems (first directory) the trial's
    final patch touches; null when the patch is empty or was not recorded."""
    def metric(s: _Stage) -> dict[str, Any]:
        r = tm.outside_reads(s.steps, s.patch_paths or [])
        if r is None:
            return {"outside": None, "read": None, "share": None, "subsystems": None}
        return {"outside": r.outside, "read": r.read, "share": r.share, "subsystems": ",".join(r.subsystems)}

    return _per_stage(con, filters, metric, {"outside": _int(), "read": _int(), "share": _float(),
                                             "subsystems": _str()})


def _str():
    import polars as pl

    return pl.Utf8


def final_check(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                pattern: str | None = None) -> pl.DataFrame:
    """Per stage: whether the last check ran after the last edit, and passed
    (``passed_after_last_edit`` / ``failed_after_last_edit`` / ``edited_after_last_check`` /
    ``no_check`` / ``no_edit``)."""
    rx = re.compile(pattern) if pattern else None
    return _per_stage(con, filters, lambda s: {"final_check": tm.final_check(s.steps, rx)},
                      {"final_check": _str()})


def time_to_first_edit(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per stage: seconds from the stage's start to the end of its first edit."""
    return _per_stage(con, filters, lambda s: {"seconds": tm.time_to_first_edit(s.steps, s.started_at)},
                      {"seconds": _float()})


def model_vs_tool_time(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per stage: seconds in model turns and in tool calls (steps with both times), the
    model's share, and how many steps had no times."""
    def metric(s: _Stage) -> dict[str, Any]:
        r = tm.model_vs_tool_time(s.steps)
        return {"model_s": r.model_s, "tool_s": r.tool_s, "model_share": r.model_share, "untimed": r.untimed,
                "why_unknown": r.why_unknown}

    return _per_stage(con, filters, metric, {"model_s": _float(), "tool_s": _float(), "model_share": _float(),
                                             "untimed": _int(), "why_unknown": _str()})


def tokens_per_step(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per stage: mean tokens per model turn (over turns that reported input and output)."""
    def metric(s: _Stage) -> dict[str, Any]:
        r = tm.tokens_per_step(s.steps)
        return {"mean_tokens": r.mean, "counted": r.counted, "model_turns": r.model_turns}

    return _per_stage(con, filters, metric, {"mean_tokens": _float(), "counted": _int(), "model_turns": _int()})


NUMERIC = {
    "repeated_share": (repeated_calls, "share"),
    "failed_check_to_edit_s": (failed_check_to_edit, "median_s"),
    "outside_read_share": (outside_reads, "share"),
    "time_to_first_edit_s": (time_to_first_edit, "seconds"),
    "model_share": (model_vs_tool_time, "model_share"),
    "tokens_per_step": (tokens_per_step, "mean_tokens"),
}
"""Metric name → (per-stage question, its column) summarised by ``by_configuration``."""


def by_configuration(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> pl.DataFrame:
    """Per configuration, stage and metric, the distribution among accepted trials beside
    the one among the others: ``n`` (stages measured), ``unknown`` (stages where the
    metric is null), median and quartiles (linear interpolation). ``final_check`` is
    summarised as the share of stages in each category (``value``)."""
    import polars as pl

    parts = []
    group = ["config_id", "variant", "model", "harness", "harness_version", "stage", "accepted"]
    for name, (question, column) in NUMERIC.items():
        frame = question(con, filters)
        parts.append(frame.group_by(group).agg(
            pl.lit(name).alias("metric"), pl.lit(None, pl.Utf8).alias("category"),
            pl.col(column).is_not_null().sum().cast(pl.Int64).alias("n"),
            pl.col(column).is_null().sum().cast(pl.Int64).alias("unknown"),
            pl.col(column).median().alias("median"),
            pl.col(column).quantile(0.25, "linear").alias("p25"),
            pl.col(column).quantile(0.75, "linear").alias("p75"),
            pl.lit(None, pl.Float64).alias("value"),
        ))
    checks = final_check(con, filters)
    totals = checks.group_by(group).agg(pl.len().alias("stages"))
    shares = (checks.group_by([*group, "final_check"]).agg(pl.len().alias("k"))
              .join(totals, on=group, nulls_equal=True)
              .select(*group, pl.lit("final_check").alias("metric"), pl.col("final_check").alias("category"),
                      pl.col("k").cast(pl.Int64).alias("n"), pl.lit(0, pl.Int64).alias("unknown"),
                      pl.lit(None, pl.Float64).alias("median"), pl.lit(None, pl.Float64).alias("p25"),
                      pl.lit(None, pl.Float64).alias("p75"), (pl.col("k") / pl.col("stages")).alias("value")))
    parts.append(shares)
    out = pl.concat([p.select(shares.columns) for p in parts], how="vertical_relaxed")
    return out.sort(["config_id", "stage", "metric", "category", "accepted"], nulls_last=True)


class TrajectorySummary(RowsResult):
    """Per configuration, stage and metric (``trialhouse trajectory``): the distribution over
    all stages (``n`` measured, ``unknown``, median, p90) and the same among the stages of
    accepted trials (``accepted_*``) and of the others (``other_*``). ``final_check`` has one
    row per category, with ``share`` of the stages in it (all, accepted, others) instead of
    quantiles. A description next to outcomes, never a score."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "stage": "String", "metric": "String", "category": "String",
        "stages": "Int64", "n": "Int64", "unknown": "Int64", "median": "Float64", "p90": "Float64",
        "accepted_n": "Int64", "accepted_median": "Float64", "accepted_p90": "Float64",
        "other_n": "Int64", "other_median": "Float64", "other_p90": "Float64",
        "share": "Float64", "accepted_share": "Float64", "other_share": "Float64"}


def summary(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> TrajectorySummary:
    """The trajectory metrics per configuration and stage, accepted trials beside the others.

    Quantiles are linear-interpolated over the stages where the metric is known; a stage
    without any step row counts as ``unknown`` for every metric (and in no ``final_check``
    category's numerator). Raises ``AnalysisError`` when no trial matches ``filters``."""
    import polars as pl

    filters = filters or Filters()
    require_trials(load_trials(con, filters, columns=["trial_id"]), filters)
    group = [*CONFIG_KEYS, "stage"]
    frames = {name: question(con, filters).select(*group, "accepted", pl.col(column).alias("x"))
              for name, (question, column) in NUMERIC.items()}

    def dist(x: pl.Expr, prefix: str) -> list[pl.Expr]:
        return [x.count().cast(pl.Int64).alias(f"{prefix}n"), x.median().alias(f"{prefix}median"),
                x.quantile(0.9, "linear").alias(f"{prefix}p90")]

    rows: list[dict[str, Any]] = []
    for name, frame in frames.items():
        x, acc = pl.col("x"), pl.col("accepted")
        out = frame.group_by(group).agg(
            pl.len().cast(pl.Int64).alias("stages"), *dist(x, ""), x.is_null().sum().cast(pl.Int64).alias("unknown"),
            *dist(x.filter(acc), "accepted_"), *dist(x.filter(~acc), "other_"))
        rows += out.with_columns(pl.lit(name).alias("metric")).to_dicts()
    checks = final_check(con, filters)
    totals = checks.group_by(group).agg(pl.len().alias("stages"), pl.col("accepted").sum().alias("acc"),
                                        (~pl.col("accepted")).sum().alias("rest"),
                                        pl.col("final_check").is_null().sum().alias("unknown"))
    for r in checks.join(totals, on=group, nulls_equal=True).group_by([*group, "final_check"]).agg(
            pl.len().cast(pl.Int64).alias("n"), pl.col("accepted").sum().alias("k_acc"),
            (~pl.col("accepted")).sum().alias("k_rest"), pl.col("stages").first().cast(pl.Int64),
            pl.col("acc").first(), pl.col("rest").first(), pl.col("unknown").first().cast(pl.Int64)).to_dicts():
        rows.append({**{k: r[k] for k in group}, "metric": "final_check", "category": r["final_check"] or "unknown",
                     "stages": r["stages"], "n": r["n"], "unknown": r["unknown"],
                     "accepted_n": r["k_acc"], "other_n": r["k_rest"], "share": r["n"] / r["stages"],
                     "accepted_share": r["k_acc"] / r["acc"] if r["acc"] else None,
                     "other_share": r["k_rest"] / r["rest"] if r["rest"] else None})
    order = {m: i for i, m in enumerate([*NUMERIC, "final_check"])}
    rows.sort(key=lambda r: (str(r["model"]), str(r["harness"]), str(r["harness_version"]), str(r["config_id"]),
                             str(r["stage"]), order[r["metric"]], str(r.get("category") or "")))
    warnings = []
    if all(r["n"] == 0 for r in rows if r["metric"] != "final_check"):
        warnings.append("no trajectory steps recorded for the selected trials: every metric is unknown")
    return TrajectorySummary([{c: r.get(c) for c in TrajectorySummary.SCHEMA} for r in rows], warnings=warnings)
