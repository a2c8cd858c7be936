"""Tiny corpora for runner tests: a git repo, graders, a reference patch, a manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

AGENTS = Path(__file__).parent / "agents"
FAKE = str(AGENTS / "fake_agent.py")

CALC = "def add(a, b):\n    return a + b\n"
CALC_MUL = CALC + "\n\ndef mul(a, b):\n    return a * b\n"

GRADER = """import os, sys
sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
try:
    import calc
    ok = {check}
except Exception:
    ok = False
sys.exit(0 if ok else 1)
"""


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


TOKEN_GRADER = """import os, sys
token = sys.stdin.readline().strip()  # the runner's one-time token, read before any workspace code
sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
try:
    import calc
    ok = {check}
except Exception:
    ok = False
if ok:
    with open(os.environ["TRIALHOUSE_RESULT_FILE"], "w") as fh:
        fh.write(token)
sys.exit(0 if ok else 1)
"""


def make_corpus(root: Path, variants: list[dict] | None = None, token: bool = False,
                **overrides) -> Path:
    """Write repo + graders + reference patch + manifest under ``root``; return the manifest.

    ``token``: graders use the success-token protocol and the criteria require it.
    """
    repo = root / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text(CALC)
    (repo / ".gitignore").write_text("*.log\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "initial")
    sha = _git(repo, "rev-parse", "HEAD")
    (repo / "calc.py").write_text(CALC_MUL)
    patch = subprocess.run(["git", "diff"], cwd=repo, capture_output=True, text=True, check=True).stdout
    _git(repo, "checkout", "-q", "--", "calc.py")
    (root / "patches").mkdir()
    (root / "patches" / "mul.patch").write_text(patch)
    g = root / "graders"
    g.mkdir()
    source = TOKEN_GRADER if token else GRADER
    (g / "target_mul.py").write_text(source.format(check="calc.mul(2, 3) == 6"))
    (g / "regress_add.py").write_text(source.format(check="calc.add(2, 3) == 5"))
    py = sys.executable
    manifest = {
        "schema_version": 1,
        "id": "tiny",
        "repository": "repo",
        "initial_commit": sha,
        "repetitions": 1,
        "control_repeats": 1,  # flaky detection has its own tests; one repeat keeps these fast
        "stages": ["build"],
        "timeout_seconds": 60,
        "cases": [{
            "id": "mul",
            "prompt": "Add calc.mul(a, b) returning the product.",
            "reference_patch": "patches/mul.patch",
            "criteria": [
                {"id": "mul_works", "description": "calc.mul multiplies", "layer": "target",
                 "command": [py, "{inputs}/graders/target_mul.py"], "success_token": token},
                {"id": "add_works", "description": "calc.add still adds", "layer": "regression",
                 "command": [py, "{inputs}/graders/regress_add.py"], "success_token": token},
            ],
        }],
        "variants": variants or [
            {"id": "noop", "agent": {"kind": "command", "argv": [py, FAKE, "noop"]}},
            {"id": "fixer", "agent": {"kind": "command",
                                      "argv": [py, FAKE, "patch", str((root / "patches" / "mul.patch").resolve())]}},
        ],
    }
    manifest.update(overrides)
    path = root / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2))
    return path


def agent(mode: str, *args: str, **extra) -> dict:
    return {"kind": "command", "argv": [sys.executable, FAKE, mode, *args], **extra}


@pytest.fixture
def corpus_root(tmp_path: Path) -> Path:
    root = tmp_path / "corpus with spaces"
    root.mkdir()
    return root


@pytest.fixture
def kit():
    """The helpers above, as a fixture (test modules cannot import conftest)."""
    import types

    return types.SimpleNamespace(make_corpus=make_corpus, agent=agent, FAKE=FAKE, git=_git)
