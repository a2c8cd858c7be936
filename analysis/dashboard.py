"""Dashboard rates: target-fix, regression-free and accepted rates and review minutes per
accepted result, side by side per configuration (docs/rollout.md, "Dashboard rates").

The rates count the selection's valid trials (the valid-trial rule, ``analysis.data``) as
the stop rules do (``analysis.rules_check``): what a rule's threshold is set against is
what the dashboard shows. Target-fixed and regression-free come from ``analysis.layer_rates``
(the one definition each), review minutes per accepted result from
``analysis.review.minutes_per_accepted``. Intervals: Wilson 95% per trial for the rates
(docs/analysis.md), and for the minutes a ratio over tasks with a CR1 task-clustered
standard error and t(G−1) (``analysis.stats.ratio_ci``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis.filters import Filters
from analysis.jsonout import clean

if TYPE_CHECKING:
    import duckdb
    import polars as pl

_COLUMNS = ["run_id", "trial_id", "config_id", "variant", "model", "harness", "harness_version",
            "universe", "case_id", "complete", "valid", "solved", "simulated"]
KEYS = ["config_id", "universe"]
RATES = ("target_fix", "regression_free", "accepted")
"""Each rate's row keys: ``<rate>`` (k), ``<rate>_n``, ``<rate>_rate``, ``<rate>_low``, ``<rate>_high``."""


@dataclass(frozen=True)
class Dashboard:
    """One row per configuration × task universe (keys in docs/rollout.md)."""

    rows: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return clean({"rows": self.rows, "warnings": self.warnings})

    def records(self) -> list[dict[str, Any]]:
        return clean(self.rows)


def dashboard(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Dashboard:
    """The four dashboard figures of every configuration in the selection."""
    import polars as pl

    from analysis.data import load_trials, require_trials
    from analysis.layer_rates import regression_free, target_fixed
    from analysis.scope import resolve

    filters = resolve(con, filters or Filters())
    trials = load_trials(con, filters, columns=_COLUMNS)
    require_trials(trials, filters)
    valid = trials.filter(pl.col("complete") & pl.col("valid"))
    target = target_fixed(con, valid).group_by(KEYS).agg(
        pl.col("target_passed").sum().alias("target_fix"), pl.len().alias("target_fix_n"))
    regr = regression_free(con, valid).group_by(KEYS).agg(
        (~pl.col("broke")).sum().alias("regression_free"), pl.len().alias("regression_free_n"))
    acc = valid.group_by(KEYS).agg(pl.col("solved").sum().alias("accepted"), pl.len().alias("accepted_n"))
    names = trials.sort("run_id", "trial_id").group_by(KEYS).agg(
        *[pl.col(c).drop_nulls().first() for c in ("variant", "model", "harness", "harness_version")],
        pl.col("simulated").fill_null(False).any())
    frame = (names.join(acc, on=KEYS, how="left").join(target, on=KEYS, how="left")
             .join(regr, on=KEYS, how="left"))
    minutes = _review_minutes(con, trials)
    rows = [_row(r, minutes.get((r["config_id"], r["universe"]))) for r in frame.to_dicts()]
    rows.sort(key=lambda r: tuple((r[k] is None, r[k] or "") for k in
                                  ("universe", "model", "harness", "harness_version", "config_id")))
    return Dashboard(rows, _warnings(rows))


def _row(r: dict[str, Any], minutes: dict[str, Any] | None) -> dict[str, Any]:
    from analysis.stats import wilson

    out = {k: r[k] for k in ("config_id", "variant", "model", "harness", "harness_version",
                             "universe", "simulated")}
    for rate in RATES:
        k, n = int(r[rate] or 0), int(r[f"{rate}_n"] or 0)
        low, high = wilson(k, n)
        out.update({rate: k, f"{rate}_n": n, f"{rate}_rate": k / n if n else None,
                    f"{rate}_low": low, f"{rate}_high": high})
    m = minutes or {}
    out.update(reviewed=m.get("reviewed", 0), review_minutes_known=m.get("minutes_known", 0),
               accepted_by_review=m.get("accepted_by_review", 0),
               review_minutes_per_accepted=m.get("minutes_per_accepted"),
               review_minutes_low=m.get("low"), review_minutes_high=m.get("high"),
               review_tasks=m.get("clusters", 0))
    return out


def _review_minutes(con: duckdb.DuckDBPyConnection, trials: pl.DataFrame) -> dict[tuple, dict]:
    """Per (config, universe): ``minutes_per_accepted`` over the latest reviews of the
    selection's trials, with its interval over tasks (a review of a trial outside the
    selection is not counted)."""
    import duckdb as ddb
    import polars as pl

    from analysis.review import minutes_per_accepted, reviews
    from analysis.stats import ratio_ci

    try:
        rev = reviews(con)
    except ddb.CatalogException:  # a warehouse from before reviews
        return {}
    rev = rev.drop("config_id", "variant", "case_id").join(
        trials.select("run_id", "trial_id", *KEYS, "variant", "case_id"),
        left_on=["trial_run_id", "trial_id"], right_on=["run_id", "trial_id"], how="inner")
    if rev.height == 0:
        return {}
    out = {(r["config_id"], r["universe"]): r for r in minutes_per_accepted(rev, KEYS).to_dicts()}
    per_task = (rev.group_by(*KEYS, "case_id")
                .agg(pl.col("minutes").fill_null(0.0).sum().alias("m"),
                     (pl.col("decision") == "accept").sum().alias("a")).sort(*KEYS, "case_id"))
    for key, g in per_task.group_by(KEYS, maintain_order=True):
        ci = ratio_ci(list(zip(g["m"].to_list(), g["a"].to_list(), strict=True)))
        out[tuple(key)].update(low=ci["low"], high=ci["high"], clusters=ci["clusters"])
    return out


def _warnings(rows: list[dict[str, Any]]) -> list[str]:
    from analysis import formatting as fmt

    out = []
    for r in rows:
        name = fmt.label(r)
        if r["accepted_n"] and not r["target_fix_n"]:
            out.append(f"{name}: no target-layer grading recorded (a foreign source, or a run "
                       "without gradings): target-fix rate unknown")
        if r["reviewed"] and r["review_minutes_known"] < r["reviewed"]:
            out.append(f"{name}: review minutes recorded for {r['review_minutes_known']} of "
                       f"{r['reviewed']} reviews (the rest count as none)")
    return out


def dashboard_table(result: Dashboard, caption: str = "Dashboard rates") -> Any:
    """The dashboard as one table, laid out alike in the terminal (``summarize --rates``)
    and the report's dashboard section."""
    from analysis import formatting as fmt
    from analysis.document import Table, columns

    def rate(r: dict[str, Any], key: str) -> str:
        if not r[f"{key}_n"]:
            return fmt.DASH
        return f"{fmt.pct(r[key], r[f'{key}_n'])} [{fmt.interval(r[f'{key}_low'], r[f'{key}_high'])}]"

    def minutes(r: dict[str, Any]) -> str:
        v = r["review_minutes_per_accepted"]
        if v is None:
            return fmt.DASH if not r["reviewed"] else f"— ({r['reviewed']} reviewed, none accepted)"
        lo, hi = r["review_minutes_low"], r["review_minutes_high"]
        ci = f" [{fmt.number(lo, 1)}–{fmt.number(hi, 1)}]" if lo is not None else ""
        return f"{fmt.number(v, 1)}{ci} ({r['accepted_by_review']} accepted)"

    rows = [[fmt.label_with_id(r), str(r["universe"]), fmt.count(r["accepted_n"]),
             rate(r, "target_fix"), rate(r, "regression_free"), rate(r, "accepted"), minutes(r)]
            for r in result.rows]
    names = ["configuration", "universe", "valid", "target fixed [95% CI]",
             "regression-free [95% CI]", "accepted [95% CI]", "review min / accepted [95% CI]"]
    return Table(caption, columns(names, [False, False, True, True, True, True, True], 2), rows)
