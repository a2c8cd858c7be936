"""The bounded evidence a judge reads, written to a directory it sees read-only.

``diff.patch``: the change since the case's initial commit (at most ``DIFF_LIMIT`` bytes,
cut with a note); ``criteria.json``: the deterministic results; ``files/``: the changed
files of the final state (at most ``MAX_FILES``, each at most ``FILE_LIMIT`` bytes);
``rubric.md``: the rubric from the run's snapshot; ``prompt.md``: what is asked and the
answer shape. Everything is redacted before it is written: a judge may call a provider.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

DIFF_LIMIT = 200 * 1024
FILE_LIMIT = 64 * 1024
MAX_FILES = 20

PROMPT = """You are a reviewer giving a supplementary judgment on a change to a repository.
Judge only the criterion below, against the rubric. The evidence is in this directory:
`diff.patch` (the change since the task's starting commit), `criteria.json` (the results
of the deterministic graders), `files/` (changed files as they ended), `rubric.md`.
Do not edit anything. Answer with exactly one JSON object and nothing else:

{{"verdict": "pass" | "fail" | "inconclusive", "reasons": ["short reason", ...]}}

Use "inconclusive" when the evidence does not let you decide. With "fail" you may add
"failure_category": the first decisive wrong choice, one of environment_discovery,
task_interpretation, source_of_truth, dependency_choice, impact_analysis, implementation,
verification.

Criterion `{criterion}`: {description}

## Rubric

{rubric}

## Deterministic results

{results}

## Change (diff.patch{cut})

{diff}
"""


@dataclass(frozen=True)
class Evidence:
    root: Path
    prompt: str
    sha256: dict[str, str]
    """Relative path → sha256 of every file written (checked after the judge ran)."""


def write_evidence(root: Path, *, criterion_id: str, description: str, rubric: str, diff: str,
                   results: list[dict[str, object]], files: dict[str, bytes]) -> Evidence:
    """Write the evidence directory (``root`` must not exist) and return its prompt."""
    root.mkdir(parents=True)
    cut = len(diff.encode()) > DIFF_LIMIT
    if cut:
        diff = diff.encode()[:DIFF_LIMIT].decode("utf-8", "ignore") + "\n[... diff cut at 200 KiB ...]\n"
    written: dict[str, bytes] = {
        "diff.patch": diff.encode(),
        "criteria.json": json.dumps(results, indent=1, sort_keys=True).encode(),
        "rubric.md": rubric.encode(),
    }
    for rel, data in sorted(files.items())[:MAX_FILES]:
        written[f"files/{rel}"] = data[:FILE_LIMIT]
    prompt = PROMPT.format(criterion=criterion_id, description=description or "(no description)",
                           rubric=rubric.strip(), results=written["criteria.json"].decode(),
                           diff=diff or "(no change)", cut=", cut" if cut else "")
    written["prompt.md"] = prompt.encode()
    for rel, data in written.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return Evidence(root, prompt, {rel: hashlib.sha256(d).hexdigest() for rel, d in written.items()})


def changed(evidence: Evidence) -> list[str]:
    """Evidence files that are no longer what was written (a judge must not edit them)."""
    bad = []
    for rel, sha in evidence.sha256.items():
        path = evidence.root / rel
        try:
            ok = not path.is_symlink() and hashlib.sha256(path.read_bytes()).hexdigest() == sha
        except OSError:
            ok = False
        if not ok:
            bad.append(rel)
    return bad
