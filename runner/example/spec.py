"""Shapes of the example corpus definition: repositories, cases, checks and edits.

Candidate changes are described as exact text replacements on a repository's
initial files; the generator turns them into real ``git diff`` patches, so every
patch applies cleanly by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Repo:
    name: str
    """Directory under ``corpus/repos`` and the ``labels.repository`` value."""
    familiarity: str
    """``known`` or ``unknown`` (for known-vs-unknown repository analysis)."""
    grader: str
    """Grader script under ``corpus/graders`` holding this repository's checks."""
    message: str
    """Message of the single, deterministic initial commit."""


@dataclass(frozen=True)
class Check:
    id: str
    description: str
    check: str
    """Name of the check function inside the repository's grader script."""
    layer: str = "target"


@dataclass(frozen=True)
class Edit:
    path: str
    old: str
    """Text that must occur exactly once in the file as it stands at this point."""
    new: str


@dataclass(frozen=True)
class CaseSpec:
    id: str
    repo: str
    difficulty: str
    task_class: str
    subsystem: str
    prompt: str
    checks: tuple[Check, ...]
    correct: tuple[Edit, ...]
    wrong: tuple[Edit, ...]
    """Plausible but incomplete: some target check still fails."""
    regression: tuple[Edit, ...]
    """Targets pass, but existing behaviour (a regression check) breaks."""
    holdout: bool = False
    compile_check: bool = False
    """Add a repository-layer criterion (the whole workspace compiles)."""
    lint_check: bool = False
    """Add a repository-layer criterion that is already red on the initial commit (every
    public function and class of the package has a docstring; ``graders/docstrings.py``):
    a pre-existing failure, so the case is scored and the lint's failure is noise."""
    labels: dict[str, str] = field(default_factory=dict)
