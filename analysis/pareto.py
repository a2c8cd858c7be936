"""Cost/quality Pareto front over configurations (full non-dominated set, optional convex)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, ClassVar

from analysis import stats
from analysis.data import CONFIG_KEYS
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by
from analysis.results import CONFIG_SCHEMA, RowsResult

if TYPE_CHECKING:
    import duckdb

X_CHOICES = ("cost_per_accepted", "cost_per_trial")




class Pareto(RowsResult):
    """One point per configuration [× slice]: cost (``x``) against rate, front membership."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "x_name": "String", "x": "Float64", "rate": "Float64",
        "ci_low": "Float64", "ci_high": "Float64", "solved": "Int64", "valid": "Int64",
        "on_front": "Boolean", "role": "String", "dominated_by": "List(String)",
        "overlap": "Boolean", "convex": "Boolean"}


def front_rows(points: list[dict], convex: bool = False,
               baselines: set[str] | frozenset[str] = frozenset()) -> list[dict]:
    """Mark front membership on rows with ``x``/``rate``/``ci_low``/``ci_high`` (x None = unknown).

    Configurations in ``baselines`` get ``role = "baseline"`` and stay out of the
    dominance computation (unless nothing else is there), so the front ranks agents.
    """
    contenders = [p for p in points if p["config_id"] not in baselines]
    if contenders and len(contenders) < len(points):
        ranked = front_rows(contenders, convex)
        by_id = {r["config_id"]: r for r in ranked}
        return [
            by_id[p["config_id"]] if p["config_id"] in by_id else
            dict(p, role="baseline", on_front=None, dominated_by=[], overlap=None, convex=None)
            for p in points
        ]
    placed = [i for i, p in enumerate(points) if p["x"] is not None and p["rate"] is not None]
    pts = [(points[i]["x"], points[i]["rate"]) for i in placed]
    dom = stats.pareto_front(pts)
    front = [j for j, d in enumerate(dom) if not d]
    hull = stats.convex_front(pts, front) if convex else set()
    out = [dict(p, role="agent", on_front=None, dominated_by=[], overlap=None, convex=None)
           for p in points]
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


def pareto(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
           x: str = "cost_per_accepted", convex: bool = False,
           by: list[str] | str | None = None) -> Pareto:
    """One point per configuration: (cost per accepted or per trial ↓, rate ↑) on common tasks.

    With ``by`` there is one front per slice (configurations compete only within their
    slice). Baselines (``analysis.eligibility``) are reference points: drawn, never ranked.
    """
    from analysis.eligibility import baseline_ids, eligibility
    from analysis.summary import summarize

    if x not in X_CHOICES:
        raise AnalysisError(f"--x {x!r}: choose cost_per_accepted or cost_per_trial")
    by_cols = check_by(by)
    summary = summarize(con, filters, by=by_cols, full=False)  # counts and cost only
    groups: dict[tuple, list[dict]] = {}
    for r in summary.rows:
        if x == "cost_per_accepted":
            xv = r["cost_per_solved"]
        else:
            xv = r["cost_usd"] / r["trials"] if r["cost_usd"] is not None and r["trials"] else None
        key = tuple(r[b] for b in by_cols)
        groups.setdefault(key, []).append(
            {**{k: r[k] for k in CONFIG_KEYS}, **{b: r[b] for b in by_cols}, "x_name": x,
             "x": xv, "rate": r["rate"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
             "solved": r["solved"], "valid": r["valid"]})
    baselines = baseline_ids(eligibility(con, (r["config_id"] for r in summary.rows)))
    rows = [row for points in groups.values() for row in front_rows(points, convex, baselines)]
    if by_cols:  # slices first, each in the summary's configuration order
        rows.sort(key=lambda r: tuple((r[b] is None, r[b] or "") for b in by_cols))
    unplaced = [r for r in rows if r["role"] != "baseline" and r["on_front"] is None]
    warnings = [f"{len(unplaced)} configuration(s) not placed: cost unknown"] if unplaced else []
    return Pareto(rows, by_cols, warnings)


def is_finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)
