"""Budget sweeps: a variant that lists several budgets is one configuration per value.

A variant whose ``max_cost_usd`` (or ``timeout_seconds``) is a list — ``[0.5, 1, 2, 4]`` —
declares a sweep. ``expand_sweeps`` replaces it, in place, by one variant per value that
shares everything but that budget: id ``<id>-usd0.5`` (``<id>-60s`` for time), ``sweep``
the declared id. The budget is part of ``config_id``, so every point is a configuration of
its own; analyses find the points again by ``configs.sweep`` (docs/analysis.md,
"budget-curve"). An expanded manifest is a manifest like any other: validating it again
changes nothing (a remote worker does), and hand-written points with a common ``sweep``
are held to the same rule (docs/runner.md, "Budgets and budget sweeps").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from runner.manifest.values import CASE_VARIANT_ID_MAX
from runner.manifest.variants import BUDGET_FIELDS, Variant

MAX_VARIANTS = 8
"""Most variants a manifest declares, a sweep counting once."""
MAX_CONFIGURATIONS = 32
"""Most configurations once every sweep is expanded."""


def point_id(variant_id: str, budget: str, value: float) -> str:
    """The id of one sweep point: ``fixer-usd0.5`` (a spend limit), ``fixer-60s`` (a time budget)."""
    return f"{variant_id}-usd{value:g}" if budget == "max_cost_usd" else f"{variant_id}-{value:g}s"


def sweep_budget(members: Sequence[Variant]) -> str | None:
    """The budget field the points of one sweep differ in (None: not exactly one)."""
    differing = [f for f in BUDGET_FIELDS if len({getattr(v, f) for v in members}) > 1]
    return differing[0] if len(differing) == 1 else None


def _points(v: Variant) -> list[str]:
    budget = v.swept()
    return [point_id(v.id, budget, x) for x in getattr(v, budget)] if budget else [v.id]


def _tagged_problems(variants: Sequence[Variant]) -> list[str]:
    """Hand-written (or already expanded) points: two or more per sweep, one budget apart."""
    out = []
    groups: dict[str, list[Variant]] = {}
    for v in variants:
        if v.sweep is not None:
            groups.setdefault(v.sweep, []).append(v)
    for sweep, members in groups.items():
        budget = sweep_budget(members)
        where = f"variants of sweep {sweep} ({', '.join(v.id for v in members)})"
        if len(members) < 2:
            out.append(f"{where}: a sweep needs at least two budget points")
        elif budget is None or any(getattr(v, budget) is None for v in members):
            out.append(f"{where}: the points must each set, and differ in, exactly one budget "
                       f"({' or '.join(BUDGET_FIELDS)})")
        elif len({v.model_dump_json(exclude={"id", budget}) for v in members}) > 1:
            out.append(f"{where}: the points of a sweep may differ only in their id and {budget}")
    return out


def sweep_problems(variants: Sequence[Variant]) -> list[str]:
    """Why these variants cannot be expanded and run (empty when they can)."""
    declared = len({v.sweep or v.id for v in variants})
    if declared > MAX_VARIANTS:
        return [f"variants: at most {MAX_VARIANTS} (a sweep counts once), found {declared}"]
    ids = [p for v in variants for p in _points(v)]
    out = []
    if len(ids) > MAX_CONFIGURATIONS:
        out.append(f"variants: the sweeps expand to {len(ids)} configurations; at most {MAX_CONFIGURATIONS}")
    for v in variants:
        if v.swept() is None:
            continue
        for pid in _points(v):
            if ids.count(pid) > 1:
                out.append(f"variant {v.id}: its sweep point {pid} has the id of another variant")
            if len(pid) > CASE_VARIANT_ID_MAX:
                out.append(f"variant {v.id}: its sweep point id {pid[:40]}… is longer than "
                           f"{CASE_VARIANT_ID_MAX} characters; shorten the variant id")
    return out + _tagged_problems(variants)


def _expanded(v: Variant) -> list[dict[str, Any]]:
    budget = v.swept()
    if budget is None:
        return [v.model_dump(mode="json", exclude_unset=True)]
    base = v.model_dump(mode="json", exclude_unset=True)
    return [{**base, "id": point_id(v.id, budget, x), budget: x, "sweep": v.id} for x in getattr(v, budget)]


def expanded_document(doc: dict[str, Any], variants: Sequence[Variant]) -> dict[str, Any] | None:
    """The manifest document ``doc`` (of ``variants``) with every list budget expanded into
    its points, the gateway's per-variant scripts and replay sources following them; None
    when there is no sweep to expand (``runner.manifest.document.expand_sweeps``)."""
    swept = {v.id: _points(v) for v in variants if v.swept()}
    if not swept:
        return None
    doc = {**doc, "variants": [d for v in variants for d in _expanded(v)]}
    gw = doc.get("gateway")
    if gw:
        gw = doc["gateway"] = dict(gw)
        for key in ("scripts", "replay_from"):
            named = dict(gw.get(key) or {})
            for vid, pids in swept.items():
                if vid in named or (key == "replay_from" and gw["mode"] == "replay"):
                    source = named.pop(vid, vid)
                    named.update({p: source for p in pids})
            if named:
                gw[key] = named
    return doc


def budget_fields(variants: Sequence[Variant], v: Variant) -> dict[str, Any]:
    """``run_started``'s budget fields of ``v`` (one of ``variants``): its own budgets and,
    for a sweep's point, the sweep, the budget it sweeps and its value."""
    out: dict[str, Any] = {"timeout_seconds": v.timeout_seconds, "max_cost_usd": v.max_cost_usd}
    if v.sweep is not None:
        budget = sweep_budget([w for w in variants if w.sweep == v.sweep])
        out.update(sweep=v.sweep, sweep_budget=budget, sweep_value=getattr(v, budget) if budget else None)
    return out


BRANCH = re.compile(r"^(list\[)?constrained-float\]?$")
"""How pydantic names the branches of a budget that is a number or a list (a sweep)."""


def without_branch(raw: Any, loc: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``loc`` without the name of a union branch (``variants[1].timeout_seconds[1]``, not
    ``….list[constrained-float][1]``); None for an error of the branch the value is not."""
    value = raw
    for i, part in enumerate(loc):
        if isinstance(part, str) and BRANCH.match(part):
            if isinstance(value, list) != part.startswith("list["):
                return None
            return loc[:i] + loc[i + 1:]
        try:
            value = value[part]
        except (KeyError, IndexError, TypeError):
            value = None
    return loc
