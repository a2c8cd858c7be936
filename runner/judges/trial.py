"""A trial's evidence for its judges, from the runner's own git (never the agent's workspace)."""

from __future__ import annotations

import shutil
from dataclasses import asdict
from pathlib import Path

from runner.capture import TrialGit
from runner.git import GitError
from runner.grading import GradeResult
from runner.judges.evidence import DIFF_LIMIT, FILE_LIMIT, MAX_FILES
from runner.judges.invoke import TrialEvidence
from runner.manifest import Variant

RESULT_FIELDS = ("criterion_id", "layer", "verdict", "exit_code", "timed_out", "note")


def trial_evidence(git: TrialGit, initial_tree: str, final_tree: str, results: list[GradeResult], *,
                   trial_id: str, variant: Variant, attempt: int, scratch: Path) -> TrialEvidence:
    """The diff since the initial commit, the results and the changed files of the final tree."""
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    diff, files = "", {}
    try:
        git.diff_to_file(initial_tree, final_tree, scratch / "diff.patch")
        data = (scratch / "diff.patch").read_bytes()[: DIFF_LIMIT + 1]
        diff = data.decode("utf-8", "replace")
        names = git.changed_names(initial_tree, final_tree)[:MAX_FILES]
        found = git.read_files(final_tree, names, FILE_LIMIT)  # regular files only, as checked out
        files = {rel: found[rel] for rel in names if rel in found}
    except (GitError, OSError) as exc:
        diff = diff or f"(the runner could not produce the diff: {exc})"
    results_doc = [{k: asdict(r)[k] for k in RESULT_FIELDS} for r in results]
    return TrialEvidence(trial_id, variant, attempt, diff, results_doc, files, scratch)
