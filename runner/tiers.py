"""Check tiers in a trial and in a regrade (docs/rollout.md, "Check tiers and the behaviour bank").

A trial grades its ``fast`` checks on every attempt. Its ``broad`` checks run when the fast
tier passed (the state may be accepted, and acceptance needs them) or on the last attempt
(the final grade is complete); an attempt whose fast tier failed with attempts left retries
on the fast tier's findings alone. ``scheduled`` checks never run in a trial: ``trialhouse
run --tier scheduled`` grades kept final states with every tier through the regrade.
Every criterion is ``fast`` unless declared otherwise, so a manifest without tiers grades
exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from contract.run_events import CriterionInfo
from runner.errors import RunnerError
from runner.grading import GradingContext, GradingRun, grade_tree
from runner.manifest import Criterion
from runner.outcome import grading_outcome


def of_tier(criteria: Sequence[Criterion], *tiers: str) -> list[Criterion]:
    return [c for c in criteria if c.tier in tiers]


def grade_tiers(ctx: GradingContext, criteria: Sequence[Criterion], tree: str, *, last: bool,
                baseline: dict[str, str], overlay: str | None, log_dir: Path | None,
                deadline_s: float | None = None) -> GradingRun:
    """One attempt's grading: the fast tier, then the broad tier when the fast one passed or
    this is the last attempt (``last``)."""
    fast = grade_tree(ctx, of_tier(criteria, "fast"), tree, overlay=overlay, log_dir=log_dir,
                      deadline_s=deadline_s)
    broad = of_tier(criteria, "broad")
    if not broad or fast.violations:
        return fast
    if not last and grading_outcome(fast.results, baseline)[0] != "accepted":
        return fast  # a retry comes: the fast tier's findings are what it needs
    more = grade_tree(ctx, broad, tree, overlay=overlay, log_dir=log_dir, deadline_s=deadline_s)
    return GradingRun(fast.results + more.results, more.violations)


def for_regrade(criteria: Sequence[Criterion], tier: Literal["scheduled"] | None) -> list[Criterion]:
    """What a regrade grades: what a trial's last attempt does (fast and broad), and with
    ``--tier scheduled`` the scheduled checks too."""
    return list(criteria) if tier == "scheduled" else of_tier(criteria, "fast", "broad")


def _severity(criterion: Criterion) -> Literal["blocker", "major", "minor"]:
    """``Criterion.resolved_severity`` (a plain ``str``) as the event's vocabulary."""
    match criterion.resolved_severity:
        case "blocker" | "major" | "minor" as severity:
            return severity
    raise RunnerError(f"criterion {criterion.id}: unknown severity {criterion.resolved_severity!r}")


def criterion_infos(criteria: Sequence[Criterion], pooled: Sequence[str], banked: Sequence[str]
                    ) -> list[CriterionInfo]:
    """The run header's record of a case's criteria: layer, kind, severity, visibility, tier
    and bank tags, and whether each was drawn from the hidden pool or the bank."""
    out = []
    for k in criteria:
        tags: dict[str, Any] = k.tags.model_dump()
        out.append(CriterionInfo(criterion_id=k.id, layer=k.layer, kind="command" if k.command else "judge",
                                 description=k.description, in_process=k.in_process, severity=_severity(k),
                                 visible=k.visible, pooled=k.id in pooled, tier=k.tier, banked=k.id in banked,
                                 **tags))
    return out
