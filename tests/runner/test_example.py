"""The example corpus: deterministic, well-formed, and its graders tell right from wrong.

The controls run every grader as a real subprocess against real clones, independently
of the runner: initial commit, reference patch, and the simulated agent's wrong and
regression-introducing candidates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runner.errors import RunnerError
from runner.example import CASES, write_example
from runner.manifest import Manifest


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return write_example(tmp_path_factory.mktemp("corpus") / "example")


def _manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _heads(root: Path) -> dict[str, str]:
    out = {}
    for repo in sorted((root / "repos").iterdir()):
        out[repo.name] = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                                        text=True, check=True).stdout.strip()
    return out


def test_deterministic_across_directories(corpus, tmp_path):
    other = write_example(tmp_path / "with space" / "again")
    assert _heads(corpus.parent) == _heads(other.parent)
    assert corpus.read_bytes() == other.read_bytes()  # the manifest holds relative paths only
    for sub in ("references", "candidates", "graders", "instructions"):
        left = {p.relative_to(corpus.parent): p.read_bytes() for p in (corpus.parent / sub).rglob("*") if p.is_file()}
        right = {p.relative_to(other.parent): p.read_bytes() for p in (other.parent / sub).rglob("*") if p.is_file()}
        assert left == right, sub


def test_manifest_records_real_commits_and_shape(corpus):
    data = _manifest(corpus)
    m = Manifest.model_validate(data)
    heads = _heads(corpus.parent)
    assert m.initial_commit == heads["shop-service"]
    for case in m.cases:
        repo = case.labels.repository
        assert case.initial_commit in (None, heads[repo])
        if case.repository:
            assert case.repository == f"repos/{repo}"
        assert case.labels.difficulty and case.labels.task_class and case.labels.familiarity
        layers = {c.layer for c in case.criteria}
        assert {"target", "regression"} <= layers, case.id
        for crit in case.criteria:
            for f in crit.files:
                assert (corpus.parent / f).is_file()
    assert len(m.cases) >= 22
    assert sum(c.holdout for c in m.cases) == 5
    assert {c.labels.difficulty for c in m.cases} == {"easy", "medium", "hard"}
    assert {"validation", "concurrency", "persistence", "transactions", "security", "access-control"} <= {
        c.labels.task_class for c in m.cases}
    assert {c.labels.familiarity for c in m.cases} == {"known", "unknown"}
    assert len({c.labels.repository for c in m.cases}) == 4
    assert any(c.layer == "repository" for case in m.cases for c in case.criteria)
    kinds = [v.agent.kind for v in m.variants]
    assert kinds.count("simulated") == 4 and "null" in kinds and "reference" in kinds
    sims = [v for v in m.variants if v.agent.kind == "simulated"]
    assert len({(v.model, v.harness) for v in sims}) == 4 and len({v.model for v in sims}) == 2
    assert all("SIMULATED" in v.model for v in sims)
    assert any(v.stage_instructions for v in sims)
    assert (m.repetitions, m.max_attempts) == (2, 2)


def test_refuses_non_empty_destination(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(RunnerError, match="not empty"):
        write_example(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]
    (tmp_path / "empty").mkdir()
    assert write_example(tmp_path / "empty").is_file()  # an existing empty directory is fine


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(ws), *args], capture_output=True, text=True, check=True).stdout


def _grade(corpus_root: Path, case: dict, workspace: Path, path_env: str) -> dict[str, tuple[str, int, str]]:
    env = {**os.environ, "PATH": path_env, "TRIALHOUSE_WORKSPACE": str(workspace),
           "TRIALHOUSE_INPUTS": str(corpus_root)}
    results = {}
    for crit in case["criteria"]:
        if "judge" in crit:  # supplementary, never graded here
            continue
        argv = [a.replace("{inputs}", str(corpus_root)).replace("{workspace}", str(workspace)) for a in crit["command"]]
        done = subprocess.run(argv, cwd=corpus_root, env=env, capture_output=True, text=True,
                              timeout=crit["timeout_seconds"])
        results[crit["id"]] = (crit["layer"], done.returncode, done.stdout + done.stderr)
    return results


def _controls(corpus_root: Path, data: dict, case: dict, tmp: Path, path_env: str) -> list[str]:
    """Return a list of problems (empty when every control holds)."""
    problems: list[str] = []
    ws = tmp / case["id"]
    repo = corpus_root / case.get("repository", data["repository"])
    subprocess.run(["git", "clone", "-q", str(repo), str(ws)], check=True)
    _git(ws, "checkout", "-q", case.get("initial_commit", data["initial_commit"]))
    states = {
        "initial": None,
        "reference": case["reference_patch"],
        "wrong": f"candidates/{case['id']}/wrong.patch",
        "regression": f"candidates/{case['id']}/regression.patch",
    }
    pre_existing: set[str] = set()  # repository/regression criteria already red on the initial commit
    for state, patch in states.items():
        _git(ws, "reset", "-q", "--hard")
        _git(ws, "clean", "-q", "-fdx")
        if patch:
            _git(ws, "apply", str(corpus_root / patch))
        res = _grade(corpus_root, case, ws, path_env)
        codes = {cid: code for cid, (_, code, _) in res.items()}
        if any(code not in (0, 1) for code in codes.values()):
            problems.append(f"{case['id']}/{state}: inconclusive {codes} {res}")
            continue
        if state == "initial":
            pre_existing = {cid for cid, (layer, code, _) in res.items()
                            if layer == "repository" and code == 1 and cid == "public-api-documented"}
        target = [code for layer, code, _ in res.values() if layer == "target"]
        others = [code for cid, (layer, code, _) in res.items() if layer != "target" and cid not in pre_existing]
        ok = {
            "initial": all(c == 1 for c in target) and all(c == 0 for c in others),
            "reference": all(c == 0 for c in target + others),
            "wrong": any(c == 1 for c in target),
            "regression": all(c == 0 for c in target) and any(
                code == 1 for layer, code, _ in res.values() if layer == "regression"),
        }[state]
        if not ok:
            problems.append(f"{case['id']}/{state}: {codes}")
        status = _git(ws, "status", "--porcelain")
        if status.strip() and state == "initial":
            problems.append(f"{case['id']}/{state}: grading dirtied the workspace: {status!r}")
    return problems


@pytest.fixture(scope="module")
def path_env(tmp_path_factory) -> str:
    """PATH whose python3 is this interpreter (a version-manager shim can add 0.3 s per call)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "python3").symlink_to(sys.executable)
    return os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])


def test_controls_for_every_case(corpus, tmp_path, path_env):
    root = corpus.parent
    data = _manifest(corpus)
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for ps in pool.map(lambda c: _controls(root, data, c, tmp_path, path_env), data["cases"])
                    for p in ps]
    assert problems == []


def test_the_sweep_manifest_holds_its_controls_and_its_visible_check_is_the_easy_half(corpus, tmp_path, path_env):
    root = corpus.parent
    data = _manifest(root / "sweep.json")
    assert Manifest.model_validate(data).variants[0].max_cost_usd == [0.1, 0.2, 0.4]
    problems = [p for c in data["cases"] for p in _controls(root, data, c, tmp_path / "controls", path_env)]
    assert problems == []  # the visible check is a target criterion: it fails first, passes the reference
    case = next(c for c in data["cases"] if c["id"] == "transfer-insufficient-funds")
    assert [(c["id"], c.get("visible", False)) for c in case["criteria"]] == [
        ("refuses-overdraft", False), ("accounts-keep-working", False), ("raises-on-overdraft", True)]
    ws = tmp_path / "wrong"
    subprocess.run(["git", "clone", "-q", str(root / case["repository"]), str(ws)], check=True)
    _git(ws, "apply", str(root / "candidates" / case["id"] / "wrong.patch"))
    codes = {cid: code for cid, (_, code, _) in _grade(root, case, ws, path_env).items()}
    assert codes == {"refuses-overdraft": 1, "accounts-keep-working": 0, "raises-on-overdraft": 0}


def test_grader_without_workspace_is_an_infrastructure_error(corpus):
    env = {k: v for k, v in os.environ.items() if k != "TRIALHOUSE_WORKSPACE"}
    done = subprocess.run([sys.executable, str(corpus.parent / "graders" / "ledger.py"), "money_existing"],
                          cwd=corpus.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "TRIALHOUSE_WORKSPACE" in done.stderr
    env["TRIALHOUSE_WORKSPACE"] = str(corpus.parent)
    done = subprocess.run([sys.executable, str(corpus.parent / "graders" / "ledger.py"), "no_such_check"],
                          cwd=corpus.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 2


def test_grader_reports_missing_code_as_absent(corpus, tmp_path):
    env = {**os.environ, "TRIALHOUSE_WORKSPACE": str(tmp_path)}  # empty workspace: nothing to import
    done = subprocess.run([sys.executable, str(corpus.parent / "graders" / "shop_service.py"), "orders_existing"],
                          cwd=corpus.parent, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stdout


def test_one_case_has_a_pre_existing_red_repository_check(corpus, tmp_path, path_env):
    """The docstring lint is red on the ledger's initial commit and stays red with the
    reference: the runner records it as pre-existing and scores the case."""
    root = corpus.parent
    data = _manifest(corpus)
    linted = [c for c in data["cases"] if any(k["id"] == "public-api-documented" for k in c["criteria"])]
    assert [c["id"] for c in linted] == ["amount-format-negative"]
    (case,) = linted
    ws = tmp_path / "ws"
    subprocess.run(["git", "clone", "-q", str(root / case["repository"]), str(ws)], check=True)
    _git(ws, "checkout", "-q", case["initial_commit"])
    layer, code, out = _grade(root, case, ws, path_env)["public-api-documented"]
    assert (layer, code) == ("repository", 1) and "ledger/accounts.py:10: Ledger has no docstring" in out
    _git(ws, "apply", str(root / case["reference_patch"]))
    assert _grade(root, case, ws, path_env)["public-api-documented"][1] == 1


def test_the_lint_writes_the_token_only_when_it_passes(corpus, tmp_path):
    """The lint never runs workspace code, so it is its own trusted parent: the success
    token from stdin reaches the result file only when every public definition is
    documented (docs/security.md, "The verdict channel")."""
    pkg = tmp_path / "ws" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A package."""\n')
    (pkg / "mod.py").write_text('def public():\n    """Documented."""\n\n\ndef _private():\n    pass\n')
    result = tmp_path / "result"
    env = {**os.environ, "TRIALHOUSE_WORKSPACE": str(tmp_path / "ws"), "TRIALHOUSE_RESULT_FILE": str(result)}
    lint = [sys.executable, str(corpus.parent / "graders" / "docstrings.py"), "pkg"]
    done = subprocess.run(lint, input="tok-123\n", env=env, capture_output=True, text=True)
    assert (done.returncode, result.read_text()) == (0, "tok-123")
    result.unlink()
    (pkg / "mod.py").write_text("def public():\n    return 1\n\n\nclass Broken(:\n")
    (pkg / "more.py").write_text("class Public:\n    pass\n")
    done = subprocess.run(lint, input="tok-123\n", env=env, capture_output=True, text=True)
    assert done.returncode == 1 and not result.exists()
    assert done.stdout.splitlines() == ["pkg/mod.py: does not parse (SyntaxError)", "pkg/more.py:1: Public has no docstring"]
    done = subprocess.run([*lint[:2], "missing"], input="tok-123\n", env=env, capture_output=True, text=True)
    assert done.returncode == 2 and "grader error" in done.stderr and not result.exists()


def test_case_definitions_are_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
