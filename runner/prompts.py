"""Stage prompts: benchmark policy + the case's task + snapshotted stage instructions.

Instruction texts are read once from the input snapshot before any agent starts, so
editing the operator's files mid-run changes neither prompts nor ``config_id``.
"""

from __future__ import annotations

from runner.manifest import Case, Manifest, Variant
from runner.paths import Snapshot
from runner.visible import prompt_section

DEFAULT_POLICY = (
    "You are working in a git repository checked out at a fixed commit. Make the change the "
    "task asks for, keep existing behaviour working, and do not edit files outside the "
    "repository. Hidden graders decide whether the task is done; a stage saying it passed "
    "is not a grade."
)

STAGE_GOALS = {
    "build": "Implement the task below.",
    "qa": "Check the implementation of the task below: run and extend tests, fix what is broken.",
    "review": (
        "Review every change since the initial commit for the task below. Fix real problems. "
        "If $TRIALHOUSE_VERDICT_FILE is set, write JSON {\"status\": \"passed\"|\"failed\", "
        "\"findings\": [\"...\"]} to it."
    ),
}


def instruction_texts(variant: Variant, snapshot: Snapshot) -> dict[str, str]:
    """Instruction path → full text, read from the snapshot (used by ``config_id``)."""
    texts: dict[str, str] = {}
    for paths in variant.stage_instructions.values():
        for rel in paths:
            texts[rel] = snapshot.text(rel)
    return texts


def build_prompt(
    manifest: Manifest,
    case: Case,
    variant: Variant,
    stage: str,
    attempt: int,
    findings: list[str],
    texts: dict[str, str],
    initial_commit: str | None = None,
) -> str:
    parts = [f"# Stage: {stage} (attempt {attempt} of {manifest.max_attempts})", ""]
    parts += ["## Policy", manifest.benchmark_policy or DEFAULT_POLICY, ""]
    parts += ["## Goal", STAGE_GOALS[stage], "", "## Task", case.prompt.strip(), ""]
    if stage == "review" and initial_commit:
        parts += ["## Changes under review", f"Everything since the initial commit: `git diff {initial_commit}`", ""]
    if case.allowed_paths:
        parts += ["## Allowed paths", *[f"- {p}" for p in case.allowed_paths], ""]
    parts += prompt_section(case)
    for rel in variant.stage_instructions.get(stage, []):  # type: ignore[call-overload]
        parts += [f"## Instructions ({rel})", texts[rel].strip(), ""]
    if findings:
        parts += ["## Findings from the previous attempt", *[f"- {f}" for f in findings], ""]
    return "\n".join(parts)
