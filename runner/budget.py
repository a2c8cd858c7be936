"""A trial's budget: its clock, its spend, and every "time left" the trial reads.

A trial has one time budget (the manifest's ``timeout_seconds``, from the trial's start),
at most one spend limit (``max_cost_usd``, on the spend the stages reported) and a size
limit on the workspace (``max_workspace_mb``). Everything a trial gives a time limit to
reads it here, through a method that names what it is for and the floor it gets: the
floors are the whole list of "more time than is left", each with its reason. Every
budget exceeded is a ``budget`` event (docs/runner.md, "A trial").

The clock is an argument (``time.monotonic`` by default), so tests drive it; the module
never imports the trial that uses it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from contract.stage_events import GatewayUsage, Usage, reported_usage
from contract.trial_events import Budget
from runner.agents.harness_stage import sum_gateway
from runner.outcome import Stop

if TYPE_CHECKING:
    from runner.procs import ProcResult

Clock = Callable[[], float]
"""Seconds on a monotonic clock."""
TrialEmit = Callable[..., object]
"""``emit(EventClass, **fields)`` with the trial's id filled in: what a trial hands its seams."""

CostStatus = Literal["within", "exceeded", "unknown", "unlimited"]

COMMAND_FLOOR = 0.001
"""A prepare command always gets a positive timeout: the sandbox refuses zero."""
GIT_FLOOR = 0.01
"""The runner's own git work (a capture, a grading copy) gets at least this: with the
budget spent it still starts, and the stop is decided by the trial, not by git."""
EVIDENCE_FLOOR = 5.0
"""Writing a patch of evidence (``changes.patch``, a checkpoint's patch) gets at least
this, budget spent or not (within the finishing share): a trial that ran out of time still
leaves what it changed."""
FINISH_SHARE = 0.15
"""The runner's own work after a trial's budget is spent (taking the sandbox's directories
back, the patch, keeping the workspace) ends within this share of the budget past it: a
trial ends within 1.15× its budget plus the writing of its last events, whatever its
workspace holds (docs/runner.md, "A trial")."""


@dataclass
class StageSpend:
    """What one stage spent: its usage as reported, its time, its gateway traffic."""

    usage: Usage
    duration_s: float
    gateway: GatewayUsage | None = None


class TrialBudget:
    """The clock and the spend of one trial; ``emit`` is the trial's (it adds the trial id)."""

    def __init__(self, timeout_s: float, max_cost_usd: float | None, max_workspace_bytes: int,
                 emit: TrialEmit, clock: Clock = time.monotonic, limits: dict[str, float] | None = None) -> None:
        self.timeout_s = timeout_s
        self.limits = dict(limits or {})
        """The other limits' values by kind (``workspace_files``, ``processes``, ``memory`` in
        MB), for the ``budget`` event when one is reached."""
        self.max_cost_usd = max_cost_usd
        self.max_workspace_bytes = max_workspace_bytes
        self._emit = emit
        self._clock = clock
        self.start = clock()
        self.deadline = self.start + timeout_s
        self.spends: list[StageSpend] = []
        self.cost_status: CostStatus = "unlimited" if max_cost_usd is None else "within"

    # -- time ------------------------------------------------------------------------
    def elapsed(self) -> float:
        """Seconds since the trial started."""
        return self._clock() - self.start

    def left(self) -> float:
        """Seconds of the budget left; negative once it is spent."""
        return self.deadline - self._clock()

    def exhausted(self) -> bool:
        """The budget is spent: no stage starts, no further attempt follows."""
        return self.left() <= 0

    def for_agent(self) -> float:
        """A stage's timeout, also recorded as ``stage_started.time_left_s``: what is left,
        never less than zero (a stage started with nothing left times out at once)."""
        return max(self.left(), 0.0)

    def for_command(self) -> float:
        """A prepare command's timeout (``COMMAND_FLOOR``)."""
        return max(self.left(), COMMAND_FLOOR)

    def for_git(self) -> float:
        """The runner's own git work on the trial's time: captures, grading copies (``GIT_FLOOR``)."""
        return max(self.left(), GIT_FLOOR)

    def for_evidence(self) -> float:
        """Writing a patch of evidence (``EVIDENCE_FLOOR``, within ``FINISH_SHARE``)."""
        return max(self.left(), min(EVIDENCE_FLOOR, self.finish_left()), GIT_FLOOR)

    def finish_left(self) -> float:
        """Seconds left for the runner's own work on this trial: the budget's time left plus
        ``FINISH_SHARE`` of the budget; negative once that is spent too."""
        return self.left() + FINISH_SHARE * self.timeout_s

    def finish_by(self) -> float:
        """The moment (``time.monotonic``) the runner's own work on this trial must end
        (``finish_left`` from now): what walks of the agent's directories are given."""
        return time.monotonic() + max(self.finish_left(), 0.0)

    def time_stop(self, reason: str, grade: bool = True) -> Stop:
        """The stop for a spent time budget, recorded as a ``budget`` event wherever the
        clock ran out."""
        self._emit(Budget, type="time", status="exceeded", limit=self.timeout_s,
                   used=round(self.elapsed(), 3))
        return Stop("budget_exhausted", reason, grade=grade)

    def work_failed(self, what: str, exc: Exception) -> Stop:
        """The stop when the runner's own work (git) failed: the time budget's when it is
        spent (the work was cut short at its floor), else an infrastructure failure."""
        if self.exhausted():
            return self.time_stop(f"time budget exhausted while {what}", grade=False)
        return Stop("infra_error", f"{what} failed: {exc}", grade=False)

    # -- spend -----------------------------------------------------------------------
    def spend(self, stage: StageSpend) -> None:
        self.spends.append(stage)

    def known_cost(self) -> float:
        """The spend the stages reported (a stage that reported none adds nothing)."""
        return sum(s.usage.cost_usd for s in self.spends if s.usage.cost_usd is not None)

    def cost_stop(self) -> Stop | None:
        """The stop when the known spend is above ``max_cost_usd``. A stage without a cost
        makes the status ``unknown`` (recorded once): unknown spend is never counted as 0."""
        if self.max_cost_usd is None:
            return None
        spent = self.known_cost()
        if spent > self.max_cost_usd:
            self.cost_status = "exceeded"
            self._emit(Budget, type="cost", status="exceeded", limit=self.max_cost_usd, used=spent)
            return Stop("budget_exhausted", f"known spend above max_cost_usd={self.max_cost_usd:g}")
        if any(s.usage.cost_usd is None for s in self.spends) and self.cost_status != "unknown":
            self.cost_status = "unknown"
            self._emit(Budget, type="cost", status="unknown", limit=self.max_cost_usd, used=None)
        return None

    def over_limit(self, res: ProcResult, prefix: str = "") -> Stop | None:
        """``limit_stop`` for a sandbox run that went over a limit; None when none was reached."""
        if res.limit is None:
            return None
        return self.limit_stop(res.limit_kind or "workspace", prefix + res.limit, res.written)

    def limit_stop(self, kind: str, reason: str, written: tuple[int, int] | None) -> Stop:
        """The stop for a sandbox that went over a limit (``runner.sandbox.limits``), recorded
        as a ``budget`` event of that kind with what it used where that is known."""
        if kind == "time":
            return self.time_stop(reason, grade=False)
        used_bytes, entries = written or (None, None)
        limit = self.limits.get(kind)
        used: float | None = None
        if kind == "workspace":
            limit = round(self.max_workspace_bytes / 2**20, 3)
            used = round(used_bytes / 2**20, 3) if used_bytes is not None else None
        elif kind == "workspace_files":
            used = entries
        self._emit(Budget, type=kind, status="exceeded", limit=limit, used=used)
        return Stop("budget_exhausted", reason, grade=False)

    def final_cost_status(self) -> CostStatus:
        """The spend against ``max_cost_usd`` when the trial ends: a trial whose total cost
        is unknown (a stage that reported none, a stage cut by the clock, no stage at all)
        is ``unknown``, never ``within`` (recorded as a ``budget`` event once)."""
        if self.cost_status in ("unlimited", "exceeded") or self.usage().cost_usd is not None:
            return self.cost_status
        if self.cost_status != "unknown":
            self.cost_status = "unknown"
            self._emit(Budget, type="cost", status="unknown", limit=self.max_cost_usd, used=None)
        return self.cost_status

    def workspace_stop(self, used: int) -> Stop | None:
        """The stop when the workspace (with HOME and TMP) holds ``used`` bytes, over the limit."""
        cap = self.max_workspace_bytes
        if used <= cap:
            return None
        self._emit(Budget, type="workspace", status="exceeded", limit=round(cap / 2**20, 3),
                   used=round(used / 2**20, 3))
        return Stop("budget_exhausted", f"workspace grew to {used / 2**20:.0f} MB, over "
                                        f"max_workspace_mb={cap / 2**20:g}", grade=False)

    # -- totals ----------------------------------------------------------------------
    def usage(self) -> Usage:
        """Trial totals; a field stays None when any stage left it unreported."""
        return total_usage([s.usage for s in self.spends])

    def agent_seconds(self) -> float:
        return sum(s.duration_s for s in self.spends)

    def gateway_usage(self) -> GatewayUsage | None:
        return sum_gateway([s.gateway for s in self.spends])


def total_usage(stages: list[Usage]) -> Usage:
    """The sum of stage usages; a field stays None when any stage left it unreported."""
    if not stages:
        return Usage()
    totals: dict[str, Any] = {}
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "cost_usd", "steps"):
        vals = [getattr(s, name) for s in stages]
        totals[name] = None if any(v is None for v in vals) else sum(vals)
    bases = {s.cost_basis for s in stages}
    basis = bases.pop() if totals["cost_usd"] is not None and len(bases) == 1 else None
    firsts = [s.time_to_first_edit_s for s in stages if s.time_to_first_edit_s is not None]
    totals["time_to_first_edit_s"] = firsts[0] if firsts else None
    sources = sorted({s.source for s in stages if s.source})
    # A sum of in-range stage numbers can still leave the contract's range: unknown then.
    usage, _notes = reported_usage(source="+".join(sources) or None, **totals)
    return usage.model_copy(update={"cost_basis": basis if usage.cost_usd is not None else None})
