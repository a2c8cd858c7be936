"""Run-level events: what was run, on what, the controls, and how the run ended."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field

from contract.envelope import MODEL_CONFIG, BaseEvent, Layer, Stage, Verdict
from contract.fields import Count32, Count64, Id, Int32, Int64, Positive32, Settings


class VariantInfo(BaseModel):
    """The configuration key of a variant, as recorded for analysis."""

    model_config = MODEL_CONFIG

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
    timeout_seconds: float | None = None
    """The variant's own time budget per trial (None: the case's, else the run's)."""
    max_cost_usd: float | None = None
    """The variant's own spend limit per trial (None: the case's, else the run's)."""
    sweep: Id | None = None
    """The budget sweep this configuration is a point of (docs/runner.md, "Budgets and
    budget sweeps"): its points share everything but ``sweep_budget``."""
    sweep_budget: Literal["timeout_seconds", "max_cost_usd"] | None = None
    sweep_value: float | None = None
    """This point's value of ``sweep_budget``."""
    conditions: dict[str, str] = Field(default_factory=dict)
    """Named conditions the variant ran under (the run's, overridden by the variant's; e.g.
    ``cache: cold``); part of ``config_id`` when any is declared (docs/rollout.md)."""


class CriterionInfo(BaseModel):
    model_config = MODEL_CONFIG

    criterion_id: Id
    layer: Layer
    kind: Literal["command", "judge"]
    description: str = ""
    severity: Literal["blocker", "major", "minor"] | None = None
    """Declared or defaulted severity of a failure of this criterion (None: older runs)."""
    visible: bool = False
    """The agent could run this check (``$TRIALHOUSE_CHECKS``); hidden otherwise."""
    pooled: bool = False
    """Drawn from the case's hidden pool for this run (``RunStarted.rotation``)."""
    in_process: bool = False
    """The manifest declares that its grader imports workspace code in its own process:
    labelled ``in-process`` in reports (docs/security.md, "The verdict channel")."""
    tier: Literal["fast", "broad", "scheduled"] = "fast"
    """When it runs: every attempt, before acceptance, or only on a schedule (docs/rollout.md)."""
    subsystem: str | None = None
    """Bank tags (``subsystem``, ``mechanism``, ``consequence``, ``incident``): what the check guards."""
    mechanism: str | None = None
    consequence: str | None = None
    incident: str | None = None
    banked: bool = False
    """Drawn from the manifest's behaviour bank for this run (``RunStarted.bank``)."""


class SandboxLimitsInfo(BaseModel):
    """The resource limits of every sandbox of a run (docs/runner.md, "Limits")."""

    model_config = MODEL_CONFIG

    mechanism: Literal["cgroup-v2", "cgroup-v1", "rlimit"]
    """``cgroup-v2`` or ``cgroup-v1``: a cgroup per sandbox (pids, memory, cpu), its counters
    naming the limit reached; ``rlimit``: RLIMIT_NPROC/DATA and a lower priority, which refuse
    but do not tell."""
    why_no_cgroup: str | None = None
    """Under ``rlimit``: why neither cgroup version could be used (what to change)."""
    processes: Count64
    memory_mb: Count64
    cpus: float
    tmpfs_mb: Count64
    workspace_mb: float
    workspace_files: Count64


class IsolationInfo(BaseModel):
    """How agents and graders of the run were contained (see docs/security.md)."""

    model_config = MODEL_CONFIG

    backend: Literal["bubblewrap", "none"]
    isolated: bool
    """False for ``none``: reports say "not isolated" next to every result of the run."""
    version: str | None = None
    network: bool = True
    """Whether agents had the host's network (``network_policy`` ``open``); graders never do."""
    network_policy: Literal["none", "gateway", "open"] | None = None
    """What agents could reach: loopback only, the run's model gateway only, or the host's
    network (labelled "network open"). None in runs written before the three policies
    (``network`` then says on or off)."""
    allow_hosts: list[str] = Field(default_factory=list)
    """``gateway`` policy: host names the gateway's proxy let agents reach."""
    sandbox_user: Literal["own-id", "runner"] | None = None
    """``own-id``: a root runner ran each sandbox as an unprivileged id of its own (from
    ``sandbox_ids``); ``runner``: the runner's own unprivileged id, mapped by bubblewrap;
    None: no sandbox (``none``) or a run written before."""
    sandbox_ids: list[Count64] | None = None
    """[first, count] of the ids ``own-id`` sandboxes ran as."""
    seccomp: bool = False
    """Sandboxes ran under the seccomp filter (docs/security.md, "System calls")."""
    limits: SandboxLimitsInfo | None = None
    """The resource limits every sandbox had, and what enforced them."""


class ExecutorInfo(BaseModel):
    """Where the run's trials ran (docs/scale.md): the driver's thread pool or a Ray cluster.

    Controls always run on the driver; this names where the trials went.
    """

    model_config = MODEL_CONFIG

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

    model_config = MODEL_CONFIG

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
    model_config = MODEL_CONFIG

    case_id: Id
    holdout: bool = False
    canary: bool = False
    """Runs in every periodic run; its outcome is watched for evaluator or environment drift."""
    labels: dict[str, str] = Field(default_factory=dict)
    """difficulty, task_class, subsystem, language, repository, familiarity (known/unknown)."""
    initial_commit: str
    criteria: list[CriterionInfo] = Field(default_factory=list)
    fingerprint: str | None = None
    """Evaluator fingerprint: criteria (commands, input contents, layers, timeouts,
    severities), reference patch, prepare commands, initial commit and trialhouse's
    grading semantics. Trials of one case with different fingerprints are different
    task versions and are never pooled."""
    timeout_seconds: float | None = None
    """The case's own time budget per trial (None: the run's)."""
    max_cost_usd: float | None = None
    """The case's own spend limit per trial (None: the run's)."""


class BankInfo(BaseModel):
    """What each case drew from the behaviour bank (``runner.bank``): reproducible from the
    seed, the case ids and the bank's check ids."""

    model_config = MODEL_CONFIG

    seed: Int64
    matched: dict[str, list[Id]] = Field(default_factory=dict)
    """Case id → the bank checks its tags matched."""
    sampled: dict[str, list[Id]] = Field(default_factory=dict)
    """Case id → the checks drawn from the rest of the bank (the seeded sample)."""


class RotationInfo(BaseModel):
    """How this run drew the cases' hidden pools (``runner.rotation``): reproducible from ``key``."""

    model_config = MODEL_CONFIG

    seed: Int64
    period: Literal["none", "run", "day", "week", "month"]
    key: str
    """What the subsets were drawn with: the seed, and the period or run id."""
    chosen: dict[str, list[Id]] = Field(default_factory=dict)
    """Case id → the pool criteria this run grades."""
    pools: dict[str, list[Id]] = Field(default_factory=dict)
    """Case id → every criterion of its pool."""


class RunStarted(BaseEvent):
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
    chain_key: str | None = None
    """Fingerprint of the key the run's seal is signed with (``contract.chain.key_fingerprint``;
    the key itself stays in the user's config folder). None: an unkeyed run."""
    """Run id of the validation-only run whose controls this run reused (``--controls``)."""
    grading_semantics: Int32 | None = None
    rotation: RotationInfo | None = None
    """How the hidden pools were drawn; None when no case has one."""
    regrade_of: Id | None = None
    """Set by ``trialhouse regrade``: the run whose trials' final states this run grades
    again with the manifest's current graders (its variants and budgets are that run's;
    no agent runs)."""
    bank: BankInfo | None = None
    """What each case drew from the behaviour bank; None when no case draws."""
    tier: Literal["scheduled"] | None = None
    """``trialhouse run --tier scheduled``: this regrade graded every tier, scheduled checks
    included (docs/rollout.md)."""


class ControlResult(BaseEvent):
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
    pre_existing: bool = False
    """A regression or repository criterion that already fails on the initial commit (and
    so still fails with the reference patch): not a problem of the case (``ok``), noise for
    its trials (docs/runner.md, "Pre-existing failures")."""


class PreExisting(BaseModel):
    """A regression or repository criterion that fails on the initial commit: the case is
    scored, and a trial's failure of it is noise, not a regression."""

    model_config = MODEL_CONFIG

    criterion_id: Id
    layer: Layer
    output: str = ""
    """The tail of its output on the initial commit (stdout, then stderr; redacted, at most
    2000 characters)."""
    output_path: str | None = None
    """Its full output on the initial commit, relative to the run directory."""


class CaseValidated(BaseEvent):
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
    pre_existing: list[PreExisting] = Field(default_factory=list)
    """Regression and repository criteria already failing on the initial commit (each with
    its output there); their failures are graded as noise (``Grading.baseline``)."""


class RunFinished(BaseEvent):
    event: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "interrupted", "failed_controls"]
    trials_total: Count64
    trials_finished: Count64
    trials_skipped: Count64 = 0
    unscored_cases: list[Id] = Field(default_factory=list)
    outcomes: dict[str, Count64] = Field(default_factory=dict)
    duration_s: float


def current_controls(starts: Iterable[int], validated: Mapping[str, int],
                     controls: Sequence[tuple[int, str]]) -> list[bool]:
    """Which ``control_result`` events count: for each (seq, case id) of ``controls``, whether
    it belongs to the session (the part of the log after one ``run_started``, ``starts``
    their seqs) that wrote its case's latest ``case_validated`` (``validated``: case id →
    its seq), else to the latest session holding results of that case. A runner killed
    during a case's controls left part of them; ``--resume`` runs them again whole, and
    only that whole set counts (docs/runner.md, "Operations")."""
    marks = sorted(starts)

    def session(seq: int) -> int:
        return bisect_right(marks, seq)

    chosen: dict[str, int] = {case: session(seq) for case, seq in validated.items()}
    for seq, case in controls:
        if case not in validated:
            chosen[case] = max(chosen.get(case, -1), session(seq))
    return [session(seq) == chosen[case] for seq, case in controls]
