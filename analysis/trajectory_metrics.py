"""Trajectory metrics: pure functions over one stage's step rows.

They describe *how* an agent worked, next to whether it succeeded; none of them is a
quality score (docs/trajectories.md has the definitions and what they do not say).
Each takes a sequence of step-like objects in trajectory order — anything with the
attributes of a step row (``kind``, ``action``, ``tool``, ``command``, ``paths``, ``ok``,
``exit_code``, ``started_at``, ``ended_at``, token fields): warehouse rows
(``analysis.trajectory`` adapts the ``steps`` table) as well as the runner's parsed
trajectories (``runner.agents.steps.Step``). It imports nothing from trialhouse: the
definitions live here, where analysis reads them, and nothing in the runner needs them.

Unknown is not zero: a metric whose inputs are missing (no timestamps, no tokens) is
None, and the dataclasses say how many steps could be counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

StepLike = Any
"""An object with the attributes of a step row (``analysis.trajectory.StepRow``)."""


def _tools(steps: Sequence[StepLike]) -> list[StepLike]:
    return [s for s in steps if s.kind == "tool"]


def is_check(step: StepLike, pattern: re.Pattern[str] | None = None) -> bool:
    """A verification: a ``run`` step (command execution), optionally one whose command
    matches ``pattern`` (e.g. test runners only)."""
    if step.kind != "tool" or step.action != "run":
        return False
    return pattern is None or bool(step.command and pattern.search(step.command))


def _failed(step: StepLike) -> bool:
    return step.ok is False or (step.exit_code is not None and step.exit_code != 0)


def _edit(step: StepLike) -> bool:
    return step.kind == "tool" and step.action == "edit" and step.ok is not False


def _start(step: StepLike) -> datetime | None:
    return step.started_at or step.ended_at


def _end(step: StepLike) -> datetime | None:
    return step.ended_at or step.started_at


# ---------------------------------------------------------------- 1. repeated identical calls


@dataclass(frozen=True)
class Repeats:
    repeats: int
    """Tool calls identical to an earlier call with no successful edit in between."""
    tool_calls: int

    @property
    def share(self) -> float | None:
        return self.repeats / self.tool_calls if self.tool_calls else None


def repeated_calls(steps: Sequence[StepLike]) -> Repeats:
    """Identical = same tool, command and paths. An edit resets what counts as seen: after
    the workspace changed, running the same check again can tell something new."""
    seen: set[tuple[Any, ...]] = set()
    repeats = 0
    tools = _tools(steps)
    for step in tools:
        key = (step.tool, step.action, step.command, tuple(step.paths))
        if key in seen:
            repeats += 1
        seen.add(key)
        if _edit(step):
            seen = set()
    return Repeats(repeats, len(tools))


# ---------------------------------------------------------------- 2. failed check → next edit


@dataclass(frozen=True)
class Recovery:
    seconds: tuple[float, ...]
    """Per edit that follows a failed check: time from the end of the most recent failed
    check (since the previous edit) to the start of that edit."""
    unanswered: int
    """Failed checks after the last edit: never followed by a change."""
    untimed: int
    """Pairs whose timestamps are missing."""


def failed_check_to_edit(steps: Sequence[StepLike], pattern: re.Pattern[str] | None = None) -> Recovery:
    seconds: list[float] = []
    untimed = 0
    last_failed: StepLike | None = None
    failed_since_edit = 0
    for step in steps:
        if is_check(step, pattern):
            if _failed(step):
                last_failed = step
                failed_since_edit += 1
        elif _edit(step):
            if last_failed is not None:
                a, b = _end(last_failed), _start(step)
                if a is None or b is None:
                    untimed += 1
                else:
                    seconds.append(max((b - a).total_seconds(), 0.0))
            last_failed, failed_since_edit = None, 0
    return Recovery(tuple(seconds), failed_since_edit, untimed)


# ---------------------------------------------------------------- 3. reads outside the patch's subsystems


def top_directory(path: str) -> str:
    """Default subsystem of a path: its first directory (``""`` for files at the root)."""
    parts = path.strip("/").split("/")
    return parts[0] if len(parts) > 1 else ""


@dataclass(frozen=True)
class OutsideReads:
    outside: int
    """Distinct files read whose subsystem the final patch does not touch."""
    read: int
    subsystems: tuple[str, ...]
    """The subsystems of the final patch."""

    @property
    def share(self) -> float | None:
        return self.outside / self.read if self.read else None


def outside_reads(steps: Sequence[StepLike], patch_paths: Sequence[str],
                  subsystem: Callable[[str], str] = top_directory) -> OutsideReads | None:
    """Share of distinct files read (``read`` and ``search`` steps naming files) outside the
    subsystems of ``patch_paths``; None when the patch is empty (nothing to be outside of)."""
    if not patch_paths:
        return None
    touched = {subsystem(p) for p in patch_paths}
    read = {p for s in steps if s.kind == "tool" and s.action in ("read", "search") for p in s.paths}
    outside = {p for p in read if subsystem(p) not in touched}
    return OutsideReads(len(outside), len(read), tuple(sorted(touched)))


# ---------------------------------------------------------------- 4. final verification


FinalCheck = Literal["passed_after_last_edit", "failed_after_last_edit", "edited_after_last_check",
                     "no_check", "no_edit"]


def final_check(steps: Sequence[StepLike], pattern: re.Pattern[str] | None = None) -> FinalCheck:
    """Did the last verification run on the final state (after the last edit), and pass?

    ``edited_after_last_check``: the agent changed files after its last check, so its own
    last verification says nothing about what it left behind.
    """
    last_edit = max((i for i, s in enumerate(steps) if _edit(s)), default=None)
    checks = [i for i, s in enumerate(steps) if is_check(s, pattern)]
    if last_edit is None:
        return "no_edit"
    if not checks:
        return "no_check"
    if checks[-1] < last_edit:
        return "edited_after_last_check"
    return "failed_after_last_edit" if _failed(steps[checks[-1]]) else "passed_after_last_edit"


# ---------------------------------------------------------------- 5. time to first edit


def time_to_first_edit(steps: Sequence[StepLike], stage_started_at: datetime | None) -> float | None:
    """Seconds from the stage start to the first edit that took effect (its end)."""
    if stage_started_at is None:
        return None
    for step in steps:
        if _edit(step):
            moment = _end(step)
            return None if moment is None else max((moment - stage_started_at).total_seconds(), 0.0)
    return None


# ---------------------------------------------------------------- 6. model vs tool time


@dataclass(frozen=True)
class TimeSplit:
    model_s: float | None
    """Seconds in model turns with both times; None when the stage has model turns and none
    of them is timed (mini-swe-agent and ATIF stamp a turn only when it ends): unknown, not 0."""
    tool_s: float | None
    """The same for tool calls; also None when tool calls are timed but all at 0 s (a harness
    that recorded no start: the share would be a fake 1.0)."""
    untimed: int
    """Steps without both timestamps (left out of both sums)."""
    why_unknown: str | None = None
    """Why ``model_share`` is unknown, when it is."""

    @property
    def model_share(self) -> float | None:
        if self.model_s is None or self.tool_s is None:
            return None
        total = self.model_s + self.tool_s
        return self.model_s / total if total > 0 else None


_NAMES = {"model": "model turn", "tool": "tool call"}


def model_vs_tool_time(steps: Sequence[StepLike]) -> TimeSplit:
    sums = {"model": 0.0, "tool": 0.0}
    seen = {"model": 0, "tool": 0}
    timed = {"model": 0, "tool": 0}
    for step in steps:
        seen[step.kind] += 1
        if step.started_at is None or step.ended_at is None:
            continue
        timed[step.kind] += 1
        sums[step.kind] += max((step.ended_at - step.started_at).total_seconds(), 0.0)
    side: dict[str, float | None] = dict(sums)
    why = []
    for kind in ("model", "tool"):
        if seen[kind] and not timed[kind]:
            side[kind] = None
            why.append(f"no {_NAMES[kind]} has a start and an end ({seen[kind]} untimed)")
        elif timed[kind] and sums[kind] == 0:
            side[kind] = None
            why.append(f"every timed {_NAMES[kind]} lasted 0 s (the harness recorded no start)")
    if not why and sums["model"] + sums["tool"] == 0:
        why.append("no timed steps")
    return TimeSplit(side["model"], side["tool"], len(steps) - timed["model"] - timed["tool"],
                     "; ".join(why) or None)


# ---------------------------------------------------------------- 7. tokens per step


@dataclass(frozen=True)
class TokensPerStep:
    mean: float | None
    """Mean of input + output (+ cache read and write where reported) per model turn,
    over turns that reported input and output."""
    counted: int
    model_turns: int


def tokens_per_step(steps: Sequence[StepLike]) -> TokensPerStep:
    turns = [s for s in steps if s.kind == "model"]
    totals = [
        s.input_tokens + s.output_tokens + (s.cache_read_tokens or 0) + (s.cache_write_tokens or 0)
        for s in turns
        if s.input_tokens is not None and s.output_tokens is not None
    ]
    return TokensPerStep(sum(totals) / len(totals) if totals else None, len(totals), len(turns))
