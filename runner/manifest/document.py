"""The manifest document: its cases and variants with the run-wide settings (gateway,
isolation, resources, budgets), and the JSON Schema ``trialhouse schema manifest`` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, model_validator

from runner.manifest.cases import Bank, Case
from runner.manifest.sweeps import (
    MAX_CONFIGURATIONS,
    expanded_document,
    sweep_problems,
)
from runner.manifest.values import Argv, Conditions, Id, NonEmptyStr, PathStr, StageName, Strict
from runner.manifest.variants import HARNESS_KINDS, Variant

MANIFEST_SCHEMA_VERSION = 1
ALL_STAGES: tuple[StageName, ...] = ("build", "qa", "review")
"""The stage pipeline, in order: what a manifest with an agent CLI runs when it names none."""
PROGRAM_STAGES: tuple[StageName, ...] = ("build",)
"""What a manifest runs when it names no stages and no variant is an agent CLI: a
``command`` agent is a program the operator wrote, which does the same work whatever
``{stage}`` says unless it reads it, so three stages would run it (and pay for it) three
times an attempt (docs/runner.md, "Stages")."""


def default_stages(variants: Any) -> list[StageName]:
    """The stages of a manifest that names none, from its raw ``variants``: the pipeline
    when any variant is an agent CLI (each stage's prompt asks it for that stage's work),
    else build only."""
    kinds = {v.get("agent", {}).get("kind") for v in variants if isinstance(v, dict)
             and isinstance(v.get("agent"), dict)} if isinstance(variants, list) else set()
    return list(ALL_STAGES if kinds & set(HARNESS_KINDS) else PROGRAM_STAGES)


class Upstream(Strict):
    """Where the gateway forwards one provider's calls, and which variable holds its key."""

    base_url: NonEmptyStr
    """e.g. ``https://api.anthropic.com`` (the agent's ``/v1/…`` path is appended)."""
    api_key_env: NonEmptyStr | None = None
    """Variable of the runner's environment holding the provider key. The gateway sends
    it instead of the agent's dummy key; the value never enters a sandbox and is redacted
    from everything stored. None: no key is added (a local server without auth)."""


class GatewaySettings(Strict):
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
    max_connections: int = Field(default=64, ge=1, le=4096)
    """Connections one trial may hold open to the gateway at once (model and proxy); one
    more is refused and the trial ends ``budget_exhausted`` (docs/gateway.md, "Limits")."""
    max_requests: int = Field(default=5000, ge=1, le=1_000_000)
    """Requests (model calls, other paths, proxy connections) one stage invocation may make;
    beyond it every request is refused and the trial ends ``budget_exhausted``."""

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


NetworkPolicy = Literal["none", "gateway", "open"]
NETWORK_ALIASES: dict[bool, NetworkPolicy] = {True: "open", False: "none"}
"""The boolean spelling of ``isolation.network`` before the three policies: ``true`` was
the host's network (``open``), ``false`` loopback only (``none``)."""
HostName = Annotated[str, StringConstraints(
    min_length=1, max_length=260, pattern=r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$")]
"""An allow-list entry: ``host``, ``*.domain`` (any name below it) or either with ``:port``."""


class Isolation(Strict):
    """How agents, prepare commands and graders are contained (docs/security.md)."""

    backend: Literal["bubblewrap", "none"] = "bubblewrap"
    """``none`` hides nothing; its runs are recorded and reported as not isolated."""
    network: NetworkPolicy | bool | None = None
    """What agents reach: ``none`` (loopback only), ``gateway`` (the run's model gateway and
    nothing else) or ``open`` (the host's network, labelled "network open"). Default:
    ``gateway`` when a variant uses the gateway, else ``none``; ``open`` with backend
    ``none``. ``true``/``false`` are the old spelling of ``open``/``none``. Graders never
    have a network."""
    allow_hosts: list[HostName] = Field(default_factory=list)
    """``gateway`` mode: host names agents may reach through the gateway's HTTP(S) proxy
    (package registries); every connection, allowed or refused, is a ``network_connection``
    event."""
    read_only_paths: list[NonEmptyStr] = Field(default_factory=list)
    """Absolute host paths (tool installs, e.g. an agent CLI) visible read-only inside."""


class Resources(Strict):
    """What one trial asks of a distributed executor (``--executor ray``); ignored locally."""

    num_cpus: float = Field(default=1, gt=0, le=256)
    """CPUs Ray reserves per trial; agents mostly wait on model APIs, so a fraction lets
    more trials share a node (0.25 → four per CPU)."""
    memory_mb: float | None = Field(default=None, gt=0)
    """Memory Ray reserves per trial (a scheduling hint, not a limit); None → no reservation."""


class Rotation(Strict):
    """How a run draws each case's ``hidden_pool`` (``runner.rotation``): seeded, recorded in
    ``run_started.rotation``, the same subset again for the same seed and period."""

    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    period: Literal["none", "run", "day", "week", "month"] = "none"
    """``none``: the seed alone decides (the same subset every run until the seed changes);
    ``day``/``week``/``month``: the seed and the UTC period the run starts in (``2026-W07``);
    ``run``: the seed and the run id (a new subset every run)."""


class Manifest(Strict):
    schema_version: Literal[1]
    id: Id
    repository: PathStr
    initial_commit: NonEmptyStr
    cases: list[Case] = Field(min_length=1, max_length=100)
    variants: list[Variant] = Field(min_length=1, max_length=MAX_CONFIGURATIONS)
    """At most ``MAX_VARIANTS`` variants, a budget sweep counting once; at most
    ``MAX_CONFIGURATIONS`` configurations once the sweeps are expanded."""
    repetitions: int = Field(default=2, ge=1, le=10)
    max_attempts: int = Field(default=1, ge=1, le=3)
    timeout_seconds: float = Field(default=300, gt=0, le=86_400)
    """Per trial; at most a day (a bound the runner's clocks and waits can all hold)."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    prepare_commands: list[Argv] = Field(default_factory=list)
    conditions: Conditions = Field(default_factory=dict)
    """Named conditions of the whole run; each variant's own ``conditions`` override them key
    by key (merged into every variant when the manifest is read)."""
    stages: list[StageName] = Field(default_factory=lambda: list(ALL_STAGES), min_length=1)
    """The stages of every attempt, in order. Unset: build → qa → review when a variant is
    an agent CLI (claude-code, codex, mini-swe-agent), else build only (``default_stages``)."""
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
    rotation: Rotation = Field(default_factory=Rotation)
    """How runs draw the cases' hidden pools (only read when a case has one)."""
    bank: Bank | None = None
    """The behaviour bank the cases draw checks from (``Case.bank``; docs/rollout.md)."""

    def budget(self, case: Case, variant: Variant) -> tuple[float, float | None]:
        """(time budget, spend limit) of one trial: the variant's when it sets one (a sweep's
        point), else the case's, else the manifest's (docs/runner.md, "Budgets")."""
        timeout, cost = variant.timeout_seconds, variant.max_cost_usd
        if isinstance(timeout, list) or isinstance(cost, list):
            raise ValueError(f"variant {variant.id}: a budget sweep must be expanded before it runs "
                             "(runner.manifest.sweeps.expand_sweeps)")
        return (timeout if timeout is not None else case.timeout_seconds if case.timeout_seconds is not None
                else self.timeout_seconds,
                cost if cost is not None else case.max_cost_usd if case.max_cost_usd is not None
                else self.max_cost_usd)

    def uses_gateway(self, variant: Variant) -> bool:
        """Whether ``variant``'s agent sends its model calls through the run's gateway."""
        flag = variant.agent.gateway
        return self.gateway is not None and (flag if flag is not None else variant.agent.is_harness)

    @property
    def network_policy(self) -> NetworkPolicy:
        """The run's network policy, resolved (``Isolation.network``): without a sandbox
        agents share the host's network whatever the manifest says, so it is ``open``."""
        declared = self.isolation.network
        if self.isolation.backend == "none":
            return "open"
        if isinstance(declared, bool):
            return NETWORK_ALIASES[declared]
        if declared is not None:
            return declared
        return "gateway" if any(self.uses_gateway(v) for v in self.variants) else "none"

    @model_validator(mode="before")
    @classmethod
    def _stages_for_the_agents(cls, data: Any) -> Any:
        if isinstance(data, dict) and "stages" not in data:
            data = {**data, "stages": default_stages(data.get("variants"))}
        run_wide, variants = (data.get("conditions"), data.get("variants")) if isinstance(data, dict) else (None, None)
        if isinstance(run_wide, dict) and run_wide and isinstance(variants, list):
            data = {**data, "variants": [{**v, "conditions": {**run_wide, **(v.get("conditions") or {})}}
                                         if isinstance(v, dict) and isinstance(v.get("conditions") or {}, dict)
                                         else v for v in variants]}
        return data

    def condition_env(self, variant: Variant) -> dict[str, str]:
        """``TRIALHOUSE_CONDITION_<KEY>`` for each of ``variant``'s conditions: what its
        prepare commands read to fill or empty a cache (docs/rollout.md, "Named conditions")."""
        return {f"TRIALHOUSE_CONDITION_{k.upper()}": v for k, v in sorted(variant.conditions.items())}

    @model_validator(mode="after")
    def _unique_ids(self) -> Manifest:
        for what, ids in (("case", [c.id for c in self.cases]), ("variant", [v.id for v in self.variants])):
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes:
                raise ValueError(f"duplicate {what} ids: {', '.join(dupes)}")
        if len(set(self.stages)) != len(self.stages):
            raise ValueError("stages must not repeat")
        for problem in sweep_problems(self.variants):
            raise ValueError(problem)
        for v in self.variants:
            if v.agent.gateway and self.gateway is None:
                raise ValueError(f"variant {v.id}: agent.gateway is set but the manifest has no gateway section")
            if v.agent.is_harness and not v.model:
                raise ValueError(f"variant {v.id}: a {v.agent.kind} agent needs the variant's model")
        gw = self.gateway
        if gw is not None:
            variant_ids = {v.id for v in self.variants}
            for what, names in (("scripts", gw.scripts), ("replay_from", gw.replay_from)):
                unknown = sorted(set(names) - variant_ids)
                if unknown:
                    raise ValueError(f"gateway.{what}: unknown variant(s) {', '.join(unknown)}")
        self._network_fits()
        self._bank_fits()
        return self

    def _bank_fits(self) -> None:
        """A case that draws from the bank needs one, and a drawn check's id must not be
        one of the case's own criteria."""
        bank = {c.id for c in self.bank.checks} if self.bank else set()
        for case in self.cases:
            if case.bank is None:
                continue
            if self.bank is None:
                raise ValueError(f"case {case.id}: bank: the manifest has no bank to draw from")
            own = {c.id for c in (*case.criteria, *(case.hidden_pool.criteria if case.hidden_pool else []))}
            clash = sorted(own & bank)
            if clash:
                raise ValueError(f"case {case.id}: criteria {', '.join(clash)} share an id with a bank check")

    def _network_fits(self) -> None:
        """Refuse network settings that cannot work, naming the field."""
        iso, declared = self.isolation, self.isolation.network
        if iso.backend == "none" and declared in ("none", "gateway", False):
            raise ValueError(f"isolation.network: {str(declared).lower()} needs isolation.backend bubblewrap; "
                             "without a sandbox agents share the host's network (leave it unset, or use open)")
        gated = [v.id for v in self.variants if self.uses_gateway(v)]
        if self.network_policy == "none" and gated:
            raise ValueError(f"isolation.network: none leaves no way to the model gateway, which variant(s) "
                             f"{', '.join(gated)} use; use gateway (the default with a gateway)")
        if iso.allow_hosts and self.network_policy != "gateway":
            raise ValueError(f"isolation.allow_hosts: only for isolation.network gateway (the gateway's proxy "
                             f"enforces it), not {self.network_policy}")
        if iso.allow_hosts and not gated:
            raise ValueError("isolation.allow_hosts: no variant uses the model gateway, whose proxy enforces "
                             "the list; add a gateway section (and a variant that uses it), or drop allow_hosts")


def expand_sweeps(m: Manifest) -> Manifest:
    """``m`` with every budget sweep expanded into its points (``m`` itself when it has none;
    ``runner.manifest.sweeps``)."""
    doc = expanded_document(m.model_dump(mode="json", exclude_unset=True), m.variants)
    return m if doc is None else Manifest.model_validate(doc)


def manifest_json_schema() -> dict[str, Any]:
    schema = Manifest.model_json_schema()
    schema["title"] = f"trialhouse manifest v{MANIFEST_SCHEMA_VERSION}"
    return schema


def manifest_dir(path: Path) -> Path:
    return path.resolve().parent
