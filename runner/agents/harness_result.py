"""What a harness parser learns beyond :class:`runner.agents.agent_report.AgentReport`.

``AgentReport`` carries what today's event contract (``contract.stage_events.Usage``) can hold.
Real harness output says more, and some of it changes how the numbers may be used:
the *basis* of a cost claim, the session id and the CLI version that produced the
run, tools the permission mode denied, whether the context window ran out, and the
harness's own stderr. :class:`HarnessResult` keeps all of it next to the report until
those fields are part of the event contract (see docs/agents.md, "Fields waiting for
the event contract").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from contract.envelope import (
    CostBasis,  # the one definition (its docstring says what each basis means)
)
from contract.redact import redact
from runner.agents.agent_report import AgentReport

STDERR_EXCERPT_CHARS = 2000
"""The tail of stderr kept with a result: enough for an error and its context."""
CONTEXT_EXHAUSTED = re.compile(
    r"context[ _-]?(window|length)|maximum context|prompt is too long|prompt_too_long|too many tokens"
    r"|ran out of room",
    re.I,
)
"""Context-window exhaustion, as Claude Code, Codex and litellm phrase it.

Decision (docs/agents.md): running out of context is the **agent's** failure for
every harness — managing its context is part of what a harness is evaluated on — so
it is never ``infra_error``; the grade decides, and ``context_exhausted`` labels it."""


@dataclass(frozen=True)
class PermissionDenial:
    """A tool call the harness's permission mode refused (the run may still succeed)."""

    tool_name: str
    tool_use_id: str | None = None


@dataclass(frozen=True)
class HarnessResult:
    report: AgentReport
    """Usage, terminal status and classification, as the runner consumes them today."""
    harness: str
    cli_version: str | None = None
    """The version the harness printed in its own output (init line, rollout, trajectory)."""
    session_id: str | None = None
    """Claude ``session_id``, Codex ``thread_id``; mini has none."""
    model: str | None = None
    """The model the harness says it ran (may differ from the one asked for)."""
    claimed_cost_usd: float | None = None
    """The harness's cost claim, whatever its basis (``report.usage.cost_usd`` holds it
    only when the basis is ``reported``)."""
    cost_basis: CostBasis | None = None
    permission_denials: tuple[PermissionDenial, ...] = ()
    context_exhausted: bool = False
    stderr_excerpt: str | None = None
    """Last :data:`STDERR_EXCERPT_CHARS` of stderr, redacted."""
    tokens_from: str | None = None
    """Where the token counts came from: ``result``, ``stream``, ``rollout``, ``trajectory``."""
    first_edit_at: datetime | None = None
    """When the first file edit completed (UTC), when the output says."""
    notes: tuple[str, ...] = ()
    """Format notes: fields missing from this version's output, fallbacks taken."""


def stderr_excerpt(path: Path | None, secrets: tuple[str, ...] = (), limit: int = STDERR_EXCERPT_CHARS) -> str | None:
    """The redacted tail of a stderr file (None when missing or blank)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(size - 4 * limit, 0))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    text = redact(text, secrets)[0].strip()
    if not text:
        return None
    return text if len(text) <= limit else "…" + text[-(limit - 1):]


def stderr_cause(excerpt: str | None) -> str | None:
    """The line of stderr that most likely names the failure (``error: …`` first)."""
    if not excerpt:
        return None
    lines = [line.strip() for line in excerpt.splitlines() if line.strip()]
    for line in lines:
        if re.match(r"(error|fatal|panic)\b|thread '.*' panicked|\w*Error:", line, re.I):
            return line[:300]
    return lines[-1][:300] if lines else None


def seconds_since(start: datetime | None, moment: datetime | None) -> float | None:
    if start is None or moment is None:
        return None
    return max((moment - start).total_seconds(), 0.0)
