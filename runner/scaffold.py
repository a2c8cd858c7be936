"""``trialhouse init``: a first manifest for the operator's own repository.

It reads the repository (its HEAD commit, the languages its tracked files are written in,
how its tests run) and writes a directory beside it: a manifest with one case, a criterion
per layer, two variants of a ``command`` agent and the two reference points, the files the
manifest names, and a README saying what each is. What only the operator knows is left as
a ``FILL IN:`` blank that ``validate`` refuses by name (``runner.placeholders``), so the
scaffold is a manifest that validates once filled, never a run that measures nothing
(docs/runner.md, "Your first manifest").
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from runner import git
from runner.errors import RunnerError
from runner.placeholders import MARKER
from runner.scaffold_text import AGENT_SCRIPT, companion_readme, target_grader

CASE = "first-case"
LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go",
             ".rs": "rust", ".java": "java", ".rb": "ruby"}


class InitError(RunnerError):
    """What stops ``init`` before it writes anything: one line naming the path."""


@dataclass(frozen=True)
class Scaffold:
    """What ``init`` found and wrote."""

    manifest: Path
    commit: str
    language: str | None
    written: list[Path]
    uncommitted: int
    """Changed or untracked files in the repository: not part of the evaluation."""


def _language(files: list[str]) -> str | None:
    counts = Counter(LANGUAGES.get(Path(f).suffix) for f in files)
    counts.pop(None, None)
    return counts.most_common(1)[0][0] if counts else None


def _uses_pytest(repo: Path, files: list[str]) -> bool:
    if any(Path(f).name in ("pytest.ini", "conftest.py") for f in files):
        return True
    for name in ("pyproject.toml", "setup.cfg", "tox.ini"):
        p = repo / name
        if p.is_file() and re.search(r"\[(tool[.:])?pytest", p.read_text(errors="replace")):
            return True
    return False


def _in_workspace(command: str) -> list[str]:
    """A shell command run in the (read-only) copy of the workspace a grader gets."""
    return ["sh", "-c", f'cd "$TRIALHOUSE_WORKSPACE" && {command}']


def layer_commands(repo: Path, language: str | None, files: list[str]) -> tuple[list[str], list[str]]:
    """The regression command (the repository's own tests) and the repository-layer one
    (it still builds) for ``language``; blanks when trialhouse cannot tell."""
    if language == "python":
        tests = (["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "{workspace}"]
                 if _uses_pytest(repo, files) else
                 ["python3", "-m", "unittest", "discover", "-s", "{workspace}", "-t", "{workspace}"])
        return tests, ["python3", "-m", "compileall", "-q", "{workspace}"]
    if language == "go":
        return _in_workspace("go test ./..."), _in_workspace("go vet ./...")
    if language == "rust":
        return (_in_workspace('CARGO_TARGET_DIR="$HOME/target" cargo test -q'),
                _in_workspace('CARGO_TARGET_DIR="$HOME/target" cargo build -q'))
    if language in ("javascript", "typescript"):
        return _in_workspace("npm test --silent"), [f"{MARKER} a command that fails when the repository no "
                                                    "longer builds, e.g. sh -c 'cd \"$TRIALHOUSE_WORKSPACE\" "
                                                    "&& npm run build'"]
    return ([f"{MARKER} the command that runs the repository's own tests, e.g. sh -c 'cd "
             "\"$TRIALHOUSE_WORKSPACE\" && make test'"],
            [f"{MARKER} a command that fails when the repository no longer builds"])


def _check_places(repo: Path, out: Path) -> Path:
    """The repository's top directory, once ``repo`` and ``out`` are usable."""
    if not repo.is_dir():
        raise InitError(f"{repo}: not a directory; give the git repository to evaluate agents on")
    top = git.git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise InitError(f"{repo}: not a git repository; run `git init` there and commit the "
                        "state the agents should start from")
    root = Path(top.stdout.decode().strip()).resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InitError(f"--output {out}: exists and is not an empty directory; choose a new one")
    target = out.resolve()
    if target == root or root in target.parents:
        raise InitError(f"--output {out}: inside the repository {root}; graders and reference "
                        "patches must live outside it (an agent could read them once committed): "
                        f"choose a directory beside it, e.g. {root.parent / (root.name + '-trialhouse')}")
    return root


def manifest_document(root: Path, out: Path, commit: str, language: str | None,
                      commands: tuple[list[str], list[str]], grader: str) -> dict:
    """The manifest ``init`` writes (field by field in the companion README)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip(".-_") or "repository"
    grader_argv = (["python3", f"{{inputs}}/{grader}"] if grader.endswith(".py")
                   else ["sh", f"{{inputs}}/{grader}"])
    agent = str((out / "agent" / "run_agent.sh").resolve())
    criteria = [
        {"id": "requested-change", "layer": "target", "description": "The change the prompt asks for is made",
         "command": grader_argv, "files": [grader], "in_process": grader.endswith(".py")},
        {"id": "existing-tests", "layer": "regression",
         "description": "The repository's own tests still pass", "command": commands[0]},
        {"id": "still-builds", "layer": "repository",
         "description": "The repository still builds", "command": commands[1]},
    ]
    case = {"id": CASE, "prompt": f"{MARKER} the change you want, as you would ask a colleague: "
                                  "what is wrong and what should happen instead",
            "reference_patch": f"references/{CASE}.patch",
            "labels": {"language": language} if language else {}, "criteria": criteria}

    def mine(vid: str, model: str) -> dict:
        return {"id": vid, "model": f"{MARKER} {model}", "harness": "my-agent", "harness_version": "1",
                "agent": {"kind": "command", "argv": ["sh", agent, "{model}"], "usage_format": "none"}}

    builtin = {"harness": "trialhouse-builtin", "harness_version": "1"}
    return {
        "schema_version": 1, "id": f"{name}-agents"[:64], "repository": os.path.relpath(root, out.resolve()),
        "initial_commit": commit, "repetitions": 2, "timeout_seconds": 900,
        "benchmark_policy": (f"You are working in a local git checkout of {name}. Change only what the "
                             "request needs, keep existing behaviour working, and do not edit or delete "
                             "existing tests. Hidden graders decide the result."),
        "cases": [case],
        "variants": [{"id": "null", **builtin, "agent": {"kind": "null"}},
                     {"id": "reference", **builtin, "agent": {"kind": "reference"}},
                     mine("my-agent", "the model your agent uses (any name you choose)"),
                     mine("my-agent-alt", "a second model (or setting) to compare with the first")],
    }


def init_manifest(repo: Path, out: Path) -> Scaffold:
    """Write a first manifest for ``repo`` into ``out`` (new or empty, outside ``repo``)."""
    repo, out = Path(repo), Path(out)
    root = _check_places(repo, out)
    head = git.git(root, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    if head.returncode != 0:
        raise InitError(f"{repo}: has no commit yet; commit the state the agents should start from")
    commit = head.stdout.decode().strip()
    files = git.git_out(root, "ls-files", "-z").split("\0")
    language = _language(files)
    grader = f"graders/{CASE}_target." + ("py" if language == "python" else "sh")
    doc = manifest_document(root, out, commit, language, layer_commands(root, language, files), grader)
    shown = Path(os.path.relpath(out / "references" / f"{CASE}.patch"))
    contents = {
        "manifest.json": json.dumps(doc, indent=2) + "\n",
        grader: target_grader(grader, CASE),
        f"references/{CASE}.patch": (f"{MARKER} this file with the reference patch: make the change in "
                                     f"{repo}, run `git -C {repo} diff > {shown}`, then undo it with "
                                     f"`git -C {repo} checkout -- .`\n"),
        "agent/run_agent.sh": AGENT_SCRIPT,
        "README.md": companion_readme(doc, repo=str(repo), out=str(out)),
    }
    written = []
    for rel, text in contents.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    dirty = git.git_out(root, "status", "--porcelain", "-z").split("\0")
    return Scaffold(out / "manifest.json", commit, language, written, len([d for d in dirty if d]))
