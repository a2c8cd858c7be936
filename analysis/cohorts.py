"""Observational cohorts beside the benchmark, and a randomised control group's two-arm
comparison (docs/rollout.md, "Observational cohorts").

Cohort tickets live in ``cohort_tickets``, never in ``trials``: no paired comparison, rate or
Pareto front reads them. Here each (cohort, configuration) gets its counts — merged, reverted,
incidents, review minutes — next to the same configuration's benchmark acceptance in the
selection, with the caveat that the two are not comparable as an effect. Tickets assigned to
arms at random (``arm``, ``assignment_seed``) get a proper comparison: the difference in the
share of tickets whose change landed (merged, not reverted), treatment − control, with a
Newcombe hybrid-score 95% interval (two Wilson intervals, analysis.stats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from analysis.filters import Filters
from analysis.jsonout import clean
from analysis.stats import wilson

if TYPE_CHECKING:
    import duckdb

CAVEAT = ("Observational: these tickets were chosen by the team's daily work, not drawn like the "
          "benchmark's tasks; they differ in repository, difficulty and reviewer, and nobody decided "
          "at random which configuration got which ticket (except in a randomised control group). A "
          "difference between a cohort's figures and the benchmark's is not an effect of the "
          "configuration, and cohorts never enter a comparison, a rate or a Pareto front.")

LATEST = """
WITH latest AS (
  SELECT * FROM cohort_tickets
  QUALIFY row_number() OVER (PARTITION BY cohort, ticket ORDER BY ingest_batch_id DESC) = 1
)"""
"""Each (cohort, ticket) once: the latest ingest of it (an updated export replaces a ticket)."""

_BY_CONFIG = LATEST + """
SELECT cohort, config_id, variant, model, harness, harness_version,
       count(*) AS tickets, count(*) FILTER (WHERE opened) AS opened,
       count(*) FILTER (WHERE merged) AS merged, count(*) FILTER (WHERE reverted) AS reverted,
       sum(incidents) AS incidents, count(review_minutes) AS review_known,
       median(review_minutes) AS review_median, sum(review_minutes) AS review_total
FROM latest
WHERE coalesce(config_id, variant, model) IS NOT NULL
GROUP BY ALL
ORDER BY cohort, model NULLS LAST, variant NULLS LAST, config_id NULLS LAST
"""

_ARMS = LATEST + """
SELECT cohort, arm, count(*) AS tickets, count(*) FILTER (WHERE merged AND NOT reverted) AS landed,
       list(DISTINCT assignment_seed ORDER BY assignment_seed) AS seeds,
       list(DISTINCT coalesce(variant, config_id, model) ORDER BY coalesce(variant, config_id, model))
         FILTER (WHERE coalesce(variant, config_id, model) IS NOT NULL) AS configs
FROM latest WHERE arm IS NOT NULL
GROUP BY cohort, arm ORDER BY cohort, arm
"""


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float | None, float | None, float | None]:
    """p1 − p2 with the Newcombe hybrid-score 95% interval (method 10 of Newcombe 1998)."""
    if not n1 or not n2:
        return None, None, None
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    assert None not in (l1, u1, l2, u2)
    d = p1 - p2
    low = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)  # type: ignore[operator]
    high = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)  # type: ignore[operator]
    return d, low, high


@dataclass(frozen=True)
class ControlGroup:
    """A cohort's randomised arms: tickets and landed changes per arm, the difference, the seed."""

    cohort: str
    arms: dict[str, dict[str, Any]]
    seeds: list[str]
    difference: float | None
    low: float | None
    high: float | None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return clean({"cohort": self.cohort, "arms": self.arms, "seeds": self.seeds,
                      "metric": "landed (merged, not reverted) / tickets", "difference": self.difference,
                      "low": self.low, "high": self.high, "interval": "newcombe hybrid score, 95%",
                      "warnings": self.warnings})


@dataclass(frozen=True)
class Cohorts:
    """Per (cohort, configuration): ticket counts and rates, beside the configuration's benchmark
    acceptance in the selection (``benchmark``: valid, solved, rate, low, high; None when the
    configuration has no trial there). ``controls``: one two-arm comparison per cohort."""

    rows: list[dict[str, Any]]
    controls: list[ControlGroup]
    caveat: str = CAVEAT

    def as_dict(self) -> dict[str, Any]:
        return {"caveat": self.caveat, "rows": clean(self.rows), "controls": [c.as_dict() for c in self.controls]}


def _benchmark(con: duckdb.DuckDBPyConnection, filters: Filters, config_ids: list[str]) -> dict[str, dict]:
    import polars as pl

    from analysis.data import load_trials
    from analysis.scope import resolve

    if not config_ids:
        return {}
    trials = load_trials(con, resolve(con, filters), columns=["config_id", "valid", "solved"],
                         config_ids=config_ids)
    out = {}
    for cid, valid, solved in (trials.group_by("config_id")
                               .agg(pl.col("valid").sum(),
                                    (pl.col("valid") & pl.col("solved")).sum().alias("solved"))
                               .iter_rows()):
        low, high = wilson(int(solved), int(valid))
        out[cid] = {"valid": int(valid), "solved": int(solved),
                    "rate": solved / valid if valid else None, "low": low, "high": high}
    return out


def _row(r: dict[str, Any], bench: dict[str, dict]) -> dict[str, Any]:
    merge_low, merge_high = wilson(r["merged"], r["tickets"])
    revert_low, revert_high = wilson(r["reverted"], r["merged"])
    return {**r, "merge_rate": r["merged"] / r["tickets"], "merge_low": merge_low, "merge_high": merge_high,
            "revert_rate": r["reverted"] / r["merged"] if r["merged"] else None,
            "revert_low": revert_low, "revert_high": revert_high,
            "review_minutes_per_merged": (r["review_total"] / r["merged"]
                                          if r["merged"] and r["review_known"] == r["tickets"] else None),
            "benchmark": bench.get(r["config_id"]) if r["config_id"] else None}


def _control(cohort: str, arms: list[dict[str, Any]]) -> ControlGroup:
    by = {a["arm"]: {"tickets": a["tickets"], "landed": a["landed"], "configs": a["configs"] or [],
                     "rate": a["landed"] / a["tickets"]} for a in arms}
    seeds = sorted({s for a in arms for s in a["seeds"] if s is not None})
    warnings = []
    if len(seeds) > 1:
        warnings.append(f"{len(seeds)} assignment seeds ({', '.join(seeds)}): one randomisation was expected")
    missing = [arm for arm in ("treatment", "control") if arm not in by]
    if missing:
        warnings.append(f"no {' or '.join(missing)} arm: nothing to compare")
        return ControlGroup(cohort, by, seeds, None, None, None, warnings)
    t, c = by["treatment"], by["control"]
    d, low, high = newcombe(t["landed"], t["tickets"], c["landed"], c["tickets"])
    return ControlGroup(cohort, by, seeds, d, low, high, warnings)


def cohorts(con: duckdb.DuckDBPyConnection, filters: Filters | None = None) -> Cohorts:
    """Every cohort's figures per configuration, beside the benchmark in ``filters``'s selection."""
    cur = con.execute(_BY_CONFIG)
    names = [d[0] for d in cur.description]
    raw = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    bench = _benchmark(con, (filters or Filters()).without_config_selectors(),
                       sorted({r["config_id"] for r in raw if r["config_id"]}))
    cur = con.execute(_ARMS)
    names = [d[0] for d in cur.description]
    arms = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    controls = [_control(cohort, [a for a in arms if a["cohort"] == cohort])
                for cohort in sorted({a["cohort"] for a in arms})]
    return Cohorts([_row(r, bench) for r in raw], controls)


def has_cohorts(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(con.execute("SELECT count(*) FROM cohort_tickets").fetchall()[0][0])
