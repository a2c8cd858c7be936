"""Observational cohorts laid out alike in the terminal (``trialhouse cohorts``) and the report's
cohort section: each cohort beside the benchmark, and the control groups (docs/rollout.md)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns


def _config(r: dict[str, Any]) -> str:
    return fmt.config_label(r.get("variant"), r.get("model"), r.get("harness"), r.get("harness_version"),
                            r.get("config_id")) if (r.get("variant") or r.get("model")) else str(r.get("config_id"))


def _bench(b: dict[str, Any] | None) -> str:
    if b is None:
        return "not in this selection"
    return f"{fmt.pct(b['solved'], b['valid'])} [{fmt.interval(b['low'], b['high'])}]"


def cohort_table(result: Any) -> Table:
    """One row per (cohort, configuration): merged, reverted, incidents, review minutes, benchmark."""
    return Table(
        "Cohorts beside the benchmark (observational: not an effect)",
        columns(["cohort", "configuration", "tickets", "merged [95% CI]", "reverted of merged",
                 "incidents", "review min (median)", "benchmark accepted [95% CI]"],
                [False, False, True, False, False, True, True, False], identifying=2),
        [[r["cohort"], _config(r), fmt.count(r["tickets"]),
          f"{fmt.pct(r['merged'], r['tickets'])} [{fmt.interval(r['merge_low'], r['merge_high'])}]",
          fmt.pct(r["reverted"], r["merged"]), fmt.count(r["incidents"]),
          f"{fmt.number(r['review_median'])} (known {r['review_known']}/{r['tickets']})",
          _bench(r["benchmark"])] for r in result.rows])


def control_table(result: Any) -> Table:
    """One row per cohort with a randomised control group: arms, landed shares, the difference."""
    rows = []
    for c in result.controls:
        arm = {k: f"{fmt.pct(v['landed'], v['tickets'])}" + (f" ({', '.join(v['configs'])})" if v["configs"] else "")
               for k, v in c.arms.items()}
        diff = (fmt.diff_ci(c.difference, c.low, c.high) if c.difference is not None
                else "; ".join(c.warnings) or fmt.DASH)
        rows.append([c.cohort, arm.get("treatment", fmt.DASH), arm.get("control", fmt.DASH), diff,
                     ", ".join(c.seeds) or fmt.DASH])
    return Table(
        "Randomised control groups: landed (merged, not reverted) per arm",
        columns(["cohort", "treatment landed", "control landed", "difference [95% CI, Newcombe]", "seed"],
                identifying=1),
        rows)
