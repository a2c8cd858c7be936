"""Helpers for tests on real harness recordings (fixtures/real/<harness>-<version>/<scenario>/).

Each scenario directory holds what the real CLI wrote (stdout, stderr, rollout or
trajectory), the gateway's ``model_call`` records of the same run, and ``meta.json``
(version, settings, stage start). ``record_real.py`` rewrites them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

REAL = Path(__file__).parent / "fixtures" / "real"
TOOLS_BIN = Path(__file__).resolve().parents[3] / "tools" / "bin"


@dataclass
class Recording:
    dir: Path
    meta: dict

    @property
    def harness(self) -> str:
        return self.meta["harness"]

    @property
    def version(self) -> str:
        return self.meta["version"]

    @property
    def started(self) -> datetime:
        return datetime.fromisoformat(self.meta["stage_started_at"])

    @property
    def stdout(self) -> Path:
        return self.dir / "stdout"

    @property
    def stderr(self) -> Path:
        return self.dir / "stderr"

    @property
    def stream(self) -> bool:
        return self.meta["settings"].get("output_format") == "stream-json"

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in (self.dir / "model_calls.jsonl").read_text().splitlines() if line]

    def gateway_tokens(self) -> tuple[int, int, int]:
        """Token sums over the gateway's successful calls (what the provider reported)."""
        ok = [c for c in self.calls() if c["status"] == 200]
        return tuple(sum(c[k] or 0 for c in ok) for k in ("input_tokens", "output_tokens", "cache_read_tokens"))

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.read_text().splitlines() if line.strip()]

    def __repr__(self) -> str:
        return f"{self.harness}-{self.version}/{self.dir.name}"


def recordings(harness: str, scenario: str) -> list[Recording]:
    found = [Recording(d, json.loads((d / "meta.json").read_text()))
             for d in sorted(REAL.glob(f"{harness}-*/{scenario}")) if (d / "meta.json").is_file()]
    assert found, f"no recording of {harness}/{scenario}: run tests/runner/agents/record_real.py"
    return found


def params(harness: str, scenario: str):
    return pytest.mark.parametrize("rec", recordings(harness, scenario), ids=repr)


def tool(name: str) -> str:
    """A pinned CLI from ``make tools``; a missing one is a setup failure, never a skip."""
    path = TOOLS_BIN / name
    assert path.exists(), f"{path} is missing: run `make tools` (make test does it first)"
    return str(path)


# ---------------------------------------------------------------- whole trials with the real CLIs

CLI = {"claude-code": "claude", "codex": "codex", "mini-swe-agent": "mini"}


def _git(cwd: Path, *args: str) -> str:
    import subprocess

    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def harness_corpus(root: Path, variants: list[dict], gateway: dict, scripts: dict[str, object] | None = None,
                   **overrides) -> Path:
    """The rehearsal task (calc.add subtracts) as a corpus: repo, reference patch, grader,
    gateway scripts (``name`` → ``runner.gateway.Script`` written to ``scripts/<name>.json``)
    and a manifest running only the build stage; returns the manifest path."""
    import sys

    from runner.agents.rehearse import CALC_BUGGY, CALC_FIXED, PROMPT

    repo = root / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "calc.py").write_text(CALC_BUGGY)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "initial")
    sha = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text(CALC_FIXED)
    (root / "fix.patch").write_text(_git(repo, "diff"))
    _git(repo, "checkout", "-q", "--", "calc.py")
    (root / "grader.py").write_text(
        "import os, sys\nsys.path.insert(0, os.environ['TRIALHOUSE_WORKSPACE'])\nimport calc\n"
        "sys.exit(0 if calc.add(2, 3) == 5 else 1)\n")
    (root / "scripts").mkdir()
    for name, script in (scripts or {}).items():
        (root / "scripts" / f"{name}.json").write_text(script.model_dump_json(indent=1))  # type: ignore[attr-defined]
    manifest = {
        "schema_version": 1, "id": "harness-trials", "repository": "repo", "initial_commit": sha,
        "repetitions": 1, "control_repeats": 1, "stages": ["build"], "timeout_seconds": 120,
        "cases": [{"id": "fix-add", "prompt": PROMPT, "reference_patch": "fix.patch",
                   "criteria": [{"id": "adds", "description": "calc.add adds",
                                 "command": [sys.executable, "{inputs}/grader.py"]}]}],
        "variants": variants, "gateway": gateway, **overrides,
    }
    path = root / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2))
    return path


def harness_variant(vid: str, kind: str, **agent) -> dict:
    """A variant running the pinned CLI of ``kind`` on the scripted model."""
    return {"id": vid, "model": agent.pop("model", "th-scripted-1"),
            "agent": {"kind": kind, "binary": tool(CLI[kind]), **agent}}
