"""A variant: the configuration under test (model, harness, settings, its agent) and how its
results are judged; ``config_id`` hashes what of it can change behaviour (docs/agents.md)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from runner.manifest.values import (
    CaseVariantId,
    Conditions,
    EnvName,
    Id,
    NonEmptyStr,
    PathStr,
    StageName,
    Strict,
)

HARNESS_KINDS = ("claude-code", "codex", "mini-swe-agent")
"""Agent kinds that are real agent CLIs, run headless through ``runner.agents.harness``."""

HARNESS_FIELDS = ("binary", "max_turns", "max_budget_usd", "permission_mode", "allowed_tools",
                   "disallowed_tools", "output_format", "codex_sandbox", "max_retries", "mini_config",
                   "config", "extra_args")


class Agent(Strict):
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
    main_loop: Literal["tools", "model", "all"] | None = None
    """Which of the agent's gateway calls are its main loop (steps), the rest side requests:
    ``tools`` (default) the calls that offer tools; ``model`` the calls that ask for the
    variant's model (an agent without tool calling whose helper calls use another model,
    e.g. aider's weak model); ``all`` every call (docs/agents.md)."""
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
            used = [f for f in HARNESS_FIELDS if f in self.model_fields_set]
            if used:
                raise ValueError(f"{', '.join(used)}: only for the harness kinds ({', '.join(HARNESS_KINDS)})")
        elif self.argv is not None:
            raise ValueError(f"argv: a {self.kind} agent's argv is built by trialhouse; use extra_args")
        if self.gateway and self.kind not in ("command", *HARNESS_KINDS):
            raise ValueError(f"gateway: {self.kind} agents call no model")
        if self.main_loop is not None and self.kind not in ("command", *HARNESS_KINDS):
            raise ValueError(f"main_loop: {self.kind} agents call no model")
        return self


class JudgeSettings(Strict):
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


class Evaluations(Strict):
    judge: JudgeSettings = Field(default_factory=JudgeSettings)


Seconds = Annotated[float, Field(gt=0, le=86_400)]
"""A time budget: as the manifest's ``timeout_seconds``, at most a day."""
Dollars = Annotated[float, Field(gt=0)]
BUDGET_FIELDS = ("timeout_seconds", "max_cost_usd")
"""The budgets a variant may set, or sweep (a list: one configuration per value)."""
SWEEP_POINTS = 8
"""Most values one sweep may list."""


class Variant(Strict):
    id: CaseVariantId
    model: str | None = None
    harness: str | None = None
    harness_version: str | None = None
    reasoning_effort: str | None = None
    service_tier: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    conditions: Conditions = Field(default_factory=dict)
    """Named conditions this variant runs under, over the manifest's: part of ``config_id``
    when any is declared, so trials under different conditions are never pooled."""
    agent: Agent
    stage_instructions: dict[StageName, list[PathStr]] = Field(default_factory=dict)
    """Stage → markdown paths (relative to the manifest) snapshotted into the stage prompt."""
    evaluations: Evaluations = Field(default_factory=Evaluations)
    """How this variant's results are evaluated (judges): part of the evaluator
    fingerprint, not of ``config_id`` (it changes no behaviour of the agent)."""
    timeout_seconds: Seconds | list[Seconds] | None = None
    """This variant's time budget per trial (over the case's and the manifest's); a list
    is a budget sweep: one configuration per value (``runner.manifest.sweeps``)."""
    max_cost_usd: Dollars | list[Dollars] | None = None
    """This variant's spend limit per trial; a list is a budget sweep."""
    sweep: Id | None = None
    """The sweep this configuration is a point of: set by the expansion of a list budget
    (the declared variant's id), or by hand on variants that differ only in one budget."""

    @model_validator(mode="after")
    def _budgets(self) -> Variant:
        lists = [f for f in BUDGET_FIELDS if isinstance(getattr(self, f), list)]
        if len(lists) > 1:
            raise ValueError("timeout_seconds, max_cost_usd: a sweep varies one budget; list only one of them")
        for name in lists:
            values = getattr(self, name)
            if not 2 <= len(values) <= SWEEP_POINTS:
                raise ValueError(f"{name}: a sweep lists 2 to {SWEEP_POINTS} values, not {len(values)}")
            if any(b <= a for a, b in zip(values, values[1:], strict=False)):
                raise ValueError(f"{name}: a sweep's values must increase strictly, e.g. [0.5, 1, 2]")
            if self.sweep is not None:
                raise ValueError("sweep: set by the expansion of a list budget; leave it out")
        return self

    def swept(self) -> str | None:
        """The budget field this variant lists (a sweep still to expand), if any."""
        return next((f for f in BUDGET_FIELDS if isinstance(getattr(self, f), list)), None)



def config_id(variant: Variant, instruction_texts: dict[str, str], extra: dict[str, Any] | None = None) -> str:
    """Stable hash of everything about a variant that can change behaviour.

    ``instruction_texts`` maps each snapshotted instruction path to its full text, so
    editing an instruction file yields a new configuration. ``extra``: what the run
    derives that changes behaviour too (a harness's effective settings, the gateway
    script or recording answering it; ``runner.run.variant_record``); absent for the
    other kinds, so their ids are what they always were.
    """
    payload = variant.model_dump(mode="json", exclude={"id", "evaluations"})
    for name in (*BUDGET_FIELDS, "sweep"):  # added later: unset, they change nothing
        if payload[name] is None:
            del payload[name]
    if not payload["conditions"]:  # none declared: the id is what it always was
        del payload["conditions"]
    agent = payload["agent"]
    for name in ("gateway", *HARNESS_FIELDS):  # fields added later: at their defaults they change nothing
        if agent.get(name) == Agent.model_fields[name].get_default(call_default_factory=True):
            del agent[name]
    payload["instruction_texts"] = dict(sorted(instruction_texts.items()))
    if extra:
        payload["derived"] = extra
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
