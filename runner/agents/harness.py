"""Harness adapters: how to run Claude Code, Codex CLI and mini-swe-agent headless.

Pure functions, no process is started here: :func:`plan` turns a
:class:`HarnessSettings` (the manifest's agent settings for these
kinds) and the stage's places (workspace, private HOME and TMPDIR, the model's base
URL) into a :class:`HarnessPlan` — argv, environment, files to write first, and where
the harness leaves its output and trajectory. The runner starts the plan inside its
sandbox, then hands the outputs to :func:`read_outputs`.

What each CLI needs was measured on the real programs (docs/agents.md, "What each CLI needs"):

* Claude Code reads ``ANTHROPIC_BASE_URL`` (a path prefix works, so a gateway trial
  route can be the base) and sends ``ANTHROPIC_API_KEY`` as ``x-api-key``.
* Codex ignores ``OPENAI_BASE_URL``; it needs a custom ``model_providers`` entry with
  ``base_url`` and ``wire_api = "responses"`` in ``$CODEX_HOME/config.toml``. Its own
  Linux sandbox refuses to start when ``CODEX_HOME`` lies under the temporary directory,
  so TMPDIR is always set to a private directory beside it.
* mini-swe-agent needs ``MSWEA_CONFIGURED=true`` (else a setup wizard), model
  ``openai/<name>`` with ``model.model_kwargs.api_base``, and
  ``MSWEA_COST_TRACKING=ignore_errors`` for models litellm cannot price (its cost is
  then 0.0, which the parser reads as unknown).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contract.call_events import Provider
from runner.agents import usage_claude, usage_codex, usage_mini
from runner.agents.harness_result import HarnessResult
from runner.agents.toml_config import to_toml

HarnessKind = Literal["claude-code", "codex", "mini-swe-agent"]
HARNESS_KINDS: tuple[str, ...] = get_args(HarnessKind)
DEFAULT_BINARY: dict[str, str] = {"claude-code": "claude", "codex": "codex", "mini-swe-agent": "mini"}
GATEWAY_KEY = "trialhouse-gateway-key"
"""The key an agent gets when it talks to the gateway: the gateway adds the real one."""
MODEL_KEY_ENV = "TRIALHOUSE_MODEL_KEY"
"""Codex reads its provider key from the variable named by ``env_key``: this one."""


class HarnessSettings(BaseModel):
    """One harness configuration: everything here is part of the configuration's identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: HarnessKind
    model: str
    """Model name as the harness passes it to the provider (mini: without ``openai/``)."""
    binary: str | None = None
    """Program to run; default ``claude`` / ``codex`` / ``mini`` found on the agent's PATH."""
    reasoning_effort: str | None = None
    """Claude ``--effort``; Codex ``model_reasoning_effort``; mini ``reasoning_effort`` model kwarg."""
    service_tier: str | None = None
    """Codex ``service_tier`` (``fast`` also turns on ``features.fast_mode``); mini model kwarg."""
    max_turns: int | None = Field(default=None, ge=1)
    """Claude ``--max-turns``; mini ``agent.step_limit``. Codex has no turn limit (refused)."""
    max_budget_usd: float | None = Field(default=None, gt=0)
    """Claude ``--max-budget-usd``; mini ``--cost-limit`` (needs a model litellm can price)."""
    permission_mode: Literal["default", "acceptEdits", "bypassPermissions", "plan", "dontAsk"] = "acceptEdits"
    """Claude ``--permission-mode``. Under ``acceptEdits`` a tool not allowed is denied
    silently (listed in the result's ``permission_denials``)."""
    allowed_tools: tuple[str, ...] = ()
    """Claude ``--allowedTools`` (e.g. ``Bash``, ``Bash(pytest:*)``)."""
    disallowed_tools: tuple[str, ...] = ()
    output_format: Literal["json", "stream-json"] = "stream-json"
    """Claude: ``stream-json`` (with ``--verbose``) keeps per-step evidence if the run is
    killed; ``json`` prints only the final result."""
    sandbox: Literal["read-only", "workspace-write", "danger-full-access"] = "workspace-write"
    """Codex ``-s``. Inside the runner's own sandbox ``danger-full-access`` avoids a
    sandbox in a sandbox; outside it ``workspace-write`` is Codex's own confinement."""
    max_retries: int = Field(default=2, ge=0)
    """Retries of a failed model call: Claude ``CLAUDE_CODE_MAX_RETRIES``, Codex
    ``request_max_retries``/``stream_max_retries``, mini ``MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT``
    (= retries + 1). The gateway counts them either way."""
    mini_config: str = "mini.yaml"
    """mini-swe-agent base config (a builtin name or a path)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """Extra harness config: Codex ``-c key=value`` (TOML values), mini ``-c key=value``."""
    extra_args: tuple[str, ...] = ()
    """Appended to argv before the prompt."""

    @model_validator(mode="after")
    def _fits_kind(self) -> HarnessSettings:
        if self.kind == "codex" and self.max_turns is not None:
            raise ValueError("max_turns: codex exec has no turn limit; bound it with the stage timeout")
        if self.kind == "codex" and self.max_budget_usd is not None:
            raise ValueError("max_budget_usd: codex exec has no budget limit")
        if self.kind != "claude-code" and (self.allowed_tools or self.disallowed_tools):
            raise ValueError("allowed_tools/disallowed_tools: only claude-code has tool permissions")
        if self.kind == "claude-code" and self.config:
            raise ValueError("config: claude-code takes no -c settings; use extra_args")
        return self

    def settings_record(self) -> dict[str, Any]:
        """What the run header records as the variant's harness settings (feeds config_id).

        Includes what a setting turns on behind the scenes (Codex ``fast`` also sets
        ``features.fast_mode``), so the record says what the harness was configured with.
        """
        record = self.model_dump(mode="json", exclude={"binary"})
        if self.kind == "codex" and self.service_tier == "fast":
            record["fast_mode"] = True
        return record


_MANIFEST_FIELDS = {"max_turns": "max_turns", "max_budget_usd": "max_budget_usd",
                    "permission_mode": "permission_mode", "output_format": "output_format",
                    "codex_sandbox": "sandbox", "max_retries": "max_retries", "mini_config": "mini_config"}
"""Manifest agent field → ``HarnessSettings`` field (only set ones; the rest keep defaults)."""


def settings_for(variant: Any, binary: str | None = None, *, isolated: bool = False) -> HarnessSettings:
    """The ``HarnessSettings`` of a manifest variant (``runner.manifest.Variant``) whose agent
    is a harness kind: the variant's ``model``, ``reasoning_effort`` and ``service_tier``
    plus the agent's harness fields. ``binary`` overrides the agent's (a resolved path).

    ``isolated``: the stage runs inside trialhouse's bubblewrap sandbox. Codex's own Linux
    sandbox cannot start inside it (nested namespaces: measured, every command exits 1 and
    no file can be written), so Codex defaults to ``danger-full-access`` there — the
    runner's sandbox is the confinement — and to ``workspace-write`` otherwise.
    Raises ``pydantic.ValidationError`` when the settings do not fit the kind."""
    agent = variant.agent
    fields: dict[str, Any] = {"kind": agent.kind, "model": variant.model or "",
                              "reasoning_effort": variant.reasoning_effort, "service_tier": variant.service_tier,
                              "binary": binary or agent.binary, "allowed_tools": tuple(agent.allowed_tools),
                              "disallowed_tools": tuple(agent.disallowed_tools), "config": dict(agent.config),
                              "extra_args": tuple(agent.extra_args)}
    for mine, theirs in _MANIFEST_FIELDS.items():
        value = getattr(agent, mine)
        if value is not None:
            fields[theirs] = value
    if agent.kind == "codex" and agent.codex_sandbox is None:
        fields["sandbox"] = "danger-full-access" if isolated else "workspace-write"
    return HarnessSettings(**fields)


DEFAULT_KEY_ENV: dict[str, str] = {"claude-code": "ANTHROPIC_API_KEY", "codex": "OPENAI_API_KEY",
                                   "mini-swe-agent": "OPENAI_API_KEY"}
"""The variable holding a harness's provider key when it calls the provider directly."""
PROVIDER: dict[str, Provider] = {"claude-code": "anthropic", "codex": "openai", "mini-swe-agent": "openai"}
"""Which provider's wire API each harness speaks (the gateway upstream it needs)."""


def provider_of(kind: str, model: str | None) -> Provider:
    """The provider a variant's calls go to: mini-swe-agent (litellm) speaks Anthropic's
    Messages API for an ``anthropic/`` model, Chat Completions for anything else."""
    if kind == "mini-swe-agent" and (model or "").startswith("anthropic/"):
        return "anthropic"
    return PROVIDER[kind]


def key_env_of(kind: str, model: str | None) -> str:
    """The variable holding the provider key (``DEFAULT_KEY_ENV``, per ``provider_of`` for mini)."""
    if kind == "mini-swe-agent" and provider_of(kind, model) == "anthropic":
        return "ANTHROPIC_API_KEY"
    return DEFAULT_KEY_ENV[kind]


UsageFormat = Literal["claude-json", "claude-stream-json", "codex-json", "mini-trajectory"]


@dataclass(frozen=True)
class HarnessPlan:
    """One headless run, ready to start: no shell, stdin ``/dev/null``, cwd the workspace."""

    argv: list[str]
    env: dict[str, str]
    """The harness's variables only: the caller adds PATH, LANG and its own."""
    files: dict[Path, str] = field(default_factory=dict)
    """Files to write before starting (config files in the private HOME)."""
    cwd: Path = Path(".")
    usage_format: UsageFormat = "claude-json"
    trajectory: Path | None = None
    """mini: the trajectory file (``-o``). Codex: its sessions directory (rollouts)."""
    secret_values: tuple[str, ...] = ()
    """Values to redact from stored output (the API key when it is a real one)."""


def plan(settings: HarnessSettings, *, prompt: str, workspace: Path, home: Path, tmp: Path,
         model_base_url: str | None, api_key: str | None = None, output_dir: Path | None = None) -> HarnessPlan:
    """The plan for one stage.

    ``model_base_url`` is the provider (or gateway trial route) base **without** ``/v1``;
    None means the provider's default endpoint. ``api_key`` is the key to hand the
    agent: None with a base URL means the gateway (which adds the real key), so a dummy
    key is used. ``home`` and ``tmp`` must be private to the trial; ``output_dir`` is
    where mini writes its trajectory (default: ``tmp``).
    """
    key = api_key if api_key is not None else (GATEWAY_KEY if model_base_url else None)
    if key is None:
        raise ValueError("api_key is required when the agent talks to the provider directly")
    binary = settings.binary or DEFAULT_BINARY[settings.kind]
    base_env = {"HOME": str(home), "TMPDIR": str(tmp), "NO_COLOR": "1"}
    secrets = () if key == GATEWAY_KEY else (key,)
    if settings.kind == "claude-code":
        return _claude(settings, binary, prompt, workspace, model_base_url, key, base_env, secrets)
    if settings.kind == "codex":
        return _codex(settings, binary, prompt, workspace, home, model_base_url, key, base_env, secrets)
    return _mini(settings, binary, prompt, workspace, model_base_url, key, base_env, secrets,
                 Path(output_dir or tmp))


def _claude(s: HarnessSettings, binary: str, prompt: str, workspace: Path, base_url: str | None, key: str,
            env: dict[str, str], secrets: tuple[str, ...]) -> HarnessPlan:
    argv = [binary, "-p", "--output-format", s.output_format, "--model", s.model,
            "--permission-mode", s.permission_mode]
    if s.output_format == "stream-json":
        argv.append("--verbose")
    if s.max_turns is not None:
        argv += ["--max-turns", str(s.max_turns)]
    if s.max_budget_usd is not None:
        argv += ["--max-budget-usd", f"{s.max_budget_usd:g}"]
    if s.reasoning_effort:
        argv += ["--effort", s.reasoning_effort]
    if s.allowed_tools:
        argv += ["--allowedTools", ",".join(s.allowed_tools)]
    if s.disallowed_tools:
        argv += ["--disallowedTools", ",".join(s.disallowed_tools)]
    argv += [*s.extra_args, "--", prompt]
    env = {
        **env,
        "ANTHROPIC_API_KEY": key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(s.max_retries),
    }
    if base_url:
        env["ANTHROPIC_BASE_URL"] = base_url
    fmt: UsageFormat = "claude-stream-json" if s.output_format == "stream-json" else "claude-json"
    return HarnessPlan(argv, env, {}, Path(workspace), fmt, None, secrets)


def _codex(s: HarnessSettings, binary: str, prompt: str, workspace: Path, home: Path, base_url: str | None,
           key: str, env: dict[str, str], secrets: tuple[str, ...]) -> HarnessPlan:
    codex_home = Path(home) / ".codex"
    config: dict[str, Any] = {}
    if base_url:
        config["model_provider"] = "trialhouse"
        config["model_providers.trialhouse"] = {
            "name": "trialhouse",
            "base_url": base_url.rstrip("/") + "/v1",
            "env_key": MODEL_KEY_ENV,
            "wire_api": "responses",
            "request_max_retries": s.max_retries,
            "stream_max_retries": s.max_retries,
        }
    if s.reasoning_effort:
        config["model_reasoning_effort"] = s.reasoning_effort
    if s.service_tier:
        config["service_tier"] = s.service_tier
        if s.service_tier == "fast":
            config["features.fast_mode"] = True
    config.update(s.config)
    argv = [binary, "exec", "--json", "--skip-git-repo-check", "-s", s.sandbox, "-m", s.model,
            "-C", str(workspace), *s.extra_args, "--", prompt]
    env = {**env, "CODEX_HOME": str(codex_home)}
    if base_url:
        env[MODEL_KEY_ENV] = key
    else:
        env["OPENAI_API_KEY"] = key
    files = {codex_home / "config.toml": to_toml(config)}
    return HarnessPlan(argv, env, files, Path(workspace), "codex-json", codex_home / "sessions", secrets)


def _mini(s: HarnessSettings, binary: str, prompt: str, workspace: Path, base_url: str | None, key: str,
          env: dict[str, str], secrets: tuple[str, ...], output_dir: Path) -> HarnessPlan:
    trajectory = output_dir / "mini.traj.json"
    overrides: dict[str, Any] = {}
    anthropic = provider_of("mini-swe-agent", s.model) == "anthropic"
    if base_url:  # litellm's anthropic route appends /v1/messages itself; OpenAI clients take <base>/v1
        overrides["model.model_kwargs.api_base"] = base_url.rstrip("/") + ("" if anthropic else "/v1")
    if s.max_turns is not None:
        overrides["agent.step_limit"] = s.max_turns
    if s.reasoning_effort:
        overrides["model.model_kwargs.reasoning_effort"] = s.reasoning_effort
    if s.service_tier:
        overrides["model.model_kwargs.service_tier"] = s.service_tier
    overrides["environment.cwd"] = str(workspace)
    overrides.update(s.config)
    model = s.model if "/" in s.model else f"openai/{s.model}"
    argv = [binary, "-m", model, "-c", s.mini_config]
    for name, value in overrides.items():
        argv += ["-c", f"{name}={_mini_value(value)}"]
    argv += ["--cost-limit", f"{s.max_budget_usd:g}" if s.max_budget_usd else "0"]
    argv += ["-y", "--exit-immediately", "-o", str(trajectory), *s.extra_args, "-t", prompt]
    env = {
        **env,
        "MSWEA_CONFIGURED": "true",
        "MSWEA_COST_TRACKING": "ignore_errors" if s.max_budget_usd is None else "default",
        "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(s.max_retries + 1),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        key_env_of("mini-swe-agent", s.model): key,
    }
    return HarnessPlan(argv, env, {}, Path(workspace), "mini-trajectory", trajectory, secrets)


def _mini_value(value: Any) -> str:
    # mini parses ``key=value`` overrides as YAML scalars.
    return json.dumps(value) if not isinstance(value, str) else value


# ---------------------------------------------------------------- version


def version_argv(settings: HarnessSettings) -> list[str]:
    """The command that prints the harness's version (recorded per trial). mini-swe-agent
    2.4.6 has no ``--version`` (exit 2, measured): its version is the banner every command
    prints first (``This is mini-swe-agent version 2.4.6.``), read from ``--help`` (exit 0)."""
    flag = "--help" if settings.kind == "mini-swe-agent" else "--version"
    return [settings.binary or DEFAULT_BINARY[settings.kind], flag]


_VERSION = {
    "claude-code": re.compile(r"^(\d+\.\d+\.\d+\S*) \(Claude Code\)", re.M),
    "codex": re.compile(r"^codex-cli (\d+\.\d+\.\d+\S*)", re.M),
    "mini-swe-agent": re.compile(r"mini-swe-agent version (\d+\.\d+\.\d+[^\s.]*)"),
}


def parse_version(kind: HarnessKind, output: str) -> str | None:
    """The version in ``version_argv``'s output, or None when the format is not recognised."""
    match = _VERSION[kind].search(output)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Probe:
    """What ``validate`` learns about a harness binary before any trial starts."""

    binary: str
    path: str | None
    """Where the binary resolved to on the agent's PATH; None when it was not found."""
    version: str | None
    problem: str | None
    """One sentence saying what is wrong and what to do; None when the harness is usable."""


def probe(settings: HarnessSettings, path_env: str, timeout: float = 60.0) -> Probe:
    """Find the binary on ``path_env`` and read its version (``version_argv``)."""
    import shutil
    import subprocess

    argv = version_argv(settings)
    found = shutil.which(argv[0], path=path_env)
    if found is None:
        hint = "run `make tools`, or set agent.binary" if settings.kind != "mini-swe-agent" else \
            "install mini-swe-agent (make tools), or set agent.binary"
        return Probe(argv[0], None, None, f"{settings.kind}: {argv[0]!r} is not on the agent's PATH; {hint}")
    try:
        proc = subprocess.run([found, *argv[1:]], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, env={"PATH": path_env, "HOME": "/nonexistent"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(argv[0], found, None, f"{settings.kind}: {found} {argv[1]} failed: {exc}")
    version = parse_version(settings.kind, proc.stdout + proc.stderr)
    if version is None:
        head = (proc.stdout + proc.stderr).strip().splitlines()[:1]
        return Probe(argv[0], found, None, f"{settings.kind}: {found} {argv[1]} printed no version "
                     f"this trialhouse recognises ({head[0][:120] if head else 'nothing'})")
    return Probe(argv[0], found, version, None)


# ---------------------------------------------------------------- outputs


def read_outputs(settings: HarnessSettings, harness_plan: HarnessPlan, *, stdout: Path, stderr: Path | None,
                 stage_started_at: datetime | None = None) -> HarnessResult:
    """Parse a finished run's outputs with the parser for its kind."""
    if harness_plan.usage_format == "claude-json":
        return usage_claude.read_claude(stdout, stream=False, stderr=stderr, stage_started_at=stage_started_at)
    if harness_plan.usage_format == "claude-stream-json":
        return usage_claude.read_claude(stdout, stream=True, stderr=stderr, stage_started_at=stage_started_at)
    if harness_plan.usage_format == "codex-json":
        return usage_codex.read_codex(stdout, stderr=stderr, sessions_dir=harness_plan.trajectory,
                                      stage_started_at=stage_started_at)
    assert harness_plan.trajectory is not None
    return usage_mini.read_mini(harness_plan.trajectory, stderr=stderr, stage_started_at=stage_started_at)
