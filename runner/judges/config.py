"""Which judge judges a variant's results: the variant's ``evaluations.judge``, with defaults.

When a field is omitted the judge follows the variant's own host (``claude-code`` or
``codex``; every other host falls back to Codex) with that provider's economical model and
low effort. The builder's own model and effort are never read or changed here: a judge is
an evaluator, not part of the configuration under test. The resolved values are recorded
with every judgment (``contract.stage_events.JudgeInfo``) and hashed into the evaluator
fingerprint; a calibration holds only for the same host/provider/model/effort.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from contract.call_events import Provider
from contract.stage_events import JudgeInfo
from runner.errors import RunnerError
from runner.manifest import Criterion, JudgeSettings, Manifest, Variant

if TYPE_CHECKING:
    from runner.gateway.script import Script

PROVIDER: dict[str, Provider] = {"claude-code": "anthropic", "codex": "openai", "builtin": "anthropic"}
ECONOMICAL_MODEL: dict[Provider, str] = {"anthropic": "claude-haiku-4-5", "openai": "gpt-5.1-codex-mini"}
"""Each provider's economical default judge model (a judge reads a diff and a rubric)."""
DEFAULT_EFFORT = "low"


@dataclass(frozen=True)
class ResolvedJudge:
    info: JudgeInfo
    settings: JudgeSettings

    def key(self) -> dict[str, object]:
        """What a calibration must match to hold (and what the fingerprint hashes)."""
        i = self.info
        return {"host": i.host, "provider": i.provider, "model": i.model, "reasoning_effort": i.reasoning_effort}


def resolve(variant: Variant, criterion: Criterion | None = None) -> ResolvedJudge:
    """The judge for ``variant`` (and, when given, the criterion's legacy ``judge.model``)."""
    s = variant.evaluations.judge
    configured = "host" in s.model_fields_set or "model" in s.model_fields_set
    host = s.host or (variant.agent.kind if variant.agent.kind in ("claude-code", "codex") else "codex")
    provider = PROVIDER.get(host)
    model = s.model or (criterion.judge.model if criterion is not None and criterion.judge else None)
    if model is None and provider is not None:
        model = ECONOMICAL_MODEL[provider]
    effort = s.reasoning_effort or (DEFAULT_EFFORT if host != "command" else None)
    info = JudgeInfo(host=host, provider=provider, model=model, reasoning_effort=effort,
                     timeout_s=s.timeout_seconds, source="variant" if configured else "default")
    return ResolvedJudge(info, s)


def judge_criteria(manifest: Manifest) -> bool:
    """Whether any case of ``manifest`` has a judge criterion (the run then needs judges)."""
    return any(c.judge is not None for case in manifest.cases for c in case.criteria)


def load_judge_script(text: str, where: str) -> Script:
    """A judge's gateway script; its ``side`` reply defaults to the last step's answer, since
    tool-free judges send requests the gateway counts as side requests."""
    import yaml
    from pydantic import ValidationError

    # the gateway package (aiohttp) is imported only when a script is read
    from runner.gateway.script import Reply, Script

    try:
        doc = yaml.safe_load(text)
        script = Script.model_validate(doc)
    except (yaml.YAMLError, ValidationError, ValueError) as exc:
        first = " ".join(str(exc).strip().splitlines()[:3])[:300]
        raise RunnerError(f"{where}: not a gateway script ({first})") from None
    if isinstance(doc, dict) and "side" not in doc:
        last = script.steps[-1]
        script = script.model_copy(update={"side": Reply.model_validate(
            last.model_dump(exclude={"before"}, exclude_defaults=True))})
    return script


def judge_problems(manifest: Manifest, base: Path) -> list[tuple[str, str]]:
    """What ``validate`` can say about the judges on this machine: an explicitly chosen
    claude-code/codex host whose CLI is not found, a judge script that does not parse.
    (A default judge whose CLI is missing is not refused: each of its judgments is then
    inconclusive with the reason, and no outcome depends on it.)"""
    from runner import sandbox  # this machine's checks: resolving configuration needs none of it
    from runner.agents.harness_stage import agent_path

    if not judge_criteria(manifest):
        return []
    out = []
    for i, v in enumerate(manifest.variants):
        s = v.evaluations.judge
        loc = f"variants[{i}].evaluations.judge"
        if s.host in ("claude-code", "codex"):
            binary = s.binary or {"claude-code": "claude", "codex": "codex"}[s.host]
            if "/" in binary and not Path(binary).is_absolute():
                binary = str((base / binary).resolve())
            found = sandbox.program_mounts(binary, agent_path())
            if found.path is None:
                out.append((f"{loc}.{'binary' if s.binary else 'host'}",
                            f"{s.host}: {binary!r} is not installed or not on the agent's PATH; run `make tools` "
                            "(then put tools/bin on PATH) or set evaluations.judge.binary"))
        if s.script is not None and (base / s.script).is_file():
            try:
                load_judge_script((base / s.script).read_text(encoding="utf-8"), s.script)
            except (RunnerError, OSError, UnicodeDecodeError) as exc:
                out.append((f"{loc}.script", str(exc)))
    return out
