"""Tables the terminal and the report lay out alike, built once from a result.

``trialhouse trajectory`` and the report's trajectory section print the same cells, so the
layout lives here, below both (``analysis.document``'s table), instead of in either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns

NOT_A_SCORE = ("Descriptions of how agents worked, not quality scores: read them next to outcomes.")
"""Said under every trajectory table: these metrics describe, they do not score."""


def _trajectory_cell(r: Mapping[str, Any], prefix: str) -> str:
    if r["metric"] == "final_check":
        share = r[f"{prefix}share"]
        count = r["n"] if not prefix else None
        if share is None:
            return fmt.DASH
        return fmt.rate(share) + ("" if count is None else f" ({fmt.count(count)})")
    if not r[f"{prefix}n"]:
        return fmt.DASH
    return (f"{fmt.number(r[f'{prefix}median'], 2)} / {fmt.number(r[f'{prefix}p90'], 2)}"
            f" (n={fmt.count(r[f'{prefix}n'])})")


def has_trajectory_data(r: Mapping[str, Any]) -> bool:
    """Whether a trajectory row says anything: a metric measured on some stage, or a
    ``final_check`` category other than a wholly unknown one (the report folds the rest)."""
    if r["metric"] == "final_check":
        return r["category"] != "unknown" or (r["share"] is not None and r["share"] < 1)
    return bool(r["n"] or r["accepted_n"] or r["other_n"])


def trajectory_table(rows: Sequence[Mapping[str, Any]],
                     label: Callable[[Mapping[str, Any]], str]) -> Table:
    """One row per configuration, stage and metric (``analysis.trajectory.summary``):
    median / p90 (n) over all stages, the accepted trials' and the others'; ``final_check``
    as shares of stages per category. ``label`` names a configuration's row."""
    return Table(
        "Trajectory metrics: median / p90 (final_check: share of stages)",
        columns(["configuration", "stage", "metric", "all", "accepted", "not accepted",
                 "unknown"], [False] * 3 + [True] * 4, identifying=3),
        [[label(r), r["stage"],
          r["metric"] if r["category"] is None else f"final_check: {r['category']}",
          _trajectory_cell(r, ""), _trajectory_cell(r, "accepted_"), _trajectory_cell(r, "other_"),
          fmt.count(r["unknown"])] for r in rows])
