"""Evaluator fingerprints: what decides a case's grade, hashed, so changes are never pooled.

Two runs of the same manifest can grade differently: a grader file loosened between
them leaves the manifest's own bytes unchanged. The fingerprint therefore hashes the
*content* of every input a case's criteria read, next to the criteria themselves, the
reference patch, the prepare commands, the initial commit and the runner's grading
semantics. Analyses treat (case, fingerprint) as the task: trials of one case with two
fingerprints are two task versions, named as such, never one pooled rate.

The criteria are the run's: a hidden pool's drawn criteria are among them
(``runner.rotation``), so another draw is another version, and a visible check is marked
as such (docs/runner.md, "Visible and hidden checks").
"""

from __future__ import annotations

import hashlib
import json

from runner.manifest import Case, Criterion, Manifest
from runner.paths import inputs_in_argv

GRADING_SEMANTICS = 3
"""1: graders ran in the agent's workspace (before isolation). 2: graders run on fresh
copies of a runner-captured tree in the sandbox, with success tokens. 3: graders contained
like agents: their own case's inputs only, no network, the workspace read-only, a private
size-capped /tmp (docs/security.md, "The verdict channel")."""


def judge_keys(manifest: Manifest, criterion: Criterion) -> list[dict[str, object]]:
    """The distinct judges (host, provider, model, effort, timeout) the run's variants use
    for a judge criterion: the evaluator includes them, so a change of judge is a new task
    version for its judgments. Per case, not per variant, so the configurations under
    comparison still share one fingerprint (judgments never decide a grade)."""
    from runner.judges.config import resolve

    keys = {json.dumps({**resolve(v, criterion).key(), "timeout_s": v.evaluations.judge.timeout_seconds},
                       sort_keys=True) for v in manifest.variants}
    return [json.loads(k) for k in sorted(keys)]


def case_fingerprint(manifest: Manifest, case: Case, hashes: dict[str, str], initial_commit: str) -> str:
    """16 hex digits; equal exactly when everything that decides the grade is equal."""
    criteria = []
    for c in case.criteria:
        files = set(c.files) | set(inputs_in_argv(c.command or []))
        judge = None
        if c.judge is not None:
            files |= {c.judge.rubric} | ({c.judge.calibration} if c.judge.calibration else set())
            judge = {"model": c.judge.model, "judges": judge_keys(manifest, c)}
        criteria.append({
            "id": c.id, "layer": c.layer, "severity": c.resolved_severity, "command": c.command,
            "judge": judge, "files": {f: hashes.get(f) for f in sorted(files)},
            "timeout_seconds": c.timeout_seconds, "success_token": c.success_token,
            "flaky_fixed": c.flaky_fixed,
            # visible: the agent could run it (a different task); absent, so the fingerprints
            # of hidden criteria are what they were before visibility existed
            **({"visible": True} if c.visible else {}),
            # tier: when it runs decides what a retry and an acceptance see; absent when fast,
            # so a manifest without tiers keeps its fingerprints
            **({"tier": c.tier} if c.tier != "fast" else {}),
        })
    payload = {
        "grading_semantics": GRADING_SEMANTICS,
        "initial_commit": initial_commit,
        "reference_patch": hashes.get(case.reference_patch),
        "prepare_commands": manifest.prepare_commands,
        "checkpoint_exclude": manifest.checkpoint_exclude,
        "criteria": criteria,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
