"""Cost/quality Pareto front over configurations (full non-dominated set, optional convex)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from analysis import stats
from analysis.data import CONFIG_KEYS
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

    from analysis.eligibility import Eligibility
    from analysis.summary import Summary

X_CHOICES = ("cost_per_accepted", "cost_per_trial", "median_steps")
"""The x axis (lower is better): cost per accepted result, cost per trial, or the median
steps of valid trials (steps as an axis of their own, where the source reports them)."""




class Pareto(RowsResult):
    """One point per configuration [× slice]: cost (``x``) against rate, front membership."""

    TASK_SETS: ClassVar[bool] = True
    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "universe": "String", "x_name": "String", "x": "Float64", "rate": "Float64",
        "ci_low": "Float64", "ci_high": "Float64", "solved": "Int64", "valid": "Int64",
        "on_front": "Boolean", "role": "String", "dominated_by": "List(String)",
        "overlap": "Boolean", "convex": "Boolean", "ineligible": "List(String)"}


def front_rows(points: list[dict], convex: bool = False,
               baselines: set[str] | frozenset[str] = frozenset(),
               ineligible: dict[str, tuple[str, ...]] | None = None) -> list[dict]:
    """Mark front membership on rows with ``x``/``rate``/``ci_low``/``ci_high`` (x None = unknown).

    Configurations in ``baselines`` get ``role = "baseline"`` and stay out of the
    dominance computation (unless nothing else is there), so the front ranks agents.
    Ineligible candidates (``ineligible``: config_id → reasons) get ``role =
    "ineligible"``, ``on_front = False`` and their reasons: never on the front, whatever
    their rate, and never dominating an eligible configuration.
    """
    ineligible = ineligible or {}
    if any(p["config_id"] in ineligible for p in points):
        ranked = front_rows([p for p in points if p["config_id"] not in ineligible], convex,
                            baselines)
        by_id = {r["config_id"]: (dict(r, role="baseline", on_front=None, dominated_by=[],
                                       overlap=None, convex=None)
                                  if r["config_id"] in baselines else r) for r in ranked}
        return [by_id[p["config_id"]] if p["config_id"] in by_id else
                dict(p, role="ineligible", on_front=False, dominated_by=[], overlap=None,
                     convex=None, ineligible=list(ineligible[p["config_id"]]))
                for p in points]
    contenders = [p for p in points if p["config_id"] not in baselines]
    if contenders and len(contenders) < len(points):
        ranked = front_rows(contenders, convex)
        by_id = {r["config_id"]: r for r in ranked}
        return [
            by_id[p["config_id"]] if p["config_id"] in by_id else
            dict(p, role="baseline", on_front=None, dominated_by=[], overlap=None, convex=None,
                 ineligible=[])
            for p in points
        ]
    placed = [i for i, p in enumerate(points) if p["x"] is not None and p["rate"] is not None]
    pts = [(points[i]["x"], points[i]["rate"]) for i in placed]
    dom = stats.pareto_front(pts)
    front = [j for j, d in enumerate(dom) if not d]
    hull = stats.convex_front(pts, front) if convex else set()
    out = [dict(p, role="agent", on_front=None, dominated_by=[], overlap=None, convex=None,
                ineligible=[]) for p in points]
    for j, i in enumerate(placed):
        out[i]["on_front"] = not dom[j]
        out[i]["dominated_by"] = [points[placed[k]]["config_id"] for k in dom[j]]
        if convex:
            out[i]["convex"] = j in hull
    dominated = [j for j, d in enumerate(dom) if d]
    for j, i in enumerate(placed):
        me = (points[i]["ci_low"], points[i]["ci_high"])
        others = dominated if not dom[j] else dom[j]
        flags = [stats.intervals_overlap(me, (points[placed[k]]["ci_low"],
                                              points[placed[k]]["ci_high"])) for k in others]
        out[i]["overlap"] = any(f for f in flags if f is not None)
    return out


def _x(row: dict, x: str) -> float | None:
    if x == "cost_per_accepted":
        return row["cost_per_accepted"]
    if x == "median_steps":
        return row["med_steps"]
    cost, trials = row["cost_usd"], row["trials"]
    return cost / trials if cost is not None and trials else None


def pareto(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
           x: str = "cost_per_accepted", convex: bool = False,
           by: list[str] | str | None = None) -> Pareto:
    """One point per configuration: (x ↓, rate ↑) on the common tasks of its universe.

    There is one front per task universe (and per slice with ``by``): configurations
    measured on different tasks never dominate each other. Baselines
    (``analysis.eligibility``) are reference points: drawn, never ranked.
    """
    from analysis.eligibility import assess
    from analysis.summary import summarize

    _check_x(x)
    # counts and cost only, unless the axis is the median steps
    summary = summarize(con, filters, by=check_by(by), full=x == "median_steps",
                        checks=False)
    return front(summary, assess(con, filters, (r["config_id"] for r in summary.rows)), x,
                 convex)


def _check_x(x: str) -> None:
    if x not in X_CHOICES:
        raise AnalysisError(f"--x {x!r}: choose {', '.join(X_CHOICES)}")


def front(summary: Summary, roles: Mapping[str, Eligibility], x: str = "cost_per_accepted",
          convex: bool = False) -> Pareto:
    """``pareto`` of a summary in hand (its slices, ``summary.by``): no query. ``roles``:
    the eligibility of its configurations (more is fine); the summary needs its medians
    (``full``) for ``x = median_steps``. A report draws both cost fronts from its one
    summary this way."""
    from analysis.eligibility import baseline_ids

    _check_x(x)
    by_cols = summary.by
    ids = {r["config_id"] for r in summary.rows}
    roles = {cid: e for cid, e in roles.items() if cid in ids}
    groups: dict[tuple, list[dict]] = {}
    for r in summary.rows:
        key = (r["universe"], *(r[b] for b in by_cols))
        groups.setdefault(key, []).append(
            {**{k: r[k] for k in CONFIG_KEYS}, "universe": r["universe"],
             **{b: r[b] for b in by_cols}, "x_name": x, "x": _x(r, x), "rate": r["rate"],
             "ci_low": r["ci_low"], "ci_high": r["ci_high"], "solved": r["solved"],
             "valid": r["valid"]})
    baselines = baseline_ids(roles)
    ineligible = {cid: e.reasons for cid, e in roles.items() if e.reasons}
    rows = [row for points in groups.values()
            for row in front_rows(points, convex, baselines, ineligible)]
    rows.sort(key=lambda r: (str(r["universe"]),
                             *((r[b] is None, r[b] or "") for b in by_cols)))  # stable
    unplaced = [r for r in rows if r["role"] != "baseline" and r["on_front"] is None]
    what = "median steps" if x == "median_steps" else "cost"
    warnings = [w for w in summary.warnings if w.startswith("cost coverage complete")]
    if unplaced:
        warnings.append(f"{len(unplaced)} configuration(s) not placed: {what} unknown"
                        + ("" if x == "median_steps" else
                           " (--cost-coverage complete keeps the trials with a known cost)"))
    warnings += [f"INELIGIBLE, never on the front: {cid[:12]}: {'; '.join(why)}"
                 for cid, why in sorted(ineligible.items())]
    if len(summary.universes) > 1:
        warnings.append(f"{len(summary.universes)} task universes: one front each, so no "
                        "configuration is compared with one measured on other tasks")
    return Pareto(rows, by_cols, warnings, universes=summary.universes)


def is_finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)
