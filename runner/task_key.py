"""The task a stage's model conversation belongs to, as hashes (docs/gateway.md#recordings-and-replay).

A recording answers one conversation: replaying it for another prompt, case, repository or
harness configuration would hand the agent answers to a question it was not asked, and the
grade would blame the agent. The gateway writes this key first into every recording made
inside ``trialhouse run`` and refuses a replay whose key differs, naming what differs.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.agents.harness_stage import ResolvedHarness
    from runner.manifest import Case, Variant


def _sha(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def task_key(prompt: str, case: Case, tree: str, variant: Variant, harness: ResolvedHarness | None
             ) -> dict[str, Any]:
    """Hashes of the stage prompt, the case, the repository tree and the harness settings.

    The harness settings are the run header's record of them (``binary`` aside: where the
    CLI is installed is not the task); a ``command`` agent's are its argv and model. They are
    kept in clear next to their hash so that a mismatch can name the setting. ``tree``: the
    repository tree the trial starts from."""
    if harness is not None:
        settings = harness.settings.settings_record()
        settings["version"] = harness.version
    else:
        settings = {"kind": variant.agent.kind, "argv": list(variant.agent.argv or []), "model": variant.model,
                    "reasoning_effort": variant.reasoning_effort}
    return {
        "prompt_sha256": hashlib.sha256(prompt.encode()).hexdigest(),
        "case_sha256": _sha(case.model_dump(mode="json")),
        "tree": tree,
        "harness_sha256": _sha(settings),
        "harness": settings,
    }
