"""Turn a variant's agent definition into argv + environment for one stage.

Agents are always subprocesses. Built-in kinds run ``python -m runner.agents.builtin``
with a context JSON file; ``command`` agents get their argv placeholders expanded
inside single elements (no shell) and an allow-listed environment.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from runner.grading import substitute
from runner.manifest import Variant
from runner.procs import ordinary_env

BUILTIN_KINDS = ("null", "reference", "replay", "simulated")


@dataclass
class StageContext:
    """Everything a stage invocation needs to know (also the built-in agents' ctx.json)."""

    kind: str
    stage: str
    attempt: int
    case_id: str
    repetition: int
    variant_id: str
    model: str | None
    seed: int
    workspace: str
    inputs_dir: str
    reference_patch: str
    patches_dir: str | None
    candidates_dir: str | None
    skill: float | None
    price_per_mtok: float | None
    findings: list[str]
    prompt_file: str
    events_file: str
    verdict_file: str
    labels: dict[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None


def _abs(base: Path, rel: str | None) -> str | None:
    return None if rel is None else str((base / rel).resolve())


def build_invocation(variant: Variant, ctx: StageContext, manifest_dir: Path,
                     ctx_path: Path) -> tuple[list[str], dict[str, str]]:
    """argv and env for this stage; writes ``ctx_path`` for built-in agents."""
    agent = variant.agent
    env_extra = {
        "TRIALHOUSE_AGENT_EVENTS": ctx.events_file,
        "TRIALHOUSE_VERDICT_FILE": ctx.verdict_file,
        "TRIALHOUSE_PROMPT_FILE": ctx.prompt_file,
        "TRIALHOUSE_STAGE": ctx.stage,
        "TRIALHOUSE_ATTEMPT": str(ctx.attempt),
        "TRIALHOUSE_WORKSPACE": ctx.workspace,
        "TRIALHOUSE_CASE_ID": ctx.case_id,
    }
    if agent.kind in BUILTIN_KINDS:
        ctx.patches_dir = _abs(manifest_dir, agent.patches_dir)
        ctx.candidates_dir = _abs(manifest_dir, agent.candidates_dir)
        ctx.skill = agent.skill
        ctx.price_per_mtok = agent.price_per_mtok
        data = asdict(ctx)
        data.pop("reasoning_effort")
        ctx_path.write_text(json.dumps(data, indent=2))
        env = ordinary_env(env_extra)
        # The built-in agents live in this package: make it importable however we were installed.
        env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
        return [sys.executable, "-m", "runner.agents.builtin", "--context", str(ctx_path)], env
    assert agent.argv
    values = {
        "workspace": ctx.workspace,
        "prompt_file": ctx.prompt_file,
        "model": ctx.model or "",
        "stage": ctx.stage,
        "attempt": str(ctx.attempt),
        "case_id": ctx.case_id,
        "reasoning_effort": ctx.reasoning_effort or "",
        "events_file": ctx.events_file,
        "verdict_file": ctx.verdict_file,
        # Last, so placeholders inside the prompt text are left alone.
        "prompt": Path(ctx.prompt_file).read_text(encoding="utf-8"),
    }
    return substitute(list(agent.argv), values), ordinary_env(env_extra, pass_env=agent.pass_env)
