"""Manifest v1: the benchmark definition, as pydantic models.

The models check shapes, ranges, defaults and uniqueness. Checks that need the
file system or git (input paths, commits, reference patches) live in
``runner.validate`` so that ``trialhouse validate`` can report every problem at once.

Every value must also be usable by the run that follows (``runner.validate`` walks the
raw document with ``value_problems`` first): the event contract's value rules (ints
within 64 bits, finite numbers, valid Unicode, at most ``MAX_DEPTH`` levels of nesting),
no NUL byte anywhere (it cannot be passed in an argv, a path or an environment),
``MAX_TEXT`` characters per string, paths at most ``PATH_MAX_BYTES`` with components at
most ``NAME_MAX_BYTES``, and case and variant ids short enough that every file name the
runner derives from them fits (``CASE_VARIANT_ID_MAX``).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

from contract.values import ID_MAX, ID_PATTERN, INT64_MAX, INT64_MIN, MAX_DEPTH

MANIFEST_SCHEMA_VERSION = 1

CASE_VARIANT_ID_MAX = 100
"""Longest case or variant id. The runner names each trial's directory
``<case>__<variant>__r<rep>`` (``runner.run.trial_id``; repetitions ≤ 10): at most
100 + 2 + 100 + 3 + 2 = 207 bytes, inside the 255-byte file name limit with room for
the suffixes written beside it. Criterion and manifest ids: ``contract.values.ID_MAX``."""
MAX_TEXT = 1_000_000
"""Longest string anywhere in a manifest (prompts, descriptions, policy text), in characters."""
PATH_MAX_BYTES = 4096
NAME_MAX_BYTES = 255
"""Longest path (UTF-8 bytes) and path component a manifest may name (Linux PATH_MAX/NAME_MAX)."""

Id = Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX, pattern=ID_PATTERN)]
CaseVariantId = Annotated[str, StringConstraints(min_length=1, max_length=CASE_VARIANT_ID_MAX, pattern=ID_PATTERN)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]


def path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a path on this system (None when it can): NUL, lone surrogates, length."""
    if "\0" in value:
        return "contains a NUL byte"
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    if len(raw) > PATH_MAX_BYTES:
        return f"is {len(raw)} bytes long; a path may have at most {PATH_MAX_BYTES}"
    if any(len(part) > NAME_MAX_BYTES for part in raw.split(b"/")):
        return f"has a component over {NAME_MAX_BYTES} bytes (the longest file name allowed)"
    return None


def _usable_path(value: str) -> str:
    if why := path_problem(value):
        raise ValueError(why)
    return value


PathStr = Annotated[str, StringConstraints(min_length=1), AfterValidator(_usable_path)]
"""A path a run opens (relative to the manifest, or a repository)."""
Argv = Annotated[list[NonEmptyStr], Field(min_length=1)]
EnvName = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
StageName = Literal["build", "qa", "review"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def value_problems(raw: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Every value of a raw manifest document that no run could use, as (location, why).

    Applied before the models, so it also covers free-form values (``settings``) and values
    the file-system checks would otherwise be handed (a NUL in a path raises in ``open``).
    """
    out: list[tuple[tuple[Any, ...], str]] = []

    def walk(value: Any, loc: tuple[Any, ...], depth: int) -> None:
        if isinstance(value, str):
            if "\0" in value:
                out.append((loc, "contains a NUL byte"))
            elif len(value) > MAX_TEXT:
                out.append((loc, f"is {len(value)} characters long; the limit is {MAX_TEXT}"))
            else:
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    out.append((loc, "is not valid Unicode (a lone surrogate such as \\ud800)"))
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                out.append((loc, "integer out of range (must fit 64 bits)"))
        elif isinstance(value, float):
            if not math.isfinite(value):
                out.append((loc, "must be a finite number (not NaN or Infinity)"))
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                out.append((loc, f"nested more than {MAX_DEPTH} levels deep"))
                return
            for k, v in value.items() if isinstance(value, dict) else enumerate(value):
                if isinstance(k, str):
                    walk(k, loc, depth)  # a bad key is reported where it is
                walk(v, (*loc, k), depth + 1)

    walk(raw, (), 1)
    return out


class Judge(_Strict):
    """A supplementary model judgment; never decides a trial on its own."""

    rubric: PathStr
    """Markdown rubric path relative to the manifest."""
    calibration: PathStr | None = None
    model: str | None = None


DEFAULT_SEVERITY = {"target": "major", "regression": "major", "repository": "minor"}
"""Severity of a criterion that declares none: nothing is a blocker unless declared."""


class Criterion(_Strict):
    id: Id
    description: str = ""
    layer: Literal["target", "regression", "repository"] = "target"
    command: Argv | None = None
    """argv array; ``{inputs}`` and ``{workspace}`` are substituted inside elements."""
    judge: Judge | None = None
    files: list[PathStr] = Field(default_factory=list)
    """Operator-owned input files the criterion reads (relative to the manifest)."""
    timeout_seconds: float = Field(default=60, gt=0, le=600)
    success_token: bool = False
    """Pass only if the grader also writes the runner's one-time token (read from its
    stdin) to ``$TRIALHOUSE_RESULT_FILE``: an early ``exit(0)`` is then a failure."""
    severity: Literal["blocker", "major", "minor"] | None = None
    """How bad a regression of this criterion is; None → the layer's default
    (``DEFAULT_SEVERITY``). A configuration with a blocker regression is ineligible."""
    flaky_fixed: NonEmptyStr | None = None
    """Set (with a note) once a criterion found flaky has been fixed: it becomes a new
    evaluator version, and its controls must agree with themselves again."""

    @property
    def resolved_severity(self) -> str:
        return self.severity or DEFAULT_SEVERITY[self.layer]

    @model_validator(mode="after")
    def _command_xor_judge(self) -> Criterion:
        if (self.command is None) == (self.judge is None):
            raise ValueError("needs exactly one of command (argv array) or judge")
        return self

    @property
    def deterministic(self) -> bool:
        return self.command is not None


class Labels(_Strict):
    difficulty: Literal["easy", "medium", "hard"] | None = None
    task_class: str | None = None
    subsystem: str | None = None
    language: str | None = None
    repository: str | None = None
    """Repository label used for clustering (defaults to the manifest's repository name)."""
    familiarity: Literal["known", "unknown"] | None = None


class Case(_Strict):
    id: CaseVariantId
    prompt: NonEmptyStr
    reference_patch: PathStr
    holdout: bool = False
    labels: Labels = Field(default_factory=Labels)
    repository: PathStr | None = None
    initial_commit: str | None = None
    allowed_paths: list[NonEmptyStr] | None = None
    criteria: list[Criterion] = Field(min_length=1)

    @model_validator(mode="after")
    def _criteria_ok(self) -> Case:
        ids = [c.id for c in self.criteria]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate criterion ids: {', '.join(dupes)}")
        if not any(c.deterministic for c in self.criteria):
            raise ValueError("needs at least one deterministic criterion (with a command)")
        return self


HARNESS_KINDS = ("claude-code", "codex", "mini-swe-agent")
"""Agent kinds that are real agent CLIs, run headless through ``runner.agents.harness``."""

_HARNESS_FIELDS = ("binary", "max_turns", "max_budget_usd", "permission_mode", "allowed_tools",
                   "disallowed_tools", "output_format", "codex_sandbox", "max_retries", "mini_config",
                   "config", "extra_args")


class Agent(_Strict):
    """How a variant's agent is invoked.

    ``null``/``reference``/``replay``/``simulated`` are built in; ``command`` runs any
    program as a subprocess (argv, no shell); ``claude-code``, ``codex`` and
    ``mini-swe-agent`` run that CLI headless with the settings below (docs/agents.md).
    """

    kind: Literal["null", "reference", "replay", "simulated", "command", "claude-code", "codex", "mini-swe-agent"]
    argv: list[NonEmptyStr] | None = None
    """For ``command``: argv with placeholders {workspace} {prompt_file} {model} {stage} …"""
    usage_format: Literal[
        "none", "agent-events", "claude-json", "claude-stream-json", "codex-json"
    ] = "agent-events"
    pass_env: list[EnvName] = Field(default_factory=list)
    """Environment variables passed through to the agent (none by default)."""
    secret_env: list[EnvName] = Field(default_factory=list)
    """Variables whose values are redacted from stored output (pass_env entries too)."""
    patches_dir: PathStr | None = None
    """For ``replay``: directory with ``<case_id>.patch`` files, relative to the manifest."""
    skill: float | None = Field(default=None, ge=0, le=1)
    """For ``simulated``: probability of choosing the correct candidate change."""
    candidates_dir: PathStr | None = None
    """For ``simulated``: directory (relative to the manifest) of ``<case_id>/<label>.patch``
    candidate changes, label ∈ correct | wrong | regression."""
    price_per_mtok: float | None = Field(default=None, ge=0)
    """For ``simulated``: synthetic price used to report cost (None → cost unreported)."""
    gateway: bool | None = None
    """Send the agent's model calls through the run's model gateway (the manifest's
    ``gateway`` section). Default: yes for the harness kinds when there is a gateway; a
    ``command`` agent opts in and reads ``TRIALHOUSE_MODEL_BASE_URL``/``{model_base_url}``."""
    # -- harness kinds (claude-code, codex, mini-swe-agent): runner.agents.harness.HarnessSettings
    binary: NonEmptyStr | None = None
    """The CLI to run: a name found on the agent's PATH (default ``claude``/``codex``/``mini``),
    an absolute path, or a path relative to the manifest."""
    max_turns: int | None = Field(default=None, ge=1)
    """Claude ``--max-turns``; mini ``agent.step_limit`` (Codex has none)."""
    max_budget_usd: float | None = Field(default=None, gt=0)
    """Claude ``--max-budget-usd``; mini ``--cost-limit``."""
    permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk"] | None = None
    """Claude ``--permission-mode`` (default ``acceptEdits``)."""
    allowed_tools: list[NonEmptyStr] = Field(default_factory=list)
    """Claude ``--allowedTools``."""
    disallowed_tools: list[NonEmptyStr] = Field(default_factory=list)
    output_format: Literal["json", "stream-json"] | None = None
    """Claude output (default ``stream-json``, which keeps per-step evidence)."""
    codex_sandbox: Literal["read-only", "workspace-write", "danger-full-access"] | None = None
    """Codex ``-s`` (default ``workspace-write``)."""
    max_retries: int | None = Field(default=None, ge=0)
    """Retries of a failed model call inside the harness (default 2)."""
    mini_config: NonEmptyStr | None = None
    """mini-swe-agent base config (default ``mini.yaml``)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Codex ``-c key=value`` (TOML values) / mini ``-c key=value`` overrides."""
    extra_args: list[NonEmptyStr] = Field(default_factory=list)
    """Appended to the harness's argv before the prompt."""

    @property
    def is_harness(self) -> bool:
        return self.kind in HARNESS_KINDS

    @model_validator(mode="after")
    def _kind_fields(self) -> Agent:
        if self.kind == "command" and not self.argv:
            raise ValueError("command agents need argv (a non-empty list of strings)")
        if self.kind == "replay" and not self.patches_dir:
            raise ValueError("replay agents need patches_dir")
        if self.kind == "simulated" and (self.skill is None or not self.candidates_dir):
            raise ValueError("simulated agents need skill (0..1) and candidates_dir")
        if not self.is_harness:
            used = [f for f in _HARNESS_FIELDS if f in self.model_fields_set]
            if used:
                raise ValueError(f"{', '.join(used)}: only for the harness kinds ({', '.join(HARNESS_KINDS)})")
        elif self.argv is not None:
            raise ValueError(f"argv: a {self.kind} agent's argv is built by trialhouse; use extra_args")
        if self.gateway and self.kind not in ("command", *HARNESS_KINDS):
            raise ValueError(f"gateway: {self.kind} agents call no model")
        return self


class JudgeSettings(_Strict):
    """How a variant's judge criteria are judged (docs/judges.md). Omitted fields follow
    ``runner.judges.config.resolve``: the variant's host (Codex for the other hosts), that
    provider's economical model, low effort. Never changes the builder's own pins."""

    host: Literal["claude-code", "codex", "command", "builtin"] | None = None
    """``builtin``: trialhouse's tool-free Messages client (``runner.judges.client``)."""
    model: NonEmptyStr | None = None
    reasoning_effort: NonEmptyStr | None = None
    timeout_seconds: float = Field(default=120, gt=0, le=3600)
    argv: list[NonEmptyStr] | None = None
    """``command`` host: argv; placeholders ``{evidence}`` (the read-only evidence
    directory), ``{prompt_file}``, ``{model}``, ``{model_base_url}``."""
    binary: NonEmptyStr | None = None
    """claude-code/codex: the CLI (as ``agent.binary``)."""
    script: PathStr | None = None
    """A gateway script (relative to the manifest) answering this judge: the judge's
    gateway runs in scripted mode. Without one, judges go to the providers (forward)."""

    @model_validator(mode="after")
    def _host_fields(self) -> JudgeSettings:
        if (self.host == "command") != bool(self.argv):
            raise ValueError("argv: needed by, and only for, host command")
        if self.binary and self.host not in ("claude-code", "codex"):
            raise ValueError("binary: only for hosts claude-code and codex")
        return self


class Evaluations(_Strict):
    judge: JudgeSettings = Field(default_factory=JudgeSettings)


class Variant(_Strict):
    id: CaseVariantId
    model: str | None = None
    harness: str | None = None
    harness_version: str | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    agent: Agent
    stage_instructions: dict[StageName, list[PathStr]] = Field(default_factory=dict)
    """Stage → markdown paths (relative to the manifest) snapshotted into the stage prompt."""
    evaluations: Evaluations = Field(default_factory=Evaluations)
    """How this variant's results are evaluated (judges): part of the evaluator
    fingerprint, not of ``config_id`` (it changes no behaviour of the agent)."""


class Upstream(_Strict):
    """Where the gateway forwards one provider's calls, and which variable holds its key."""

    base_url: NonEmptyStr
    """e.g. ``https://api.anthropic.com`` (the agent's ``/v1/…`` path is appended)."""
    api_key_env: NonEmptyStr | None = None
    """Variable of the runner's environment holding the provider key. The gateway sends
    it instead of the agent's dummy key; the value never enters a sandbox and is redacted
    from everything stored. None: no key is added (a local server without auth)."""


class GatewaySettings(_Strict):
    """The run's model gateway (docs/gateway.md): one loopback proxy for all trials."""

    mode: Literal["forward", "record", "replay", "scripted"]
    upstreams: dict[Literal["anthropic", "openai"], Upstream] = Field(default_factory=dict)
    """forward/record: per provider; a provider not named goes to its public API with
    ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY``."""
    script: NonEmptyStr | None = None
    """scripted: a YAML or JSON script (``runner.gateway.script.Script``), relative to the
    manifest; snapshotted like every input. ``{workspace}`` in it is the trial's workspace."""
    scripts: dict[Id, NonEmptyStr] = Field(default_factory=dict)
    """scripted: variant id → its own script (default: ``script``)."""
    recording_dir: NonEmptyStr | None = None
    """replay: a directory of recordings (a record run's ``gateway/recordings``, copied
    under the manifest directory), snapshotted. record mode writes into the run directory."""
    replay_from: dict[Id, Id] = Field(default_factory=dict)
    """replay: variant id → the variant whose recordings it replays (default: its own)."""
    secret_env: list[NonEmptyStr] = Field(default_factory=list)
    """More variables whose values are redacted from recordings and events."""
    idle_timeout_s: float = Field(default=300, gt=0)
    """forward/record: an upstream silent this long is ``upstream_timeout`` (infra_error)."""

    @model_validator(mode="after")
    def _mode_fields(self) -> GatewaySettings:
        if self.mode == "scripted" and not (self.script or self.scripts):
            raise ValueError("scripted mode needs script (or scripts per variant)")
        if self.mode != "scripted" and (self.script or self.scripts):
            raise ValueError(f"script/scripts: only for scripted mode, not {self.mode}")
        if self.mode == "replay" and not self.recording_dir:
            raise ValueError("replay mode needs recording_dir (the recordings to answer from)")
        if self.mode != "replay" and (self.recording_dir or self.replay_from):
            raise ValueError(f"recording_dir/replay_from: only for replay mode, not {self.mode}"
                             " (record mode writes into the run directory)")
        if self.mode not in ("forward", "record") and self.upstreams:
            raise ValueError(f"upstreams: only for forward and record modes, not {self.mode}")
        return self


class Isolation(_Strict):
    """How agents, prepare commands and graders are contained (docs/security.md)."""

    backend: Literal["bubblewrap", "none"] = "bubblewrap"
    """``none`` hides nothing; its runs are recorded and reported as not isolated."""
    network: bool = True
    """Agents call model APIs, so the network is on unless switched off here."""
    read_only_paths: list[NonEmptyStr] = Field(default_factory=list)
    """Absolute host paths (tool installs, e.g. an agent CLI) visible read-only inside."""


class Resources(_Strict):
    """What one trial asks of a distributed executor (``--executor ray``); ignored locally."""

    num_cpus: float = Field(default=1, gt=0, le=256)
    """CPUs Ray reserves per trial; agents mostly wait on model APIs, so a fraction lets
    more trials share a node (0.25 → four per CPU)."""
    memory_mb: float | None = Field(default=None, gt=0)
    """Memory Ray reserves per trial (a scheduling hint, not a limit); None → no reservation."""


class Manifest(_Strict):
    schema_version: Literal[1]
    id: Id
    repository: PathStr
    initial_commit: NonEmptyStr
    cases: list[Case] = Field(min_length=1, max_length=100)
    variants: list[Variant] = Field(min_length=1, max_length=8)
    repetitions: int = Field(default=2, ge=1, le=10)
    max_attempts: int = Field(default=1, ge=1, le=3)
    timeout_seconds: float = Field(default=300, gt=0, le=86_400)
    """Per trial; at most a day (a bound the runner's clocks and waits can all hold)."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    prepare_commands: list[Argv] = Field(default_factory=list)
    stages: list[StageName] = Field(default_factory=lambda: ["build", "qa", "review"], min_length=1)
    reveal_grader_output: bool = False
    """Opt in to passing grader output (not only descriptions) to retries."""
    benchmark_policy: str | None = None
    """Extra policy text prepended to every stage prompt."""
    isolation: Isolation = Field(default_factory=Isolation)
    resources: Resources = Field(default_factory=Resources)
    max_workspace_mb: float = Field(default=4096, gt=0)
    """Cap on the workspace plus the trial's HOME and TMP; above it the trial ends
    ``budget_exhausted`` (the runner's own capture would otherwise be unbounded)."""
    control_repeats: int = Field(default=5, ge=1, le=20)
    """Repeats of each control; 5 catches a 50% coin-flip criterion with probability
    1 - 4·2⁻¹⁰ ≈ 0.996 (docs/runner.md). ``run --repeats`` overrides it."""
    checkpoint_exclude: list[NonEmptyStr] | None = None
    """gitignore patterns never captured (private files, runtime state); None → the
    documented default list (runner.capture.DEFAULT_EXCLUDES)."""
    gateway: GatewaySettings | None = None
    """The model gateway the runner starts for the run (docs/gateway.md)."""

    def uses_gateway(self, variant: Variant) -> bool:
        """Whether ``variant``'s agent sends its model calls through the run's gateway."""
        flag = variant.agent.gateway
        return self.gateway is not None and (flag if flag is not None else variant.agent.is_harness)

    @model_validator(mode="after")
    def _unique_ids(self) -> Manifest:
        for what, ids in (("case", [c.id for c in self.cases]), ("variant", [v.id for v in self.variants])):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"duplicate {what} ids: {', '.join(dupes)}")
        if len(set(self.stages)) != len(self.stages):
            raise ValueError("stages must not repeat")
        for v in self.variants:
            if v.agent.gateway and self.gateway is None:
                raise ValueError(f"variant {v.id}: agent.gateway is set but the manifest has no gateway section")
            if v.agent.is_harness and not v.model:
                raise ValueError(f"variant {v.id}: a {v.agent.kind} agent needs the variant's model")
        gw = self.gateway
        if gw is not None:
            ids = {v.id for v in self.variants}
            for what, names in (("scripts", gw.scripts), ("replay_from", gw.replay_from)):
                unknown = sorted(set(names) - ids)
                if unknown:
                    raise ValueError(f"gateway.{what}: unknown variant(s) {', '.join(unknown)}")
            if not self.isolation.network and any(self.uses_gateway(v) for v in self.variants):
                raise ValueError(
                    "gateway: agents reach the gateway over the host's loopback, which a sandbox "
                    "with isolation.network false cannot see; turn the network on, or remove the gateway")
        return self


def config_id(variant: Variant, instruction_texts: dict[str, str], extra: dict[str, Any] | None = None) -> str:
    """Stable hash of everything about a variant that can change behaviour.

    ``instruction_texts`` maps each snapshotted instruction path to its full text, so
    editing an instruction file yields a new configuration. ``extra``: what the run
    derives that changes behaviour too (a harness's effective settings, the gateway
    script or recording answering it; ``runner.run.variant_record``); absent for the
    other kinds, so their ids are what they always were.
    """
    payload = variant.model_dump(mode="json", exclude={"id", "evaluations"})
    agent = payload["agent"]
    for name in ("gateway", *_HARNESS_FIELDS):  # fields added later: at their defaults they change nothing
        if agent.get(name) == Agent.model_fields[name].get_default(call_default_factory=True):
            del agent[name]
    payload["instruction_texts"] = dict(sorted(instruction_texts.items()))
    if extra:
        payload["derived"] = extra
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def manifest_json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema()
    schema["title"] = f"trialhouse manifest v{MANIFEST_SCHEMA_VERSION}"
    return schema


def manifest_dir(path: Path) -> Path:
    return path.resolve().parent
