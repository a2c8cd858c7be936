"""Write the example corpus: four deterministic git repositories, graders, patches, manifest.

Every commit is made with fixed identities, dates, file modes and an isolated git
configuration, so its SHA is the same on every machine. Patches are produced by
``git diff`` from the case definitions, so they apply cleanly by construction.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from runner.errors import RunnerError
from runner.example.cases_other import CASES as OTHER_CASES
from runner.example.cases_shop import CASES as SHOP_CASES
from runner.example.conditions import build_conditions_manifest
from runner.example.spec import CaseSpec, Edit, Repo
from runner.example.sweep import build_sweep_manifest

CORPUS = Path(__file__).resolve().parent / "corpus"
MAIN_REPO = "shop-service"
REPOS = (
    Repo("shop-service", "known", "shop_service.py", "shop-service: orders, inventory, billing, store, webhooks, tenants"),
    Repo("inventory-core", "known", "inventory_core.py", "inventory-core: SKUs, warehouses, transfers, ids, snapshots"),
    Repo("ledger", "unknown", "ledger.py", "ledger: amounts, accounts, transfers, journal"),
    Repo("notify-relay", "unknown", "notify_relay.py", "notify-relay: messages, signing, hub, rate limits"),
)
CASES: tuple[CaseSpec, ...] = (*SHOP_CASES, *OTHER_CASES)
LABELS = ("correct", "wrong", "regression")
GITIGNORE = "__pycache__/\n*.pyc\n"
IDENTITY = ("Trialhouse Example", "example@trialhouse.invalid", "2024-05-01T09:00:00+00:00")
GRADER_TIMEOUT = 30
BENCHMARK_POLICY = (
    "You are working in a local git checkout of a small Python project (standard library only). "
    "Change only what the request needs, keep existing behaviour working, and do not edit or delete "
    "existing tests. Hidden graders decide the result; a stage saying it passed is not a grade."
)


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    name, email, date = IDENTITY
    env.update(
        GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email, GIT_COMMITTER_DATE=date,
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", LC_ALL="C",
    )
    return env


def _git(cwd: Path, *args: str) -> str:
    cmd = ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
           "-c", "core.autocrlf=false", "-c", "core.fileMode=true", *args]
    try:
        done = subprocess.run(cmd, cwd=cwd, env=_git_env(), capture_output=True, text=True, check=True)
    except FileNotFoundError:
        raise RunnerError("git is not installed or not on PATH; install git to write the example") from None
    except subprocess.CalledProcessError as exc:
        raise RunnerError(f"git {' '.join(args)} failed in {cwd}: {exc.stderr.strip()}") from None
    return done.stdout


def _source_files(repo: str) -> dict[str, str]:
    """The repository's initial files (relative posix path → text), sorted."""
    root = CORPUS / "repos" / repo
    files = {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    files[".gitignore"] = GITIGNORE
    return dict(sorted(files.items()))


def _write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
        os.chmod(target, 0o644)


def _make_repo(path: Path, repo: Repo) -> str:
    """Create the repository with one deterministic commit; return its SHA."""
    path.mkdir(parents=True)
    _git(path, "init", "-q", "--template=")
    files = _source_files(repo.name)
    _write_files(path, files)
    _git(path, "add", "--", *files)
    _git(path, "commit", "-q", "--no-verify", "-m", repo.message)
    return _git(path, "rev-parse", "HEAD").strip()


def apply_edits(case_id: str, files: dict[str, str], edits: tuple[Edit, ...]) -> dict[str, str]:
    """Apply exact text replacements; each ``old`` must match exactly once."""
    out = dict(files)
    for edit in edits:
        text = out.get(edit.path)
        count = 0 if text is None else text.count(edit.old)
        if text is None or count != 1:
            raise ValueError(f"{case_id}: edit of {edit.path} matches {count} times: {edit.old[:60]!r}")
        out[edit.path] = text.replace(edit.old, edit.new)
    return out


def _diff(scratch: Path, base: dict[str, str], changed: dict[str, str]) -> str:
    modified = {p: t for p, t in changed.items() if base.get(p) != t}
    _write_files(scratch, modified)
    patch = _git(scratch, "diff", "--no-color", "--no-ext-diff", "--full-index", "--src-prefix=a/",
                 "--dst-prefix=b/", "-U3", "--", *sorted(modified))
    _write_files(scratch, {p: base[p] for p in modified})
    return patch


def _write_patches(dest: Path, scratch_root: Path) -> None:
    for repo in REPOS:
        scratch = scratch_root / repo.name
        _git(scratch_root, "clone", "-q", "--no-hardlinks", str(dest / "repos" / repo.name), str(scratch))
        base = _source_files(repo.name)
        for case in (c for c in CASES if c.repo == repo.name):
            folder = dest / "candidates" / case.id
            folder.mkdir(parents=True)
            for label in LABELS:
                patch = _diff(scratch, base, apply_edits(case.id, base, getattr(case, label)))
                (folder / f"{label}.patch").write_text(patch, encoding="utf-8")
                if label == "correct":
                    (dest / "references" / f"{case.id}.patch").write_text(patch, encoding="utf-8")


def _criterion(repo: Repo, check) -> dict:
    return {
        "id": check.id,
        "description": check.description,
        "layer": check.layer,
        "command": ["python3", f"{{inputs}}/graders/{repo.grader}", check.check],
        "files": [f"graders/{repo.grader}", "graders/_harness.py"],
        "timeout_seconds": GRADER_TIMEOUT,
        # The graders import workspace code: exit 0 alone must not be a pass.
        "success_token": True,
    }


JUDGED_CASES = ("order-quantity-validation", "order-empty-items", "format-cents-negative")
"""Cases that also carry a supplementary judge criterion (advisory; docs/judges.md)."""
JUDGE_CRITERION = {
    "id": "fits-the-codebase",
    "description": "The change follows the repository's existing patterns and leaves no dead code",
    "layer": "repository",
    "judge": {"rubric": "rubrics/fits-the-codebase.md", "calibration": "rubrics/fits-the-codebase.calibration.json"},
}
JUDGES = {  # variant → its judge: scripted through the gateway, or the rule-based command judge
    "null": "judges/scripted-fail.yaml", "reference": "judges/scripted-pass.yaml",
    "sim-alpha-minimal": "judges/scripted-pass.yaml", "sim-beta-minimal": "judges/scripted-rambling.yaml",
    "sim-beta-planner": "judges/scripted-pass.yaml",
}
RULE_JUDGE = {"host": "command", "argv": ["python3", "{inputs}/judges/rule_judge.py", "{evidence}"],
              "timeout_seconds": 30}


def _judge(vid: str) -> dict:
    if vid in JUDGES:
        return {"judge": {"host": "builtin", "model": "claude-haiku-4-5", "script": JUDGES[vid], "timeout_seconds": 30}}
    return {"judge": dict(RULE_JUDGE)}


def _case(case: CaseSpec, repo: Repo, commits: dict[str, str]) -> dict:
    package = next(p.split("/")[0] for p in _source_files(repo.name) if p.endswith("/__init__.py"))
    criteria = [_criterion(repo, check) for check in case.checks]
    if case.lint_check:
        criteria.append({
            "id": "public-api-documented",
            "description": "Every public function and class of the package has a docstring (the "
                           "repository's lint, already red before the task)",
            "layer": "repository",
            "command": ["python3", "{inputs}/graders/docstrings.py", package],
            "files": ["graders/docstrings.py", "graders/_harness.py"],
            "timeout_seconds": GRADER_TIMEOUT,
            "success_token": True,
        })
    if case.compile_check:
        criteria.append({
            "id": "repository-compiles",
            "description": "Every Python file in the repository still compiles",
            "layer": "repository",
            "command": ["python3", "-m", "compileall", "-q", "{workspace}"],
            "timeout_seconds": GRADER_TIMEOUT,
        })
    out: dict = {
        "id": case.id,
        "prompt": case.prompt,
        "reference_patch": f"references/{case.id}.patch",
        "holdout": case.holdout,
        "labels": {
            "difficulty": case.difficulty, "task_class": case.task_class, "subsystem": case.subsystem,
            "language": "python", "repository": repo.name, "familiarity": repo.familiarity,
        },
    }
    if repo.name != MAIN_REPO:
        out["repository"] = f"repos/{repo.name}"
        out["initial_commit"] = commits[repo.name]
    out["allowed_paths"] = [package, "tests"]
    if case.id in JUDGED_CASES:
        criteria.append(json.loads(json.dumps(JUDGE_CRITERION)))
    out["criteria"] = criteria
    return out


def _simulated(vid: str, model: str, harness: str, version: str, skill: float, price: float,
               planner: bool) -> dict:
    variant: dict = {
        "id": vid, "model": model, "harness": harness, "harness_version": version,
        "settings": {"simulated": True},
        "agent": {"kind": "simulated", "skill": skill, "candidates_dir": "candidates", "price_per_mtok": price},
    }
    if planner:
        variant["stage_instructions"] = {s: [f"instructions/{s}.md"] for s in ("build", "qa", "review")}
    return variant


def build_manifest(commits: dict[str, str]) -> dict:
    """The example manifest (schema v1) for the given repository commits."""
    repos = {r.name: r for r in REPOS}
    variants: list[dict[str, Any]] = [
        {"id": "null", "harness": "trialhouse-builtin", "harness_version": "1", "agent": {"kind": "null"}},
        {"id": "reference", "harness": "trialhouse-builtin", "harness_version": "1", "agent": {"kind": "reference"}},
        _simulated("sim-alpha-minimal", "sim-alpha-SIMULATED", "sim-minimal", "1.4.0", 0.8, 3.0, False),
        _simulated("sim-alpha-planner", "sim-alpha-SIMULATED", "sim-planner", "2.1.0", 0.88, 3.0, True),
        _simulated("sim-beta-minimal", "sim-beta-SIMULATED", "sim-minimal", "1.4.0", 0.55, 0.6, False),
        _simulated("sim-beta-planner", "sim-beta-SIMULATED", "sim-planner", "2.1.0", 0.66, 0.6, True),
    ]
    return {
        "schema_version": 1,
        "id": "trialhouse-example",
        "repository": f"repos/{MAIN_REPO}",
        "initial_commit": commits[MAIN_REPO],
        "repetitions": 2,
        "max_attempts": 2,
        "timeout_seconds": 120,
        "stages": ["build", "qa", "review"],
        "benchmark_policy": BENCHMARK_POLICY,
        "cases": [_case(c, repos[c.repo], commits) for c in CASES],
        "variants": [{**v, "evaluations": _judge(v["id"])} for v in variants],
    }


def write_example(dest: Path) -> Path:
    """Write the example corpus into ``dest`` (new or empty); return the manifest path."""
    dest = Path(dest).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise RunnerError(f"{dest}: already exists and is not empty; choose a new or empty directory")
    dest.mkdir(parents=True, exist_ok=True)
    commits = {repo.name: _make_repo(dest / "repos" / repo.name, repo) for repo in REPOS}
    for sub in ("graders", "instructions", "rubrics", "judges", "reviews"):
        (dest / sub).mkdir()
        for src in sorted((CORPUS / sub).iterdir()):
            if src.is_file() and src.suffix in {".py", ".md", ".yaml", ".json", ".csv", ".jsonl"}:
                shutil.copyfile(src, dest / sub / src.name)
    (dest / "references").mkdir()
    with tempfile.TemporaryDirectory(prefix="trialhouse-example-") as scratch:
        _write_patches(dest, Path(scratch))
    manifest = dest / "manifest.json"
    main = build_manifest(commits)
    manifest.write_text(json.dumps(main, indent=2) + "\n", encoding="utf-8")
    sweep = json.dumps(build_sweep_manifest(main), indent=2) + "\n"  # runner/example/sweep.py
    (dest / "sweep.json").write_text(sweep, encoding="utf-8")
    pair = json.dumps(build_conditions_manifest(main), indent=2) + "\n"  # runner/example/conditions.py
    (dest / "conditions.json").write_text(pair, encoding="utf-8")
    return manifest
