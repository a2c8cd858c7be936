"""Check results by tier and by bank tag (docs/rollout.md, "Check tiers and the behaviour bank").

Per configuration and where the checks were graded (``trial``: the trial's own final grading;
``scheduled``: a ``run --tier scheduled`` regrade; ``regrade``: another regrade) and per value
of the slice (``tier``, or a bank tag ``tag.subsystem``, ``tag.mechanism``,
``tag.consequence``, ``tag.incident``): the final check gradings of the selection's valid
trials and how many passed, and the trials graded on the slice and how many passed every check
of it, each with a Wilson 95% interval (per grading, per trial). Where they were graded stays
apart: a scheduled regrade grades the fast and broad tiers again, and pooling would count a
trial's checks twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis.errors import AnalysisError
from analysis.filters import Filters
from analysis.jsonout import clean

if TYPE_CHECKING:
    import duckdb

SLICES = {"tier": "coalesce(k.tier, 'fast')", "tag.subsystem": "k.subsystem", "tag.mechanism": "k.mechanism",
          "tag.consequence": "k.consequence", "tag.incident": "k.incident"}
"""``--by`` value → its SQL over the ``criteria`` row ``k`` (fixed fragments, never input)."""

_GRADINGS_SQL = """
SELECT g.run_id, g.trial_id, g.criterion_id, g.verdict = 'passed' AS passed, {value} AS value,
       CASE WHEN t.regraded_from_run_id IS NULL THEN 'trial'
            WHEN json_extract_string(r.details_json, '$.tier') = 'scheduled' THEN 'scheduled'
            ELSE 'regrade' END AS graded_in
FROM gradings g
JOIN criteria k ON k.run_id = g.run_id AND k.case_id = g.case_id AND k.criterion_id = g.criterion_id
JOIN trials t ON t.run_id = g.run_id AND t.trial_id = g.trial_id
LEFT JOIN runs r ON r.run_id = g.run_id
WHERE g.final AND g.trial_id IS NOT NULL AND g.run_id IN (SELECT unnest(?::VARCHAR[]))
"""
_KEYS = ["config_id", "graded_in", "value"]


@dataclass(frozen=True)
class CheckResults:
    """Rows: ``config_id, variant, model, harness, harness_version, simulated, graded_in, by,
    value, checks, passed, pass_rate, pass_low, pass_high, trials, clean, clean_rate,
    clean_low, clean_high``."""

    by: str
    rows: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return clean({"by": self.by, "rows": self.rows, "warnings": self.warnings})

    def records(self) -> list[dict[str, Any]]:
        return clean(self.rows)


def check_results(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
                  by: str = "tier") -> CheckResults:
    """The selection's final check gradings by ``by`` (``SLICES``), per configuration."""
    import polars as pl

    from analysis.data import load_trials, require_trials
    from analysis.scope import resolve

    if by not in SLICES:
        raise AnalysisError(f"--by {by!r}: checks slice by one of {', '.join(SLICES)}")
    filters = resolve(con, filters or Filters())
    trials = load_trials(con, filters, columns=["run_id", "trial_id", "config_id", "variant", "model", "harness",
                                                "harness_version", "simulated", "complete", "valid"])
    require_trials(trials, filters)
    valid = trials.filter(pl.col("complete") & pl.col("valid"))
    sql = _GRADINGS_SQL.format(value=SLICES[by])  # a fixed fragment from SLICES
    graded = con.sql(sql, params=[valid["run_id"].unique().to_list()]).pl().join(
        valid, on=["run_id", "trial_id"], how="inner")
    if graded.height == 0:
        return CheckResults(by, [], ["no check grading among the selected trials"])
    per_trial = graded.group_by("run_id", "trial_id", *_KEYS).agg(pl.col("passed").all().alias("clean"))
    counts = graded.group_by(_KEYS).agg(pl.len().alias("checks"), pl.col("passed").sum().alias("passed")).join(
        per_trial.group_by(_KEYS).agg(pl.len().alias("trials"), pl.col("clean").sum().alias("clean")),
        on=_KEYS, how="left", nulls_equal=True)
    names = valid.sort("run_id", "trial_id").group_by("config_id").agg(
        *[pl.col(c).drop_nulls().first() for c in ("variant", "model", "harness", "harness_version")],
        pl.col("simulated").fill_null(False).any())
    rows = [_row(r, by) for r in counts.join(names, on="config_id", how="left").to_dicts()]
    rows.sort(key=lambda r: tuple((r[k] is None, str(r[k] or "")) for k in
                                  ("model", "harness", "harness_version", "config_id", "graded_in", "value")))
    warnings = []
    if by != "tier" and all(r["value"] is None for r in rows):
        warnings.append(f"no check in the selection has the {by} tag")
    return CheckResults(by, rows, warnings)


def _row(r: dict[str, Any], by: str) -> dict[str, Any]:
    from analysis.stats import wilson

    out = {k: r[k] for k in ("config_id", "variant", "model", "harness", "harness_version", "simulated",
                             "graded_in")}
    out.update(by=by, value=r["value"])
    for k, n, name in ((r["passed"], r["checks"], "pass"), (r["clean"], r["trials"], "clean")):
        low, high = wilson(int(k), int(n))
        out.update({f"{name}_rate": int(k) / int(n) if n else None, f"{name}_low": low, f"{name}_high": high})
    out.update(checks=int(r["checks"]), passed=int(r["passed"]), trials=int(r["trials"]), clean=int(r["clean"]))
    return out


def has_tiers_or_tags(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> bool:
    """Whether any criterion of these runs declares a tier other than fast or a bank tag
    (the report's section is shown only then)."""
    import duckdb
    try:
        rows = con.execute(
            "SELECT count(*) FROM criteria WHERE run_id IN (SELECT unnest(?::VARCHAR[])) AND "
            "(coalesce(tier, 'fast') <> 'fast' OR coalesce(subsystem, mechanism, consequence, incident) "
            "IS NOT NULL OR banked)", [run_ids]).fetchall()
    except duckdb.Error:  # a warehouse from before tiers has no such columns
        return False
    return bool(rows and rows[0][0])


def checks_table(result: CheckResults, caption: str | None = None) -> Any:
    """The results as one table, laid out alike in the terminal (``summarize --checks``) and
    the report's check-tiers section."""
    from analysis import formatting as fmt
    from analysis.document import Table, columns

    def share(k: int, n: int, lo: Any, hi: Any) -> str:
        return f"{fmt.pct(k, n)} [{fmt.interval(lo, hi)}]"

    rows = [[fmt.label_with_id(r), r["graded_in"], fmt.DASH if r["value"] is None else str(r["value"]),
             share(r["passed"], r["checks"], r["pass_low"], r["pass_high"]),
             share(r["clean"], r["trials"], r["clean_low"], r["clean_high"])] for r in result.rows]
    names = ["configuration", "graded in", result.by, "checks passed [95% CI]",
             "trials passing all [95% CI]"]
    return Table(caption or f"Checks by {result.by}", columns(names, [False, False, False, True, True], 3), rows)
