"""``trialhouse init`` on real git repositories through the real CLI (issue 31, item 2):
what it writes validates once its blanks are filled — nothing else touched — and not
before, each blank named with what to write; what it cannot start from is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "You", "GIT_AUTHOR_EMAIL": "you@example.com",
           "GIT_COMMITTER_NAME": "You", "GIT_COMMITTER_EMAIL": "you@example.com"}


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **GIT_ENV, "NO_COLOR": "1", "COLUMNS": "200"})


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def repository(where: Path, files: dict[str, str], commit: bool = True) -> Path:
    where.mkdir(parents=True)
    git(where, "init", "-q")
    for rel, text in files.items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_text(text)
    if commit:
        git(where, "add", "-A")
        git(where, "commit", "-qm", "start")
    return where


PY = {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n",
      "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
      "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-q'\n"}


def fill_blanks(out: Path, repo: Path) -> None:
    """Only what init left blank: the prompt, the two models, the reference patch (by the
    README's recipe), the grader's check and the agent's command."""
    m = json.loads((out / "manifest.json").read_text())
    m["cases"][0]["prompt"] = "Add calc.ops.mul(a, b), the product of a and b."
    m["variants"][2]["model"], m["variants"][3]["model"] = "model-a", "model-b"
    (out / "manifest.json").write_text(json.dumps(m, indent=2))
    (repo / "calc" / "ops.py").write_text(PY["calc/ops.py"] + "\n\ndef mul(a, b):\n    return a * b\n")
    (out / "references" / "first-case.patch").write_text(git(repo, "diff"))
    git(repo, "checkout", "--", ".")
    grader = out / "graders" / "first-case_target.py"
    grader.write_text(grader.read_text().replace(
        "# FILL IN: the check of the requested behaviour (import the code the case changes and exit 1 "
        "when it is absent)\nsys.exit(\"grader not written yet\")\n",
        "from calc.ops import mul\n\nsys.exit(0 if mul(3, 4) == 12 else 1)\n"))
    agent = out / "agent" / "run_agent.sh"
    agent.write_text("\n".join(line for line in agent.read_text().splitlines()
                               if "FILL IN:" not in line and not line.startswith(("echo", "exit")))
                     + "\nexec true\n")


def test_what_init_writes_validates_once_its_blanks_are_filled(tmp_path: Path) -> None:
    repo = repository(tmp_path / "calc", PY)
    done = cli("init", "calc", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "calc-trialhouse"
    assert done.stdout.startswith(f"wrote calc-trialhouse/manifest.json for calc at {git(repo, 'rev-parse', 'HEAD')[:12]} (python)")
    m = json.loads((out / "manifest.json").read_text())
    assert m["repository"] == "../calc" and m["initial_commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert "stages" not in m and {c["layer"] for c in m["cases"][0]["criteria"]} == {
        "target", "regression", "repository"}
    assert m["cases"][0]["criteria"][1]["command"][:3] == ["python3", "-m", "pytest"]  # pyproject says pytest
    assert [v["agent"]["kind"] for v in m["variants"]] == ["null", "reference", "command", "command"]
    before = cli("validate", "--manifest", out / "manifest.json", cwd=tmp_path)
    assert before.returncode == 2 and "Traceback" not in before.stderr
    assert "6 problem(s)" in before.stderr and before.stdout.count("a blank trialhouse init left") == 6
    assert "does not apply" not in before.stdout  # the blank is the one problem of the patch
    fill_blanks(out, repo)
    after = cli("validate", "--manifest", out / "manifest.json", cwd=tmp_path)
    assert after.returncode == 0, after.stdout + after.stderr
    assert "valid (1 cases, 4 variants)" in after.stdout
    assert git(repo, "status", "--porcelain") == ""


def test_a_repository_of_another_language_gets_shell_graders_and_its_commands(tmp_path: Path) -> None:
    repository(tmp_path / "svc", {"go.mod": "module svc\n", "main.go": "package main\n", "x.go": "package main\n"})
    done = cli("init", "svc", "--output", "evals/svc", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    m = json.loads((tmp_path / "evals" / "svc" / "manifest.json").read_text())
    target, regression, repo_layer = m["cases"][0]["criteria"]
    assert target["command"] == ["sh", "{inputs}/graders/first-case_target.sh"] and not target["in_process"]
    assert regression["command"][-1].endswith("go test ./...") and m["cases"][0]["labels"] == {"language": "go"}
    assert repo_layer["command"][-1].endswith("go vet ./...")


def test_a_repository_trialhouse_cannot_read_leaves_blank_commands(tmp_path: Path) -> None:
    repository(tmp_path / "docs", {"notes.txt": "hello\n"})
    assert cli("init", "docs", cwd=tmp_path).returncode == 0
    out = cli("validate", "--manifest", tmp_path / "docs-trialhouse" / "manifest.json", cwd=tmp_path).stdout
    assert ("cases[0].criteria[1].command[0]: fill in the command that runs the repository's own tests"
            in out)


@pytest.mark.parametrize(("setup", "args", "words"), [
    ("plain-dir", ["init", "plain"], ["plain: not a git repository", "git init"]),
    ("no-commit", ["init", "fresh"], ["fresh: has no commit yet", "commit the state"]),
    ("repo", ["init", "calc", "--output", "calc/evals"], ["--output calc/evals: inside the repository",
                                                          "calc-trialhouse"]),
    ("repo", ["init", "calc", "--output", "busy"], ["--output busy: exists and is not an empty directory"]),
    ("repo", ["init", "calc", "--output", "afile/x"], ["afile is a file, not a directory"]),
    ("repo", ["init", "missing"], ["missing: not a directory"]),
])
def test_what_init_cannot_start_from_is_one_line(tmp_path: Path, setup: str, args: list[str],
                                                  words: list[str]) -> None:
    (tmp_path / "plain").mkdir()
    repository(tmp_path / "fresh", {"a.py": ""}, commit=False)
    repository(tmp_path / "calc", PY)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine\n")
    (tmp_path / "afile").write_text("")
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert not (tmp_path / "calc" / "evals").exists() and sorted(p.name for p in (tmp_path / "busy").iterdir()) == [
        "keep.txt"]
