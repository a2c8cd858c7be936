"""The harness kinds inside a trial: finding the CLI, one sandboxed stage, reading what it left.

``runner.agents.harness`` knows each CLI's argv and outputs as pure functions; this module
connects that to the runner:

* :func:`resolve` (validate and run set-up): the variant's ``HarnessSettings``, the binary
  found on the agent's PATH (or a path), its version from ``--version``, and the host
  paths it needs visible in the sandbox (``runner.sandbox.program_mounts``);
* :func:`stage_request`: the plan written into the trial's private HOME and turned into a
  ``sandbox.Request`` (the real provider key never enters: with the gateway the agent gets
  a dummy key);
* :func:`collect` / :func:`read_stage`: after every process of the stage is gone, the
  files the harness left (Codex rollouts in ``$CODEX_HOME/sessions``, mini's trajectory)
  are copied out without following links and size-capped, parsed, and turned into step
  rows; the copies are kept as redacted evidence.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from contract.stage_events import GatewayUsage, Usage
from runner import sandbox
from runner.agents.harness import (
    DEFAULT_BINARY,
    HarnessPlan,
    HarnessSettings,
    key_env_of,
    plan,
    probe,
    read_outputs,
    settings_for,
)
from runner.agents.harness_result import HarnessResult
from runner.agents.mini_prices import budget_problem
from runner.agents.steps import Step
from runner.agents.trajectory import (
    agent_events_steps,
    attach_gateway,
    claude_steps,
    codex_steps,
    mini_steps,
)
from runner.evidence import read_capped
from runner.gateway.records import CallRecord
from runner.procs import ordinary_env

TRAJECTORY_FILE_LIMIT = 16 * 1024 * 1024
"""Bytes of one trajectory file (Codex rollout, mini trajectory) read back and kept."""
HARNESS_STDOUT_LIMIT = 64 * 1024 * 1024
"""Bytes of a harness's stdout read for parsing (Claude stream-json is its trajectory;
the final ``result`` line must not be cut off). The stored copy is bounded separately."""
MAX_STEPS = 5000
"""Step events recorded per stage; more are counted in a note, never silently dropped."""
COMMAND_CHARS = 2000


def agent_path() -> str:
    """The PATH an agent sees inside the sandbox (where a bare binary name is looked up)."""
    return sandbox.sandbox_path(ordinary_env()["PATH"])


@dataclass(frozen=True)
class ResolvedHarness:
    """A harness variant ready to run: settings with the resolved binary, version, mounts."""

    settings: HarnessSettings
    version: str | None
    mounts: tuple[Path, ...] = ()
    """Host paths made visible read-only so the CLI can start (docs/security.md)."""
    key_env: str | None = None
    """Direct mode (no gateway): the ``pass_env`` variable whose value is the provider key."""


@dataclass
class Resolution:
    harness: ResolvedHarness | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(location suffix under ``variants[i]``, message)."""


_probes: dict[tuple[str, float, str], Any] = {}


def _probe(settings: HarnessSettings, path_env: str):
    """``probe`` once per binary (path, mtime) and process: validate and run both ask."""
    binary = settings.binary or DEFAULT_BINARY[settings.kind]
    try:
        key = (os.path.realpath(binary), os.stat(binary).st_mtime, settings.kind)
    except OSError:
        return probe(settings, path_env)
    if key not in _probes:
        _probes[key] = probe(settings, path_env)
    return _probes[key]


def resolve(variant: Any, manifest_dir: Path, *, uses_gateway: bool, isolated: bool,
            protected: tuple[Path, ...] = ()) -> Resolution:
    """Resolve a harness variant (``runner.manifest.Variant``); problems are located, never raised.

    ``isolated``: stages run inside bubblewrap (see ``settings_for`` for what changes)."""
    out = Resolution()
    agent = variant.agent
    if isolated and agent.kind == "codex" and agent.codex_sandbox not in (None, "danger-full-access"):
        out.problems.append(("agent.codex_sandbox", f"{agent.codex_sandbox}: Codex's own sandbox cannot start inside "
                                                    "trialhouse's bubblewrap sandbox (every command fails); leave it "
                                                    "unset (danger-full-access inside bubblewrap, which confines it)"))
        return out
    try:
        settings = settings_for(variant, isolated=isolated)
    except ValidationError as exc:
        for err in exc.errors():
            message = err["msg"].removeprefix("Value error, ")
            field = ".".join(str(p) for p in err["loc"])
            if not field and re.match(r"[a-z_/]+: ", message):  # "max_turns: codex exec has no turn limit"
                field, message = message.split(": ", 1)
                field = field.split("/")[0]
            field = {"sandbox": "codex_sandbox", "model": "model"}.get(field, field)
            where = "model" if field == "model" else f"agent.{field}" if field else "agent"
            out.problems.append((where, message))
        return out
    path_env = agent_path()
    binary = agent.binary or DEFAULT_BINARY[agent.kind]
    if "/" in binary and not os.path.isabs(binary):
        binary = os.path.abspath(manifest_dir / binary)  # its directories are resolved by program_mounts
    found = sandbox.program_mounts(binary, path_env, protected)
    where = "agent.binary" if agent.binary else "agent.kind"
    if found.path is None:
        hint = "run `make tools` (pinned CLIs in tools/, then put tools/bin on PATH), or set agent.binary"
        out.problems.append((where, f"{agent.kind}: {binary!r} is not installed or not on the agent's PATH "
                                    f"({path_env}); {hint}"))
        return out
    if found.problem:
        out.problems.append((where, found.problem))
        return out
    settings = settings.model_copy(update={"binary": found.path})
    probed = _probe(settings, path_env)
    if probed.problem:
        out.problems.append((where, probed.problem))
        return out
    if variant.harness_version and variant.harness_version != probed.version:
        out.problems.append(("harness_version", f"the manifest says {variant.harness_version}, but "
                                                f"{found.path} is {agent.kind} {probed.version}"))
    unpriced = budget_problem(found.path, settings.model, settings.max_budget_usd) \
        if agent.kind == "mini-swe-agent" else None
    if unpriced:
        out.problems.append(("agent.max_budget_usd", unpriced))
    key_env = None
    if not uses_gateway:
        want = key_env_of(agent.kind, settings.model)
        if want not in agent.pass_env:
            out.problems.append(("agent.pass_env", f"a {agent.kind} agent without the run's model gateway calls the "
                                                   f"provider itself: pass its key ({want}) in pass_env, or add a "
                                                   "\"gateway\" section (the key then stays with the gateway)"))
        key_env = want
    out.harness = ResolvedHarness(settings, probed.version, found.mounts, key_env)
    return out


# ---------------------------------------------------------------- one stage


@dataclass(frozen=True)
class StageFiles:
    """Where one stage's harness output lives on the host (inside the sandbox dirs)."""

    plan: HarnessPlan
    home: Path
    out: Path


def stage_request(h: ResolvedHarness, *, prompt: str, workspace: Path, home: Path, tmp_inside: Path,
                  out: Path, env_extra: dict[str, str], pass_env: list[str], base_url: str | None,
                  read_only: list[Path], read_write: list[Path], tmp: Path, network: bool,
                  link: Path | None = None) -> tuple[sandbox.Request, StageFiles]:
    """Write the plan's files into the private HOME and build the sandboxed request.

    ``tmp_inside`` is the temporary directory as the agent sees it (``/tmp`` in bubblewrap).
    """
    api_key = None
    if base_url is None and h.key_env is not None:
        api_key = os.environ.get(h.key_env, "")
    p = plan(h.settings, prompt=prompt, workspace=workspace, home=home, tmp=tmp_inside,
             model_base_url=base_url, api_key=api_key, output_dir=out)
    codex_sessions = home / ".codex" / "sessions"
    if h.settings.kind == "codex" and codex_sessions.exists():
        shutil.rmtree(codex_sessions, ignore_errors=True)  # this stage's rollouts only
    for path, text in p.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_text(text, encoding="utf-8")
    env = ordinary_env(env_extra, pass_env=pass_env)
    env.update(p.env)
    req = sandbox.Request(argv=list(p.argv), cwd=p.cwd, env=env, read_only=[*read_only, *h.mounts],
                          read_write=read_write, tmp=tmp, network=network, link=link)
    return req, StageFiles(p, home, out)


def collect(files: StageFiles, scratch: Path) -> Path | None:
    """Copy the harness's trajectory out of the sandbox's directories into ``scratch``.

    Regular files only, never following a symlink, each capped at
    ``TRAJECTORY_FILE_LIMIT``. Returns the copied trajectory (mini's file, or the Codex
    sessions directory), or None when the harness left none.
    """
    traj = files.plan.trajectory
    if traj is None:
        return None
    scratch.mkdir(parents=True, exist_ok=True)
    if files.plan.usage_format == "codex-json":
        dest = scratch / "sessions"
        dest.mkdir(exist_ok=True)
        for root, dirs, names in os.walk(traj, followlinks=False):
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
            for name in names:
                if not (name.startswith("rollout-") and name.endswith(".jsonl")):
                    continue
                data, _cut = read_capped(Path(root) / name, TRAJECTORY_FILE_LIMIT)
                if data is not None:
                    (dest / name).write_bytes(data)
        shutil.rmtree(traj, ignore_errors=True)
        return dest
    data, _cut = read_capped(traj, TRAJECTORY_FILE_LIMIT)
    if data is None:
        return None
    dest = scratch / traj.name
    dest.write_bytes(data)
    return dest


def read_stage(h: ResolvedHarness, files: StageFiles, collected: Path | None, *, stdout: Path, stderr: Path,
               started: datetime, workspace: Path, stage: str, calls: list[CallRecord]
               ) -> tuple[HarnessResult, list[Step]]:
    """Parse a finished stage: the harness's own account and its steps (gateway-attached)."""
    p = files.plan
    if collected is not None:
        p = replace(p, trajectory=collected)
    elif p.trajectory is not None:
        p = replace(p, trajectory=files.out / ".none" / p.trajectory.name)  # nothing was left
    result = read_outputs(h.settings, p, stdout=stdout, stderr=stderr, stage_started_at=started)
    if p.usage_format == "claude-stream-json":
        steps = claude_steps(stdout, workspace=workspace, stage=stage)
    elif p.usage_format == "codex-json":
        rollouts = sorted(collected.glob("rollout-*.jsonl")) if collected is not None else []
        mine = [r for r in rollouts if result.session_id and r.name.endswith(f"{result.session_id}.jsonl")]
        candidates = mine or rollouts
        steps = codex_steps(stdout, rollout=candidates[-1] if candidates else None, workspace=workspace, stage=stage)
    elif p.usage_format == "mini-trajectory" and collected is not None:
        steps = mini_steps(collected, workspace=workspace, stage=stage)
    else:
        steps = []
    if not steps:  # Claude's ``json`` output has no per-step data: the gateway's turns at least
        from runner.agents.trajectory import gateway_steps

        return result, gateway_steps(calls, stage=stage)
    return result, attach_gateway(steps, calls)


def command_steps(events_file: Path, calls: list[CallRecord], *, started: datetime, stage: str) -> list[Step]:
    """Steps of a ``command`` or built-in agent: its agent-events file; with the gateway and
    no model turns of its own, the gateway's turns merged in.

    By time when every step has one; otherwise by conversation position: a turn the
    gateway saw at position *p* (*p* tool results already sent) comes after the agent's
    *p*-th tool call — the order a model loop makes them in."""
    from runner.agents.trajectory import gateway_steps

    steps = agent_events_steps(events_file, stage_started_at=started, stage=stage)
    turns = gateway_steps(calls, stage=stage)
    if not turns or any(s.kind == "model" for s in steps):
        return steps
    # gateway turns always have a time (the call's arrival), so this asks it of the agent's steps
    timed = [(moment, s) for s in steps + turns if (moment := s.started_at or s.ended_at) is not None]
    if len(timed) == len(steps) + len(turns):
        merged = [s for _moment, s in sorted(timed, key=lambda pair: pair[0])]
    else:
        positions = [c.position or 0 for c in calls if not c.side_request]  # gateway_steps' order
        merged, tools_seen, pending = [], 0, list(zip(positions, turns, strict=True))
        for step in steps:
            while pending and pending[0][0] <= tools_seen:
                merged.append(pending.pop(0)[1])
            merged.append(step)
            tools_seen += step.kind == "tool"
        merged += [turn for _p, turn in pending]
    return [replace(s, index=i) for i, s in enumerate(merged)]


def gateway_filled(usage: Usage, measured: GatewayUsage | None, steps: list[Step]) -> Usage:
    """A ``command`` agent's usage with what it did not report taken from the gateway: the
    tokens it measured and, for steps, the model turns (e.g. aider, which prints no usage
    trialhouse parses; docs/agents.md#aider-and-openhands-as-command-agents-tested)."""
    if measured is None:
        return usage
    filled = {name: getattr(measured, name) for name in _TOKENS
              if getattr(usage, name) is None and getattr(measured, name) is not None}
    if usage.steps is None and any(s.kind == "model" for s in steps):
        filled["steps"] = sum(1 for s in steps if s.kind == "model")
    if not filled:
        return usage
    return usage.model_copy(update={**filled, "source": f"{usage.source}+gateway" if usage.source else "gateway"})


def step_fields(step: Step, gateway_ids: set[str]) -> dict[str, Any]:
    """A step row as the fields of a ``step`` event."""
    tokens = (step.input_tokens, step.output_tokens, step.cache_read_tokens, step.cache_write_tokens)
    if step.kind != "model":
        tokens_from = None
    elif step.source == "gateway" or (step.call_id is not None and step.call_id in gateway_ids):
        tokens_from = "gateway"
    else:
        tokens_from = "harness" if any(t is not None for t in tokens) else None
    command = step.command[:COMMAND_CHARS] if step.command else step.command
    return {
        "index": step.index, "kind": step.kind, "source": step.source, "tool": step.tool,
        "action": step.action, "paths": list(step.paths), "command": command,
        "exit_code": step.exit_code, "ok": step.ok,
        "started_at_unix": step.started_at.timestamp() if step.started_at else None,
        "ended_at_unix": step.ended_at.timestamp() if step.ended_at else None,
        "input_tokens": step.input_tokens, "output_tokens": step.output_tokens,
        "cache_read_tokens": step.cache_read_tokens, "cache_write_tokens": step.cache_write_tokens,
        "call_id": step.call_id, "tokens_from": tokens_from,
    }


# ---------------------------------------------------------------- gateway totals

_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def gateway_usage(calls: list[CallRecord]) -> GatewayUsage:
    """One stage's calls summed. Tokens over the calls answered 200; a token field is None
    when no call answered or one that did left it unreported (unknown is not zero). A retry
    is counted once (a call's ``retries`` is its ordinal at that point of the conversation)."""
    ok = [c for c in calls if c.status == 200]
    tokens: dict[str, int | None] = {}
    for name in _TOKENS:
        values = [getattr(c, name) for c in ok]
        tokens[name] = None if not values or any(v is None for v in values) else sum(values)
    models = list(dict.fromkeys(c.model for c in calls if c.model and not c.side_request))
    return GatewayUsage(
        calls=len(calls), failed_calls=sum(1 for c in calls if c.status is None or c.status >= 400),
        retries=sum(1 for c in calls if c.retries > 0), model_s=round(sum(c.latency_s for c in calls), 6),
        models=models[:MAX_MODELS], **tokens)


def sum_gateway(parts: list[GatewayUsage | None]) -> GatewayUsage | None:
    """Trial totals of the stages that went through the gateway (None when none did)."""
    seen = [p for p in parts if p is not None]
    if not seen:
        return None
    tokens: dict[str, int | None] = {}
    for name in _TOKENS:
        values = [getattr(p, name) for p in seen]
        tokens[name] = None if any(v is None for v in values) else sum(values)
    models = list(dict.fromkeys(m for p in seen for m in p.models))[:MAX_MODELS]
    return GatewayUsage(calls=sum(p.calls for p in seen), failed_calls=sum(p.failed_calls for p in seen),
                        retries=sum(p.retries for p in seen), model_s=round(sum(p.model_s for p in seen), 6),
                        models=models, **tokens)


MAX_MODELS = 20
"""Distinct requested models kept per stage or trial (a harness that cycles more is rare)."""
_SNAPSHOT = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def model_substituted(label: str | None, usage: GatewayUsage | None) -> bool | None:
    """Whether a main-loop call asked for a model other than the variant's label.

    The label's ``provider/`` prefix (mini, litellm) is not sent, and a dated snapshot of the
    label (``claude-sonnet-4-5-20250929``, ``gpt-5-2025-08-07``) is the label. None when
    there is nothing to compare (docs/agents.md#gateway-truth)."""
    if not label or usage is None or not usage.models:
        return None
    want = label.rsplit("/", 1)[-1].lower()
    return any(_SNAPSHOT.sub("", m.rsplit("/", 1)[-1].lower()) != want and m.lower() != want
               for m in usage.models)
