"""The event contract: one pydantic model per event type, discriminated by ``event``.

Everything downstream (ingest, warehouse, analysis) reads runs only through these
models, so a field here is a promise. Adding an optional field is backwards
compatible; anything else bumps ``SCHEMA_VERSION`` and gets an upgrader in
``upgrade_event`` so older files still load.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter

from runner.redact import Redactor as Redactor  # noqa: F401 - part of the contract: what may be stored

SCHEMA_VERSION: Literal[1] = 1
"""Current event schema version written by this runner."""


# ---------------------------------------------------------------- value rules
#
# One rule for every value that enters the warehouse, applied identically where the runner
# writes (these types are in the models it builds its events from), where ingest reads (the
# same models, compiled in ``ingest.fastdecode``; ``json_problem`` on every line it diagnoses)
# and in every importer (``ingest.rows``). docs/design.md, "One rule for every value".

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 32
"""Deepest nesting of JSON arrays/objects in one document (an event line or a manifest)."""
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""The safe identifier alphabet: ASCII letters, digits, ``.``, ``_``, ``-``; never first ``.``,
``_`` or ``-`` (so never ``.``/``..``, a hidden file or an option). Such an id is a valid file
name, Hive partition value, shell word and SQL literal without escaping."""
ID_MAX = 128
"""Longest run, case, variant, config, criterion or manifest id (characters = bytes)."""
TRIAL_ID_MAX = 255
"""Longest trial id: the runner composes ``<case>__<variant>__r<rep>``; the manifest limits case
and variant ids so this fits one file name (``runner.manifest.CASE_VARIANT_ID_MAX``)."""

ID_RE = re.compile(ID_PATTERN[:-1] + r"\Z")
"""``ID_PATTERN`` for Python's ``re`` (whose ``$`` also matches before a final newline)."""


def id_problem(value: object, max_length: int = ID_MAX) -> str | None:
    """Why ``value`` is not a safe identifier (None when it is): the rule of ``Id``/``TrialId``."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value or len(value) > max_length:
        return f"must be 1 to {max_length} characters long (is {len(value)})"
    if not ID_RE.match(value):
        return "must start with a letter or digit and use only letters, digits, '.', '_' or '-'"
    return None


Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits a Parquet int32 column (exit codes, signals)."""
Count32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
Positive32 = Annotated[int, Field(ge=1, le=INT32_MAX)]
"""Attempts, repetitions: counted from 1, stored as int32."""
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
Count64 = Annotated[int, Field(ge=0, le=INT64_MAX)]
"""Tokens, steps, seq: ≥ 0 and within a Parquet int64 column."""
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=ID_MAX)]
TrialId = Annotated[str, StringConstraints(pattern=ID_PATTERN, max_length=TRIAL_ID_MAX)]


def json_problem(value: Any, where: str = "", depth: int = 1) -> str | None:
    """Why a decoded JSON value breaks the value rules (None when it keeps them).

    Integers within int64, floats finite (no NaN/Infinity/1e999), strings and keys valid
    Unicode (no lone surrogates, which UTF-8 cannot store), nesting at most ``MAX_DEPTH``
    arrays/objects deep. ``where`` prefixes the location in the message (``a.b[2]``).
    """
    if isinstance(value, str):
        return _text_problem(value, where)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            return f"{where or 'value'}: integer out of range (must fit 64 bits)"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where or 'value'}: must be a finite number"
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            return f"{where or 'value'}: nested more than {MAX_DEPTH} levels deep"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            at = f"{where}[{k}]" if isinstance(k, int) else (f"{where}.{k}" if where else str(k))
            if isinstance(k, str) and (why := _text_problem(k, at)):
                return why
            if why := json_problem(v, at, depth + 1):
                return why
        return None
    return f"{where or 'value'}: not a JSON value ({type(value).__name__})"


def _text_problem(text: str, where: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{where or 'value'}: not valid Unicode (a lone surrogate such as \\ud800)"
    return None


SETTINGS_DEPTH = 4
"""Where a variant's ``settings`` object sits: line → ``variants`` → variant → settings in a
``run_started`` event, and manifest → ``variants`` → variant → settings in a manifest; its
nesting counts from there, so both documents stay within ``MAX_DEPTH``."""


def check_settings(value: Any) -> Any:
    """``json_problem`` as the validator of a variant's free-form ``settings``: raises ValueError."""
    if why := json_problem(value, depth=SETTINGS_DEPTH):
        raise ValueError(why)
    return value


Settings = Annotated[dict[str, Any], AfterValidator(check_settings)]
"""Free-form JSON held to ``json_problem``; ``ingest.fastdecode`` runs the same function after
decoding."""


def as_count(value: object) -> int | None:
    """A reported count as an int within ``Count64``, else None (bools, negatives, text, 1e308)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= INT64_MAX:
        return value
    return None


def as_amount(value: object) -> float | None:
    """A reported amount (cost, seconds) as a finite float ≥ 0, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range
        return None
    return value if math.isfinite(value) and value >= 0 else None


def as_text(value: object, limit: int | None = None) -> str:
    """Agent-written text as valid Unicode: a lone surrogate (from a JSON ``\\ud800`` escape) is
    replaced by U+FFFD, so an event holding it can be written; cut at ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # pair what pairs (UTF-16 surrogates), replace what does not
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text if limit is None else text[:limit]


def engine_version() -> str:
    """This trialhouse's version, from its package metadata (the one source of it)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trialhouse")
    except PackageNotFoundError:
        return "0+unknown"


def file_sha256(path: Path) -> tuple[str, int]:
    """sha256 (hex) and size of the bytes of a file, read in chunks: the hashes events record."""
    h = hashlib.sha256()
    size = 0
    with Path(path).open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size

Outcome = Literal[
    "accepted", "target_failed", "regression", "budget_exhausted", "infra_error", "invalid"
]
"""The only trial outcomes. ``infra_error`` and ``invalid`` are excluded from pass rates."""

OUTCOMES: tuple[str, ...] = Outcome.__args__  # type: ignore[attr-defined]

Layer = Literal["target", "regression", "repository"]
Verdict = Literal["passed", "failed", "inconclusive"]
Stage = Literal["build", "qa", "review"]
CostSource = Literal["reported", "priced"]
CostBasis = Literal["reported", "reported_unknown_basis", "computed"]
"""What a cost claim rests on. ``reported``: the harness priced tokens with prices it
knows (Claude Code ``costBasis: "list"``, litellm's table for mini). ``reported_unknown_basis``:
the harness printed a cost without knowing the model's price (Claude Code invents one for
model names it does not know; mini prints 0.0): kept as a claim, never a trial's cost.
``computed``: tokens × a dated price file, by trialhouse."""


def utc_now() -> datetime:
    return datetime.now(UTC)


_CONFIG = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
"""Every contract model: unknown fields refused, immutable, every float finite."""


class _Event(BaseModel):
    """Envelope shared by every event."""

    model_config = _CONFIG

    schema_version: Literal[1] = SCHEMA_VERSION
    """Event schema version; a reader refuses versions it does not know."""
    run_id: Id
    """Run identifier (also the run's directory name)."""
    trial_id: TrialId | None = None
    """Trial identifier; null for run-level events."""
    seq: Count64
    """Per-run sequence number, strictly increasing in file order."""
    ts: datetime
    """UTC timestamp of the event."""
    prev: str | None = None
    """Hash chain link: sha256 (hex) of the previous line of ``events.jsonl`` exactly as
    written (without its newline); for a run's first line, ``chain_genesis(run_id)``.
    A forged, altered, reordered or removed line breaks the chain (``verify_chain``)."""


# ---------------------------------------------------------------- run level


class VariantInfo(BaseModel):
    """The configuration key of a variant, as recorded for analysis."""

    model_config = _CONFIG

    variant: Id
    config_id: Id
    """Stable hash of everything that can change behaviour (see runner.manifest.config_id)."""
    model: str | None = None
    harness: str | None = None
    harness_version: str | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    settings: Settings = Field(default_factory=dict)
    agent_kind: str
    """null | reference | replay | simulated | command."""
    simulated: bool = False
    """True when results come from the seeded stand-in, never a real model."""
    stage_instruction_hashes: dict[str, str] = Field(default_factory=dict)


class CriterionInfo(BaseModel):
    model_config = _CONFIG

    criterion_id: Id
    layer: Layer
    kind: Literal["command", "judge"]
    description: str = ""
    severity: Literal["blocker", "major", "minor"] | None = None
    """Declared or defaulted severity of a failure of this criterion (None: older runs)."""


class IsolationInfo(BaseModel):
    """How agents and graders of the run were contained (see docs/security.md)."""

    model_config = _CONFIG

    backend: Literal["bubblewrap", "none"]
    isolated: bool
    """False for ``none``: reports say "not isolated" next to every result of the run."""
    version: str | None = None
    network: bool = True
    """Whether sandboxed agents (and graders) could reach the network."""


class ExecutorInfo(BaseModel):
    """Where the run's trials ran (docs/scale.md): the driver's thread pool or a Ray cluster.

    Controls always run on the driver; this names where the trials went.
    """

    model_config = _CONFIG

    kind: Literal["local", "ray"]
    address: str | None = None
    """ray: the cluster address the run joined (``--ray-address``); None when the run
    started its own local Ray instance."""
    ray_version: str | None = None
    nodes: Count32 | None = None
    """ray: alive nodes when the run started."""
    cpus: float | None = None
    """ray: the cluster's CPUs when the run started."""


class GatewayInfo(BaseModel):
    """The run's model gateway (docs/gateway.md): what answered the agents' model calls."""

    model_config = _CONFIG

    mode: Literal["forward", "record", "replay", "scripted"]
    upstreams: dict[str, str] = Field(default_factory=dict)
    """Provider → base URL (forward/record)."""
    key_env: dict[str, str] = Field(default_factory=dict)
    """Provider → the variable the gateway read its key from (the name only, never the value)."""
    script_sha256: dict[str, str] = Field(default_factory=dict)
    """scripted: variant (``*`` for the default) → sha256 of its script."""
    recording_dir: str | None = None
    """record: where the run's recordings are (relative to the run directory);
    replay: the snapshotted input directory replayed."""
    variants: list[Id] = Field(default_factory=list)
    """The variants whose agents went through the gateway."""


class CaseInfo(BaseModel):
    model_config = _CONFIG

    case_id: Id
    holdout: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    """difficulty, task_class, subsystem, language, repository, familiarity (known/unknown)."""
    initial_commit: str
    criteria: list[CriterionInfo] = Field(default_factory=list)
    fingerprint: str | None = None
    """Evaluator fingerprint: criteria (commands, input contents, layers, timeouts,
    severities), reference patch, prepare commands, initial commit and trialhouse's
    grading semantics. Trials of one case with different fingerprints are different
    task versions and are never pooled."""


class RunStarted(_Event):
    """First line of every run: what was run, on what, by which engine."""

    event: Literal["run_started"] = "run_started"
    manifest_id: Id
    manifest_path: str
    manifest_sha256: str
    validation_only: bool = False
    engine_version: str
    os: str
    python: str
    git_version: str
    repository: str
    initial_commit: str
    initial_tree: str
    input_hashes: dict[str, str] = Field(default_factory=dict)
    """Snapshot path (relative to the manifest) → sha256 of every operator-owned input."""
    repetitions: Positive32
    max_attempts: Positive32
    timeout_seconds: float
    max_cost_usd: float | None = None
    stages: list[Stage] = Field(default_factory=list)
    variants: list[VariantInfo] = Field(default_factory=list)
    cases: list[CaseInfo] = Field(default_factory=list)
    jobs: Positive32 = 1
    resumed: bool = False
    simulated: bool = False
    """True when any variant is simulated."""
    isolation: IsolationInfo | None = None
    """The isolation backend used; None in runs written before isolation existed."""
    gateway: GatewayInfo | None = None
    """The run's model gateway; None when no variant used one."""
    executor: ExecutorInfo | None = None
    """Where the trials ran; None in runs written before executors existed."""
    control_repeats: Positive32 | None = None
    controls_from: Id | None = None
    """Run id of the validation-only run whose controls this run reused (``--controls``)."""
    grading_semantics: Int32 | None = None


class ControlResult(_Event):
    """One criterion evaluated during validation (negative or positive control)."""

    event: Literal["control_result"] = "control_result"
    case_id: Id
    control: Literal["negative", "positive"]
    criterion_id: Id
    layer: Layer
    repeat: Count32 = 1
    exit_code: Int32 | None = None
    signal: Int32 | None = None
    timed_out: bool = False
    verdict: Verdict
    expected: Literal["passed", "failed"]
    ok: bool
    duration_s: float


class CaseValidated(_Event):
    """Verdict of a case's controls: usable in scored runs only when ``ok``."""

    event: Literal["case_validated"] = "case_validated"
    case_id: Id
    ok: bool
    problems: list[str] = Field(default_factory=list)
    flaky_criteria: list[str] = Field(default_factory=list)
    baseline: dict[str, Verdict] = Field(default_factory=dict)
    """Criterion id → verdict on the initial commit (the negative control)."""
    repeats: Positive32 | None = None
    fingerprint: str | None = None
    from_run: str | None = None
    """Set when copied from a validation-only run (``run --controls``)."""


class RunFinished(_Event):
    event: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "interrupted", "failed_controls"]
    trials_total: Count64
    trials_finished: Count64
    trials_skipped: Count64 = 0
    unscored_cases: list[Id] = Field(default_factory=list)
    outcomes: dict[str, Count64] = Field(default_factory=dict)
    duration_s: float


# ---------------------------------------------------------------- trial level


class TrialStarted(_Event):
    event: Literal["trial_started"] = "trial_started"
    case_id: Id
    variant: Id
    config_id: Id
    repetition: Positive32
    seed: Int64
    workspace: str
    order: Count64 = Field(description="Position in the run's trial order.")
    case_fingerprint: str | None = None


class TrialSkipped(_Event):
    """A trial not run because its case is not scored (failed or flaky controls)."""

    event: Literal["trial_skipped"] = "trial_skipped"
    case_id: Id
    variant: Id
    config_id: Id
    repetition: Positive32
    reason: str
    case_fingerprint: str | None = None


class PrepareFinished(_Event):
    event: Literal["prepare_finished"] = "prepare_finished"
    command: list[str]
    exit_code: Int32 | None = None
    timed_out: bool = False
    duration_s: float


class WorkspacePrepared(_Event):
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


class AttemptStarted(_Event):
    event: Literal["attempt_started"] = "attempt_started"
    attempt: Positive32
    findings: list[str] = Field(default_factory=list)
    """Concrete findings handed to this attempt from the previous one."""


class StageStarted(_Event):
    event: Literal["stage_started"] = "stage_started"
    attempt: Positive32
    stage: Stage
    time_left_s: float
    prompt_sha256: str


class Usage(BaseModel):
    """What an agent reported about its own consumption. ``None`` means not reported."""

    model_config = _CONFIG

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

    model_config = _CONFIG

    tool_name: str
    tool_use_id: str | None = None


class GatewayUsage(BaseModel):
    """A stage's (or trial's) model calls as the gateway measured them: the provider's own
    counts, independent of what the agent says. A token field is None when any call that
    answered left it unreported."""

    model_config = _CONFIG

    calls: Count64 = 0
    """Every call through the route, side requests and failures included."""
    failed_calls: Count64 = 0
    """Calls answered with an error status, or never answered."""
    retries: Count64 = 0
    input_tokens: Count64 | None = None
    """Uncached input tokens, summed over the calls that answered 200."""
    output_tokens: Count64 | None = None
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    model_s: float = Field(default=0.0, ge=0)
    """Sum of the calls' latencies: time spent waiting on the model."""


class StageFinished(_Event):
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


class Checkpoint(_Event):
    event: Literal["checkpoint"] = "checkpoint"
    attempt: Positive32
    stage: Stage
    sha: str
    """Runner-owned commit of the captured state (never the agent's own .git)."""
    files_changed: Count64
    tree: str | None = None


class IntegrityCheck(_Event):
    event: Literal["integrity_check"] = "integrity_check"
    phase: str
    """e.g. after:build#1, before_grading, after_grading."""
    ok: bool
    mismatches: list[str] = Field(default_factory=list)


class Grading(_Event):
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


FailureCategory = Literal["environment_discovery", "task_interpretation", "source_of_truth", "dependency_choice",
                          "impact_analysis", "implementation", "verification"]
"""The first decisive wrong choice of a failed trial (SPEC §4), whoever assigns it."""


class JudgeInfo(BaseModel):
    """The judge that gave a judgment (``runner.judges.config``): part of the evaluator
    fingerprint, never of ``config_id``; a calibration holds only for the same values."""

    model_config = _CONFIG

    host: Literal["claude-code", "codex", "command", "builtin"]
    provider: Literal["anthropic", "openai"] | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    timeout_s: float = Field(ge=0, le=3600)
    source: Literal["variant", "default"] = "default"
    """``variant``: from ``evaluations.judge``; ``default``: derived from the variant's host."""


class Judgment(_Event):
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


class Budget(_Event):
    event: Literal["budget"] = "budget"
    type: Literal["time", "cost", "workspace"]
    """``workspace``: the workspace (with the trial's HOME and TMP) outgrew ``max_workspace_mb``."""
    status: Literal["exceeded", "unknown"]
    limit: float | None = None
    used: float | None = None


class Flag(_Event):
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
    ]
    path: str
    detail: str = ""


# ---------------------------------------------------------------- model calls and steps

Provider = Literal["anthropic", "openai"]
Api = Literal["messages", "responses", "chat_completions"]
"""Anthropic Messages, OpenAI Responses, OpenAI Chat Completions."""
GatewayMode = Literal["forward", "record", "replay", "scripted"]
GatewayError = Literal[
    "replay_mismatch",
    "script_mismatch",
    "upstream_unreachable",
    "upstream_timeout",
    "bad_request",
]
"""A failure of the gateway's side of a call, not of the model or the agent. A trial with
any of these is ``infra_error`` (a replay that does not match its recording proves nothing
about the agent)."""


class ModelCallFields(BaseModel):
    """One HTTP call an agent made to a model, as the model gateway saw it on the wire.

    Shared by the gateway's own record (``runner.gateway.records.CallRecord``) and the
    ``model_call`` event. Token fields follow ``Usage``: the input buckets are disjoint,
    ``input_tokens`` is the *uncached* input. The numbers are the provider's own, converted
    only in that one way (OpenAI reports cached tokens as part of ``input_tokens``; Anthropic
    reports them apart). A field the provider did not report is None, never 0.
    """

    model_config = _CONFIG

    stage: str | None = None
    """The stage the gateway route was opened for (build / qa / review), when it was."""
    attempt: Positive32 | None = None
    call_index: Count64
    """Order of arrival at the gateway within the route, from 0."""
    mode: GatewayMode
    provider: Provider
    api: Api
    model: str | None = None
    """The model the agent asked for (request body)."""
    service_tier: str | None = None
    """The service tier the request asked for: how a harness setting such as Codex's
    ``service_tier = "fast"`` really reached the provider (or did not)."""
    response_model: str | None = None
    """The model the provider said answered, when it said (routing and aliases differ)."""
    request_id: str | None = None
    """Provider request id (``request-id`` / ``x-request-id`` header), else the response's id."""
    response_id: str | None = None
    """The response's own id (``msg_…``, ``resp_…``, ``chatcmpl-…``): what harness logs
    quote, so it joins a harness's turns to these records."""
    status: Int32 | None = None
    """HTTP status returned to the agent; None when the gateway never answered."""
    streamed: bool = False
    """The agent asked for a server-sent-event stream."""
    position: Count64 | None = None
    """Conversation position: tool results already present in the request. Retries and
    side requests at one point of the conversation share a position."""
    side_request: bool = False
    """A request that offers no tools (titles, summaries, quota probes): not a step."""
    retries: Count64 = 0
    """Earlier calls of this route at the same position with the same tool results: the
    agent's own retries (the gateway never retries on its own)."""
    stop_reason: str | None = None
    """``end_turn`` / ``tool_use`` / ``completed`` / ``tool_calls`` / ``stop`` … as reported."""
    tool_calls: list[str] = Field(default_factory=list)
    """Names of the tools the response asked the agent to run, in order."""
    input_tokens: Count64 | None = None
    """Uncached input tokens as reported (OpenAI: ``input_tokens − cached_tokens``)."""
    output_tokens: Count64 | None = None
    """Final output tokens (Anthropic: ``message_delta.usage``, not ``message_start``'s 1)."""
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    """Anthropic ``cache_creation_input_tokens``; OpenAI reports none (null)."""
    reasoning_tokens: Count64 | None = None
    """OpenAI ``output_tokens_details.reasoning_tokens`` (a part of ``output_tokens``)."""
    provider_usage: Settings | None = None
    """The usage object exactly as the provider sent it (for audits of the conversion)."""
    latency_s: float = Field(ge=0)
    """Request arrival to the last byte sent back to the agent."""
    ttft_s: float | None = Field(default=None, ge=0)
    """Request arrival to the first event carrying model output (streams only)."""
    error_type: str | None = None
    """Provider error type or code (``rate_limit_error``, ``overloaded_error`` …)."""
    error: str | None = None
    """Short error message (redacted, at most 500 characters)."""
    gateway_error: GatewayError | None = None
    """Set when the gateway itself failed the call; see :data:`GatewayError`."""
    usage_note: str | None = None
    """Why tokens are unknown when they are (e.g. ``response carried no usage``)."""
    request_sha256: str
    """sha256 of the request body as received (before redaction)."""


class ModelCall(_Event, ModelCallFields):
    """One model call of a stage through the run's model gateway (``docs/gateway.md``)."""

    event: Literal["model_call"] = "model_call"
    started_at_unix: float = Field(ge=0)
    """When the request arrived at the gateway: seconds since the Unix epoch (UTC)."""


StepKind = Literal["model", "tool"]
Action = Literal["read", "edit", "run", "search", "other"]
"""What a tool call did to the workspace: ``read`` files, ``edit`` files, ``run`` a command
(tests, builds, scripts), ``search`` (grep, glob, web), or ``other``."""


class TrajectoryStep(_Event):
    """One model turn or one tool call of a stage's trajectory (docs/trajectories.md).

    Times are seconds since the Unix epoch (UTC), as precise as the source (harness logs
    carry milliseconds); None where the source has none. Unknown stays None."""

    event: Literal["step"] = "step"
    attempt: Positive32
    stage: Stage
    index: Count64
    """Order within the stage, from 0 (model turns and tool calls interleaved)."""
    kind: StepKind
    source: str
    """``claude-stream-json``, ``codex-rollout``, ``codex-json``, ``mini-trajectory``,
    ``agent-events``, ``gateway``."""
    tool: str | None = None
    """Tool name as the harness calls it (``Edit``, ``exec_command``, ``bash`` …)."""
    action: Action | None = None
    paths: list[str] = Field(default_factory=list)
    """Files read or changed, relative to the workspace when inside it."""
    command: str | None = None
    """The shell command of a command-based step (at most 2000 characters)."""
    exit_code: Int32 | None = None
    ok: bool | None = None
    """Tool: it succeeded (not refused, not failed). Model: the call answered."""
    started_at_unix: float | None = Field(default=None, ge=0)
    ended_at_unix: float | None = Field(default=None, ge=0)
    input_tokens: Count64 | None = None
    output_tokens: Count64 | None = None
    cache_read_tokens: Count64 | None = None
    cache_write_tokens: Count64 | None = None
    call_id: str | None = None
    """Tool call id; for a model turn the response id (joins the ``model_call`` event)."""
    tokens_from: Literal["harness", "gateway"] | None = None
    """Model turns: whose count the token fields are (the gateway's when it saw the call)."""


class AttemptFinished(_Event):
    event: Literal["attempt_finished"] = "attempt_finished"
    attempt: Positive32
    outcome: Outcome
    findings: list[str] = Field(default_factory=list)


class TrialFinished(_Event):
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
    patch_paths: list[str] | None = None
    """Paths ``changes.patch`` touches (prepared tree → final tree; the first 1000), which
    trajectory metrics relate the files an agent read to. None: not recorded."""


Event = Annotated[
    RunStarted
    | ControlResult
    | CaseValidated
    | RunFinished
    | TrialStarted
    | TrialSkipped
    | PrepareFinished
    | WorkspacePrepared
    | AttemptStarted
    | StageStarted
    | StageFinished
    | Checkpoint
    | IntegrityCheck
    | Grading
    | Judgment
    | Budget
    | Flag
    | AttemptFinished
    | ModelCall
    | TrajectoryStep
    | TrialFinished,
    Field(discriminator="event"),
]

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: dict[str, type[_Event]] = {
    m.model_fields["event"].default: m
    for m in Event.__origin__.__args__  # type: ignore[attr-defined]
}


class UnsupportedSchemaVersion(ValueError):
    """A line written by a newer trialhouse than this one."""


def upgrade_event(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring an event dict of any known older version to the current version.

    Version 0 was the pre-release shape (``type`` instead of ``event``, ``time``
    instead of ``ts``); it is upgraded so archived runs keep loading. Versions above
    ``SCHEMA_VERSION`` are refused rather than guessed at.
    """
    version = raw.get("schema_version")
    if version is None and "event" not in raw and "type" in raw:
        version = 0
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("schema_version: missing or not an integer")
    if version > SCHEMA_VERSION:
        raise UnsupportedSchemaVersion(
            f"schema_version {version} is newer than this trialhouse understands "
            f"(max {SCHEMA_VERSION}); upgrade trialhouse to read it"
        )
    if version < 0:
        raise ValueError(f"schema_version {version} is not a known version")
    if version == 0:
        if not isinstance(raw.get("type"), str):
            raise ValueError("schema_version 0 line without a string 'type' (the v0 event name)")
        raw = dict(raw)
        raw["event"] = raw.pop("type")
        if "time" in raw:
            raw["ts"] = raw.pop("time")
        raw["schema_version"] = 1
    return raw


def parse_event(line: str | bytes) -> Event:
    """Parse one JSONL line into its event model (upgrading older versions)."""
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("line is not a JSON object")
    return EVENT_ADAPTER.validate_python(upgrade_event(raw))


def chain_genesis(run_id: str) -> str:
    """The ``prev`` of a run's first line: binds the chain to its run id."""
    return hashlib.sha256(b"trialhouse events chain\0" + run_id.encode("utf-8", "surrogatepass")).hexdigest()


def chain_digest(line: bytes) -> str:
    """The ``prev`` the line after ``line`` must carry."""
    return hashlib.sha256(line.rstrip(b"\r\n")).hexdigest()


@dataclass(frozen=True)
class ChainLink:
    """One line of a file, as far as the hash chain is concerned."""

    line: int
    digest: str
    prev: str | None
    readable: bool = True
    """False for a line that is not even JSON (its ``prev`` cannot be read)."""


@dataclass
class ChainVerdict:
    """What ``verify_chain`` found: lines to refuse (with the reason) and run-level notes."""

    rejected: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    chained: bool = True
    """False for files written before the chain existed (no line carries ``prev``)."""

    @property
    def intact(self) -> bool:
        return not self.rejected and not self.notes


@dataclass(frozen=True)
class Seal:
    """``events.seal.json``: the chain head the runner last vouched for."""

    run_id: str
    lines: int
    head: str
    closed: bool = False


NOT_ON_CHAIN = "not on the run's hash chain (inserted, altered, duplicated or out of order)"

SEAL_NAME = "events.seal.json"
"""Beside ``events.jsonl``: ``{"run_id", "lines", "head", "closed"}``, rewritten atomically."""


def read_seal(events_path: Path) -> Seal | None:
    """The seal beside ``events_path``; None when absent or unreadable."""
    try:
        raw = json.loads((Path(events_path).parent / SEAL_NAME).read_bytes())
        return Seal(str(raw["run_id"]), int(raw["lines"]), str(raw["head"]), bool(raw.get("closed")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def verify_chain(links: Sequence[ChainLink], genesis: str, seal: Seal | None = None) -> ChainVerdict:
    """Which lines of one run's file the hash chain vouches for.

    The chain is walked backwards from an anchor (the seal's head; without a usable
    seal, the file's last line), so a forged line inserted anywhere is a dead branch
    and is rejected. Where the backward walk stops short of ``genesis`` (lines removed
    or altered), the lines that chain forward from ``genesis`` up to the break are kept
    too, except the last of them: it cannot be told apart from an altered line. Past a
    seal's head the chain is followed forwards only while the run was not closed.
    """
    verdict = ChainVerdict()
    readable = [link for link in links if link.readable]
    linked = sum(link.prev is not None for link in readable)
    if not readable or (seal is None and 2 * linked <= len(readable)):
        # Written before the chain existed (most lines carry no link, and there is no seal):
        # read as it is; a stray ``prev`` on a few lines means nothing.
        verdict.chained = False
        return verdict
    by_digest: dict[str, ChainLink] = {}
    for link in links:
        if link.readable and link.prev is None:
            verdict.rejected[link.line] = "carries no hash-chain link (prev) in a chained file"
            continue
        if link.digest in by_digest:
            verdict.rejected[link.line] = f"duplicate of line {by_digest[link.digest].line}; {NOT_ON_CHAIN}"
        else:
            by_digest[link.digest] = link
    live = [link for link in links if link.line not in verdict.rejected]
    anchor = by_digest.get(seal.head) if seal is not None else None
    if seal is not None and anchor is None:
        verdict.notes.append(
            f"events.jsonl lacks the chain head its seal vouches for ({seal.lines} lines sealed): "
            "lines were removed or the file was truncated")
    if anchor is None:
        anchor = live[-1]
    accepted: set[int] = set()
    path: list[int] = []
    cur: ChainLink | None = anchor
    oldest = anchor
    while cur is not None and cur.line not in accepted:
        accepted.add(cur.line)
        path.append(cur.line)
        oldest = cur
        cur = None if cur.prev == genesis else by_digest.get(cur.prev or "")
    if path != sorted(path, reverse=True):
        verdict.notes.append("lines of events.jsonl are out of their hash-chain order (reordered)")
    if oldest.prev != genesis:
        verdict.notes.append(f"the hash chain is broken before line {oldest.line}: "
                             "lines were removed or altered")
        forward: list[ChainLink] = []
        expected = genesis
        for link in live:
            if link.line >= oldest.line:
                break
            if link.prev == expected:
                forward.append(link)
                expected = link.digest
        accepted |= {link.line for link in forward[:-1]}
        garbled = forward and any(not link.readable and forward[-1].line < link.line < oldest.line
                                  for link in links)
        if forward and garbled:  # the unreadable line in between is the altered one
            accepted.add(forward[-1].line)
        elif forward:
            verdict.rejected[forward[-1].line] = (
                "last line before a break in the hash chain (cannot be verified)")
    tail = anchor
    if seal is not None and by_digest.get(seal.head) is anchor and not seal.closed:
        for link in live:
            if link.line > tail.line and link.prev == tail.digest:
                accepted.add(link.line)
                tail = link
    for link in live:
        if not link.readable:
            continue  # the reader refuses it with its own reason
        if link.line not in accepted and link.line not in verdict.rejected:
            late = seal is not None and seal.closed and link.line > anchor.line
            verdict.rejected[link.line] = (
                f"appended after the run was sealed closed; {NOT_ON_CHAIN}" if late else NOT_ON_CHAIN)
    return verdict


def dump_event(event: _Event) -> str:
    """Serialise an event as one JSON line (no trailing newline)."""
    return event.model_dump_json()


def events_json_schema() -> dict[str, Any]:
    schema = EVENT_ADAPTER.json_schema()
    schema["title"] = f"trialhouse events v{SCHEMA_VERSION}"
    return schema


# ---------------------------------------------------------------- trajectory files
#
# Two harness trajectory formats are read both by the runner (its mini-swe-agent agent
# kind) and by the importers (mini-swe-agent run directories, Harbor's ATIF
# ``agent/trajectory.json``), and what a shell command did is the same rule for every
# source of ``step`` events. They live here, beside ``TrajectoryStep``, so each rule is
# written once (ingest reads the runner only through this module). Readers are pure
# functions of parsed JSON and return the step fields as dicts (``runner.agents.steps.Step``
# keyword arguments, minus ``index``/``source``/``stage``); unknown fields are ignored and
# missing ones stay None. docs/trajectories.md documents the heuristics.

STEP_READ_COMMANDS = frozenset({"cat", "head", "tail", "nl", "less", "more", "wc", "file", "stat", "bat", "view"})
STEP_SEARCH_COMMANDS = frozenset({"grep", "rg", "ag", "find", "ls", "tree", "fd", "locate", "which"})
_PATTERN_FIRST = frozenset({"sed", "grep", "rg", "ag", "awk", "perl", "egrep", "fgrep"})
SUBMIT_MARKER = re.compile(r"COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT|MINI_SWE_AGENT_FINAL_OUTPUT")
"""mini-swe-agent's submit command (never executed as a check)."""
EDIT_COMMAND = re.compile(
    r"(^|[;&|]\s*)(sed\s+(-[a-zA-Z]*i|--in-place)|perl\s+-[a-zA-Z]*i|patch\b|git\s+apply\b|tee\b|truncate\b"
    r"|touch\b|mv\b|cp\b|rm\b)|(?<![<>&0-9])>{1,2}\s*(?!&|/dev/null)[\w./-]",
)
"""A shell command that changes files: in-place editors, patch tools, redirections into
a file. A heuristic: ``python -c "open(...,'w')"`` is not recognised."""
CLAUDE_ACTIONS: dict[str, Action] = {
    "Read": "read", "NotebookRead": "read",
    "Edit": "edit", "MultiEdit": "edit", "Write": "edit", "NotebookEdit": "edit",
    "Bash": "run", "BashOutput": "run",
    "Grep": "search", "Glob": "search", "LS": "search", "WebSearch": "search", "WebFetch": "search",
}
"""Claude Code's structured tools → what they do."""
ATIF_FILE_TOOLS: dict[str, Action] = {
    "read_file": "read", "view": "read", "open_file": "read",
    "write_file": "edit", "edit_file": "edit", "str_replace_editor": "edit", "create_file": "edit",
    "apply_patch": "edit", "search": "search", "grep": "search", "find_file": "search",
}


def relative_path(path: str, workspace: str | Path | None) -> str:
    """``path`` relative to the workspace when it lies inside, else as given."""
    from pathlib import PurePosixPath

    if workspace is None:
        return path
    try:
        return PurePosixPath(path).relative_to(PurePosixPath(str(workspace))).as_posix()
    except ValueError:
        return path


def classify_command(command: str) -> tuple[Action, tuple[str, ...]]:
    """What a shell command does and the files it names (a heuristic).

    Edits: in-place editors, patch tools, redirections into a file (``EDIT_COMMAND``).
    Reads: ``cat``/``head``/``tail``/``nl``/``sed -n`` …; searches: ``grep``/``find``/``ls`` ….
    Anything else is ``run`` (tests, builds, scripts). A submit marker is ``other``.
    """
    import shlex
    from pathlib import PurePosixPath

    if SUBMIT_MARKER.search(command):
        return "other", ()
    paths = _shell_paths(command)
    if "apply_patch" in command or EDIT_COMMAND.search(command):
        return "edit", tuple(re.findall(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", command, re.M)) or paths
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    head = PurePosixPath(words[0]).name if words else ""
    if head in STEP_READ_COMMANDS or (head == "sed" and "-n" in words):
        return "read", paths
    if head in STEP_SEARCH_COMMANDS or words[:2] == ["git", "grep"]:
        return "search", paths
    return "run", ()


def _shell_paths(command: str) -> tuple[str, ...]:
    import shlex
    from pathlib import PurePosixPath

    try:
        words = shlex.split(command)
    except ValueError:
        return ()
    out = []
    skip_pattern = False
    for word in words:
        if word in ("&&", "||", ";", "|"):
            skip_pattern = False
            continue
        if PurePosixPath(word).name in _PATTERN_FIRST:  # the first operand is a pattern or script, not a file
            skip_pattern = True
            continue
        if word.startswith("-") or "=" in word:
            continue
        if skip_pattern:
            skip_pattern = False
            continue
        if re.fullmatch(r"[\w./-]+\.[A-Za-z0-9]+|[\w.-]+/[\w./-]*", word) and not word.startswith("http"):
            out.append(word)
    return tuple(dict.fromkeys(out))


def iso_time(value: object) -> datetime | None:
    """An ISO 8601 timestamp with a zone, or None."""
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo is not None else None


def epoch_time(value: object) -> datetime | None:
    """Seconds since the epoch → UTC datetime, or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def mini_commands(message: dict[str, Any]) -> list[str]:
    """The shell commands a mini-swe-agent assistant message asked for (``extra.actions``)."""
    actions = _obj(message.get("extra")).get("actions")
    return [str(a.get("command")) for a in actions or [] if isinstance(a, dict) and a.get("command")]


def mini_trajectory_steps(doc: Any, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    """A mini-swe-agent 2.x trajectory (``*.traj.json``): each assistant message is a model
    turn (usage from its raw response: ``prompt_tokens`` include ``cached_tokens``) followed by
    its ``extra.actions``, each finished by the tool message that answers it (``returncode``,
    ``timestamp``). The submit marker is never executed: no exit status."""
    messages = [m for m in _obj(doc).get("messages") or [] if isinstance(m, dict)]
    observations = {m["tool_call_id"]: _obj(m.get("extra")) for m in messages
                    if m.get("role") in ("tool", "user") and isinstance(m.get("tool_call_id"), str)}
    steps: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            continue
        extra = _obj(message.get("extra"))
        response = _obj(extra.get("response"))
        usage = _obj(response.get("usage"))
        total = as_count(usage.get("prompt_tokens"))
        cached = as_count(_obj(usage.get("prompt_tokens_details")).get("cached_tokens"))
        at = epoch_time(extra.get("timestamp"))
        steps.append({"kind": "model", "ok": True, "ended_at": at, "call_id": response.get("id"),
                      "input_tokens": None if total is None else max(total - (cached or 0), 0),
                      "output_tokens": as_count(usage.get("completion_tokens")), "cache_read_tokens": cached})
        actions = extra.get("actions") if isinstance(extra.get("actions"), list) else []
        for action_obj, command in zip(actions, mini_commands(message), strict=False):
            seen = observations.get(str(action_obj.get("tool_call_id")), {})
            action, paths = classify_command(command)
            code = seen.get("returncode")
            code = code if isinstance(code, int) and not isinstance(code, bool) else None
            if SUBMIT_MARKER.search(command):
                code = None  # the submit marker is never executed (returncode -1): not a failure
            steps.append({"kind": "tool", "tool": "bash", "action": action,
                          "paths": tuple(relative_path(p, workspace) for p in paths), "command": command,
                          "exit_code": code, "ok": None if code is None else code == 0, "started_at": at,
                          "ended_at": epoch_time(seen.get("timestamp")), "call_id": action_obj.get("tool_call_id")})
    return steps


def atif_trajectory_steps(doc: Any, workspace: str | Path | None = None) -> list[dict[str, Any]]:
    """Harbor ``agent/trajectory.json`` (ATIF v1.x): agent steps → a model turn plus its tool
    calls; anything that is not ``ATIF-v1*`` gives no steps.

    ATIF's ``prompt_tokens`` include ``cached_tokens``; ``metrics.extra`` may carry
    ``cache_creation_input_tokens``. A step has one timestamp (when it occurred): it is
    the model turn's end and its tool calls' start. Observations carry no exit status.
    """
    if not str(_obj(doc).get("schema_version", "")).startswith("ATIF-v1"):
        return []
    steps: list[dict[str, Any]] = []
    for item in doc.get("steps") or []:
        if not isinstance(item, dict) or item.get("source") != "agent":
            continue
        at = iso_time(item.get("timestamp"))
        metrics = _obj(item.get("metrics"))
        total, cached = as_count(metrics.get("prompt_tokens")), as_count(metrics.get("cached_tokens"))
        steps.append({"kind": "model", "ok": True, "ended_at": at, "call_id": str(item.get("step_id")),
                      "input_tokens": None if total is None else max(total - (cached or 0), 0),
                      "output_tokens": as_count(metrics.get("completion_tokens")), "cache_read_tokens": cached,
                      "cache_write_tokens": as_count(_obj(metrics.get("extra")).get("cache_creation_input_tokens"))})
        for call in item.get("tool_calls") or []:
            if not isinstance(call, dict):
                continue
            name = str(call.get("function_name") or "tool")
            args = _obj(call.get("arguments"))
            command = next((args[k] for k in ("command", "cmd", "keystrokes") if isinstance(args.get(k), str)), None)
            named = [args[k] for k in ("path", "file_path", "file", "notebook_path") if isinstance(args.get(k), str)]
            if command is not None:
                action, paths = classify_command(command.strip())
            else:  # structured tools: Harbor keeps the harness's own names (Claude's Read/Edit …)
                action, paths = ATIF_FILE_TOOLS.get(name) or CLAUDE_ACTIONS.get(name, "other"), ()
            steps.append({"kind": "tool", "tool": name, "action": action,
                          "paths": tuple(relative_path(p, workspace) for p in (named or paths)),
                          "command": command.strip() if command else None, "started_at": at,
                          "call_id": call.get("tool_call_id")})
    return steps
