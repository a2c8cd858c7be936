"""Visible checks: the criteria an agent may run itself, and the rule that keeps the rest hidden.

A criterion with ``visible: true`` is copied, for every stage, into the stage's read-only
``in/checks/`` (``$TRIALHOUSE_CHECKS`` inside the sandbox): the files it reads (its
``files`` and the ``{inputs}/…`` paths of its command), ``checks.json`` (each check's argv
with the paths of this stage) and ``run_check.py``, which runs them the way the graders
do. The prompt names them. Hidden criteria are never copied; ``check_problems`` refuses a
manifest whose visible check would expose a file a hidden criterion runs (docs/runner.md,
"Visible and hidden checks"). Grading is the same for both: on a pristine copy, by the runner.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from runner.grading import argv_paths, substitute
from runner.manifest import Case, Criterion, Manifest
from runner.paths import Snapshot, inputs_in_argv

CHECKS_ENV = "TRIALHOUSE_CHECKS"
"""The variable naming the stage's visible-checks directory (set only when there are some)."""
CHECK_RUNNER = Path(__file__).with_name("agents") / "run_check.py"


def visible_criteria(case: Case) -> list[Criterion]:
    return [c for c in case.criteria if c.visible]


def exposed_files(criterion: Criterion) -> set[str]:
    """The input files a visible criterion puts in the agent's reach."""
    return set(criterion.files) | set(inputs_in_argv(criterion.command or []))


def check_problems(manifest: Manifest) -> list[tuple[str, str]]:
    """(location, message) for every file a visible check exposes that a hidden criterion's
    command runs (in any case): that hidden check would be readable by the agent. Helper
    files hidden criteria only list in ``files`` may be shared (docs/runner.md)."""
    hidden: dict[str, str] = {}
    for case in manifest.cases:
        pool = case.hidden_pool.criteria if case.hidden_pool else []
        for c in (*case.criteria, *pool):
            if not c.visible:
                for rel in inputs_in_argv(c.command or []):
                    hidden.setdefault(rel, f"{case.id}/{c.id}")
    out = []
    for ci, case in enumerate(manifest.cases):
        for ki, c in enumerate(case.criteria):
            if not c.visible:
                continue
            for rel in sorted(exposed_files(c) & set(hidden)):
                out.append((f"cases[{ci}].criteria[{ki}].visible",
                            f"would show the agent {rel}, which the hidden criterion {hidden[rel]} runs; "
                            "give the visible check a script of its own"))
    return out


def write_checks(case: Case, snapshot: Snapshot, dest: Path, workspace: Path) -> list[Path]:
    """Materialise the case's visible checks into ``dest`` (a stage's ``in/checks``); returns
    the host paths the checks' argv names that must be visible read-only in the sandbox
    (none, and nothing written, when the case has no visible check)."""
    crits = visible_criteria(case)
    if not crits:
        return []
    files = sorted(set().union(*(exposed_files(c) for c in crits)))
    snapshot.materialise(dest, only=files)
    values = {"inputs": str(dest), "workspace": str(workspace)}
    argvs = [substitute(list(c.command or []), values) for c in crits]
    checks = [{"id": c.id, "description": c.description, "layer": c.layer, "argv": argv,
               "timeout_seconds": c.timeout_seconds, "success_token": c.success_token}
              for c, argv in zip(crits, argvs, strict=True)]
    (dest / "checks.json").write_text(json.dumps({"workspace": str(workspace), "checks": checks}, indent=2),
                                      encoding="utf-8")
    shutil.copyfile(CHECK_RUNNER, dest / "run_check.py")
    mounts = [Path(sys.prefix)]  # graders get the trialhouse interpreter's prefix too
    for argv in argvs:
        mounts += [p for p in argv_paths(argv) if not p.is_relative_to(dest)]
    return mounts


def prompt_section(case: Case) -> list[str]:
    """The prompt's lines about the visible checks (none when the case has none)."""
    crits = visible_criteria(case)
    if not crits:
        return []
    lines = ["## Checks you can run",
             f"Run `python3 \"${CHECKS_ENV}/run_check.py\"` (or name a check) to run these on your workspace "
             "exactly as they will be graded. Other checks are hidden and decide the result too."]
    lines += [f"- `{c.id}` ({c.layer}): {c.description or 'no description'}" for c in crits]
    return [*lines, ""]
