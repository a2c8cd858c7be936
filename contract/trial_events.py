"""Trial-level events: a trial's start, preparation, attempts, checkpoints, integrity checks,
gradings, budgets, patch flags and its finish (the one line that decides its outcome)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from contract.envelope import MODEL_CONFIG, BaseEvent, Layer, Outcome, Stage, Verdict
from contract.fields import Count32, Count64, Id, Int32, Int64, Positive32, TrialId
from contract.stage_events import GatewayUsage, Usage


class RegradedFrom(BaseModel):
    """The trial a ``trialhouse regrade`` trial grades again: its run, id, outcome and
    evaluator, and when its agent ran (the regraded trial's time is that one's)."""

    model_config = MODEL_CONFIG

    run_id: Id
    trial_id: TrialId
    outcome: Outcome
    reason: str = ""
    case_fingerprint: str | None = None
    """The evaluator that graded it (the regrade's is ``case_fingerprint``)."""
    started_at: datetime | None = None
    finished_at: datetime | None = None


class TrialStarted(BaseEvent):
    event: Literal["trial_started"] = "trial_started"
    case_id: Id
    variant: Id
    config_id: Id
    repetition: Positive32
    seed: Int64
    workspace: str
    order: Count64 = Field(description="Position in the run's trial order.")
    case_fingerprint: str | None = None
    timeout_seconds: float | None = None
    """The trial's time budget: its variant's, else its case's, else the manifest's
    (None: runs before per-case budgets, where it is the run's ``timeout_seconds``)."""
    max_cost_usd: float | None = None
    """The trial's spend limit, chosen the same way (None: unlimited, or an older run)."""


class TrialSkipped(BaseEvent):
    """A trial not run because its case is not scored (failed or flaky controls)."""

    event: Literal["trial_skipped"] = "trial_skipped"
    case_id: Id
    variant: Id
    config_id: Id
    repetition: Positive32
    reason: str
    case_fingerprint: str | None = None
    regraded_from: RegradedFrom | None = None
    """``trialhouse regrade``: the trial not graded again, listed with why (its final state
    was not kept, its case is not scored under the new evaluator)."""


class PrepareFinished(BaseEvent):
    event: Literal["prepare_finished"] = "prepare_finished"
    command: list[str]
    exit_code: Int32 | None = None
    timed_out: bool = False
    duration_s: float


class WorkspacePrepared(BaseEvent):
    """The trial's starting state, captured by the runner after ``prepare_commands``."""

    event: Literal["workspace_prepared"] = "workspace_prepared"
    initial_tree: str
    """Tree of the pinned initial commit (from the runner's own store)."""
    prepared_tree: str
    """Runner-captured tree after prepare: what ``changes.patch`` and patch flags compare to."""
    ignored_tree: str | None = None
    """Files prepare created that git ignores (restored for grading), when any."""
    files: Count64 = 0
    bytes: Count64 = 0


class AttemptStarted(BaseEvent):
    event: Literal["attempt_started"] = "attempt_started"
    attempt: Positive32
    findings: list[str] = Field(default_factory=list)
    """Concrete findings handed to this attempt from the previous one."""


class Checkpoint(BaseEvent):
    event: Literal["checkpoint"] = "checkpoint"
    attempt: Positive32
    stage: Stage
    sha: str
    """Runner-owned commit of the captured state (never the agent's own .git)."""
    files_changed: Count64
    tree: str | None = None


class IntegrityCheck(BaseEvent):
    event: Literal["integrity_check"] = "integrity_check"
    phase: str
    """e.g. after:build#1, before_grading, after_grading."""
    ok: bool
    mismatches: list[str] = Field(default_factory=list)


class Grading(BaseEvent):
    """One deterministic criterion run against a trial's state."""

    event: Literal["grading"] = "grading"
    attempt: Positive32
    final: bool = True
    """True for the grading of the state the trial is judged on."""
    criterion_id: Id
    layer: Layer
    exit_code: Int32 | None = None
    signal: Int32 | None = None
    timed_out: bool = False
    verdict: Verdict
    duration_s: float
    baseline: Verdict | None = None
    """Verdict of the same criterion on the initial commit, when known."""
    tree: str | None = None
    """The runner-captured tree this grading ran on (a fresh copy of it)."""
    success_token: bool = False
    """The criterion requires the grader to write the runner's one-time token to pass."""
    token_ok: bool | None = None
    """Whether that token came back (None when not required)."""
    note: str = ""
    output_key: str | None = None
    """The grader's stdout and stderr normalised (timestamps, temporary paths, addresses:
    ``contract.grader_output``) and hashed: equal keys, the same output. The raw output is
    kept as written. None: no output kept, or a run before this field."""


class Budget(BaseEvent):
    event: Literal["budget"] = "budget"
    type: Literal["time", "cost", "workspace", "gateway"]
    """``workspace``: the workspace (with the trial's HOME and TMP) outgrew ``max_workspace_mb``;
    ``gateway``: the trial went over a gateway cap (``limit``, ``used``: connections at once or
    requests; the reason names which)."""
    status: Literal["exceeded", "unknown"]
    limit: float | None = None
    used: float | None = None


class Flag(BaseEvent):
    """Patch inspection finding: for review, not failure."""

    event: Literal["flag"] = "flag"
    kind: Literal[
        "outside_allowed_paths",
        "test_deleted",
        "test_skipped",
        "fewer_assertions",
        "broad_exception",
        "dependency_manifest",
        "generated_file",
        "grader_introspection",
        "grader_helper",
        "public_api_change",
        "migration_added",
    ]
    """``grader_introspection``: code that reaches for frames, ``gc``, process memory or
    ``sys.modules``; ``grader_helper``: code naming a grader's own module or helpers (both
    ways to read or rewrite an in-process grader; docs/security.md); ``public_api_change``:
    a Python module's exported names removed or re-signatured; ``migration_added``: a new file
    under a migration folder (docs/agents.md)."""
    path: str
    detail: str = ""


class AttemptFinished(BaseEvent):
    event: Literal["attempt_finished"] = "attempt_finished"
    attempt: Positive32
    outcome: Outcome
    findings: list[str] = Field(default_factory=list)
    stop_kind: Literal["none", "ungraded", "graded", "unless_accepted"] | None = None
    """How the attempt's stop relates to its grade (``runner.outcome.stop_kind``): what a
    regrade needs to decide the outcome again from a new grade (None: older runs)."""
    stop_outcome: Outcome | None = None
    stop_reason: str | None = None


class TrialFinished(BaseEvent):
    """Last event of a trial; a trial without it is incomplete, not failed."""

    event: Literal["trial_finished"] = "trial_finished"
    case_id: Id
    variant: Id
    config_id: Id
    repetition: Positive32
    outcome: Outcome
    reason: str = ""
    attempts: Count32
    duration_s: float
    setup_s: float | None = None
    agent_s: float | None = None
    verification_s: float | None = None
    usage: Usage = Field(default_factory=Usage)
    """Trial totals: a field is None when any stage left it unreported."""
    cost_budget_status: Literal["within", "exceeded", "unknown", "unlimited"] = "unlimited"
    layers: dict[str, str] = Field(default_factory=dict)
    """Layer → pass | fail | none, on the final state."""
    flags: Count32 = 0
    simulated: bool = False
    line: str = ""
    """The compact stable one-line summary printed for this trial."""
    final_tree: str | None = None
    """Runner-captured tree of the final state (graded, and diffed into changes.patch)."""
    patch_truncated: bool = False
    case_fingerprint: str | None = None
    scored: bool = True
    """False when the case failed its controls and ``run --score-unvalidated`` ran it
    anyway: analyses leave such trials out unless told ``--include-unvalidated``."""
    redactions: Count64 = 0
    """Secrets and credential-shaped strings redacted from this trial's stored evidence."""
    secrets_leaked: Count64 = 0
    """Of those, occurrences of the run's own secret values (``pass_env``/``secret_env``) the
    agent wrote into its output: a leak, which makes its configuration ineligible."""
    gateway_usage: GatewayUsage | None = None
    """Sum of the stages' ``gateway_usage`` (None when no stage went through the gateway)."""
    evidence: dict[str, str] | None = None
    """Relative path → sha256 of every evidence file the trial kept (``contract.chain.evidence_hashes``):
    the hash chain covers them. None: not recorded (a trial that never finished normally)."""
    model_substituted: bool | None = None
    """True when a main-loop call through the gateway asked for a model other than the
    variant's ``model`` label (``gateway_usage.models`` says which): the trial measured that
    model. None: no gateway, no main-loop call, or no label to compare."""
    patch_paths: list[str] | None = None
    """Paths ``changes.patch`` touches (prepared tree → final tree; the first 1000), which
    trajectory metrics relate the files an agent read to. None: not recorded."""
    regraded_from: RegradedFrom | None = None
    """``trialhouse regrade``: the trial whose final state this one graded again. Usage,
    cost, steps and times are that trial's (no agent ran); the outcome is the new grade's."""
    regrade_s: float | None = Field(default=None, ge=0)
    """``trialhouse regrade``: seconds the regrade spent rebuilding and grading the final
    state (kept apart from the trial's own ``duration_s``)."""
