"""Stage-level events and what they carry: usage, permission denials, gateway measurements,
and the judges' advisory judgments."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from contract.envelope import MODEL_CONFIG, BaseEvent, CostBasis, Stage, Verdict
from contract.fields import Count32, Count64, Id, Int32, Positive32
from contract.values import as_amount, as_count


class StageStarted(BaseEvent):
    event: Literal["stage_started"] = "stage_started"
    attempt: Positive32
    stage: Stage
    time_left_s: float
    prompt_sha256: str


class Usage(BaseModel):
    """What an agent reported about its own consumption. ``None`` means not reported."""

    model_config = MODEL_CONFIG

    input_tokens: Count64 | None = None
    """Uncached input tokens."""
    output_tokens: Count64 | None = None
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    cost_usd: float | None = Field(default=None, ge=0)
    """Cost the agent reported itself; None when it reported nothing, or when the price
    behind its claim is unknown (see ``cost_basis`` and ``StageFinished.claimed_cost_usd``)."""
    cost_basis: CostBasis | None = None
    """Basis of ``cost_usd``: ``reported`` (the agent priced tokens it knows the price of),
    ``computed`` (tokens × a dated price file). Never ``reported_unknown_basis``: such a
    claim is not a cost (it stays in ``StageFinished.claimed_cost_usd``). None with no cost."""
    steps: Count64 | None = None
    """Turns / tool-using steps."""
    time_to_first_edit_s: float | None = Field(default=None, ge=0)
    source: str | None = None
    """Which parser produced this: claude-json, claude-stream-json, codex-json, agent-events, simulated."""


_USAGE_COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "steps")
_USAGE_AMOUNTS = ("cost_usd", "time_to_first_edit_s")


def reported_usage(source: str | None = None, **values: object) -> tuple[Usage, list[str]]:
    """A ``Usage`` from what an agent reported, and a note per value that was out of range.

    Agents write their own numbers (an agent-events line can say ``output_tokens: 1e308``);
    a value the contract cannot hold becomes None (unknown) with a note instead of failing
    the stage or writing an event ingest would refuse. None stays None.
    """
    kept: dict[str, Any] = {}
    notes: list[str] = []
    for name, value in values.items():
        if name not in _USAGE_COUNTS and name not in _USAGE_AMOUNTS:
            raise TypeError(f"reported_usage: unknown usage field {name!r}")
        if value is None:
            continue
        clean = as_count(value) if name in _USAGE_COUNTS else as_amount(value)
        if clean is None:
            notes.append(f"{name}: reported value {str(value)[:40]} is out of range; kept as unknown")
        kept[name] = clean
    return Usage(**kept, source=source), notes


class PermissionDenial(BaseModel):
    """A tool call a harness's permission mode refused."""

    model_config = MODEL_CONFIG

    tool_name: str
    tool_use_id: str | None = None


class GatewayUsage(BaseModel):
    """A stage's (or trial's) model calls as the gateway measured them: the provider's own
    counts, independent of what the agent says. A token field is None when any call that
    answered left it unreported."""

    model_config = MODEL_CONFIG

    calls: Count64 = 0
    """Every call through the route, side requests and failures included."""
    failed_calls: Count64 = 0
    """Calls answered with an error status, or never answered."""
    retries: Count64 = 0
    """Calls that were the agent's retry of an earlier call (each retry counted once: a call's
    own ``retries`` is its ordinal among the tries at that point, not a count to add up)."""
    input_tokens: Count64 | None = None
    """Uncached input tokens, summed over the calls that answered 200."""
    output_tokens: Count64 | None = None
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    model_s: float = Field(default=0.0, ge=0)
    """Sum of the calls' latencies: time spent waiting on the model."""
    models: list[str] = Field(default_factory=list)
    """The distinct models the agent's main-loop calls asked for (side requests aside), in
    order of first use: what the variant's ``model`` label is checked against."""


class StageFinished(BaseEvent):
    event: Literal["stage_finished"] = "stage_finished"
    attempt: Positive32
    stage: Stage
    exit_code: Int32 | None = None
    signal: Int32 | None = None
    timed_out: bool = False
    could_not_start: bool = False
    duration_s: float
    usage: Usage = Field(default_factory=Usage)
    verdict_status: str | None = None
    """What the stage claimed (e.g. passed/failed); never a grade."""
    verdict_findings: list[str] = Field(default_factory=list)
    stdout_path: str | None = None
    stderr_path: str | None = None
    stdout_truncated: bool = False
    redactions: Count64 = 0
    harness_version: str | None = None
    """The version the harness printed in its own output (Claude's init line, the Codex
    rollout, mini's trajectory; else its ``--version``); None for other agents."""
    session_id: str | None = None
    """Claude ``session_id``, Codex ``thread_id`` (what the harness's own logs are named by)."""
    claimed_cost_usd: float | None = Field(default=None, ge=0)
    """The harness's cost claim whatever its basis (``usage.cost_usd`` holds it only when
    the basis is ``reported``)."""
    cost_basis: CostBasis | None = None
    """Basis of ``claimed_cost_usd``."""
    permission_denials: list[PermissionDenial] = Field(default_factory=list)
    """Tool calls the harness's permission mode refused (the stage may still succeed)."""
    context_exhausted: bool = False
    """The model's context window ran out (the agent's failure, never infrastructure)."""
    stderr_excerpt: str | None = None
    """The redacted tail of the harness's stderr (at most 2000 characters)."""
    tokens_from: str | None = None
    """Where the harness's token counts came from: ``result``, ``stream``, ``rollout``, ``trajectory``."""
    harness_notes: list[str] = Field(default_factory=list)
    """Format notes: fields missing from this version's output, fallbacks taken."""
    gateway_usage: GatewayUsage | None = None
    """What the model gateway measured on the wire for this stage (None: no gateway)."""
    trajectory_steps: Count64 | None = None
    """``step`` events recorded for this stage (``usage.steps`` is the agent's own count)."""


FailureCategory = Literal["environment_discovery", "task_interpretation", "source_of_truth", "dependency_choice",
                          "impact_analysis", "implementation", "verification"]
"""The first decisive wrong choice of a failed trial (docs/judges.md), whoever assigns it."""


class JudgeInfo(BaseModel):
    """The judge that gave a judgment (``runner.judges.config``): part of the evaluator
    fingerprint, never of ``config_id``; a calibration holds only for the same values."""

    model_config = MODEL_CONFIG

    host: Literal["claude-code", "codex", "command", "builtin"]
    provider: Literal["anthropic", "openai"] | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    timeout_s: float = Field(ge=0, le=3600)
    source: Literal["variant", "default"] = "default"
    """``variant``: from ``evaluations.judge``; ``default``: derived from the variant's host."""


class Judgment(BaseEvent):
    """A supplementary model judgment: recorded apart, never turns a failure into a pass.

    Advisory: the trial's outcome is decided before any judge runs and never read back.
    ``verdict`` is ``inconclusive`` when the judge abstained or its answer was unusable
    (``error`` says why: timeout, not JSON, claimed edits, ...)."""

    event: Literal["judgment"] = "judgment"
    attempt: Positive32
    criterion_id: Id
    verdict: Verdict
    judge_model: str | None = None
    abstained: bool = False
    rationale: str = ""
    judge: JudgeInfo | None = None
    rubric: str | None = None
    """The rubric path (relative to the manifest)."""
    rubric_sha256: str | None = None
    reasons: list[str] = Field(default_factory=list)
    error: str | None = None
    """Why the answer was not usable (then ``verdict`` is inconclusive)."""
    duration_s: float | None = Field(default=None, ge=0)
    model_calls: Count32 = 0
    advisory: bool = True
    failure_category: FailureCategory | None = None
    """The judge's failure category for a ``failed`` verdict (who said it: the judge)."""
