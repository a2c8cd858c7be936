"""The step row: one model turn or one tool call of an agent's trajectory.

What the trajectory parsers (``runner.agents.trajectory``) return; the runner records
each as a ``step`` event (``contract.call_events.TrajectoryStep``), which ingest loads into the
``steps`` table. The trajectory metrics (``analysis.trajectory_metrics``) read the same
attributes from warehouse rows and from these.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal

StepKind = Literal["model", "tool"]
Action = Literal["read", "edit", "run", "search", "other"]
"""What a tool call did to the workspace: ``read`` files, ``edit`` files, ``run`` a
command (tests, builds, scripts), ``search`` (grep, glob, web), or ``other``."""


@dataclass(frozen=True)
class Step:
    index: int
    """Order within the stage's trajectory, from 0 (model turns and tool calls interleaved)."""
    kind: StepKind
    source: str
    """The trajectory it came from: ``claude-stream-json``, ``codex-json``, ``codex-rollout``,
    ``mini-trajectory``, ``agent-events``, ``gateway``, ``atif``."""
    stage: str | None = None
    tool: str | None = None
    """Tool name as the harness calls it (``Edit``, ``exec_command``, ``bash`` …)."""
    action: Action | None = None
    paths: tuple[str, ...] = ()
    """Files the step read or changed, relative to the workspace when they lie inside it."""
    command: str | None = None
    """The shell command of a ``run`` (or command-based read/edit) step."""
    exit_code: int | None = None
    ok: bool | None = None
    """Tool: it succeeded (no error, exit 0, not refused). Model: the call answered."""
    started_at: datetime | None = None
    ended_at: datetime | None = None
    input_tokens: int | None = None
    """Model steps: uncached input, as everywhere in trialhouse."""
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    call_id: str | None = None
    """Tool call id, or for model steps the response/request id (joins gateway records)."""

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return max((self.ended_at - self.started_at).total_seconds(), 0.0)

    def row(self) -> dict[str, Any]:
        """A flat dict for a table (paths as a list)."""
        out = asdict(self)
        out["paths"] = list(self.paths)
        return out
