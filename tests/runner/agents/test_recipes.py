"""The recipes of docs/agents.md, run verbatim with bash against a scripted provider.

Each ``<!-- recipe: <harness> -->`` block is executed as written, in a workspace holding
the rehearsal task; only the gateway's upstream is redirected (the documented
``TRIALHOUSE_GATEWAY_*_URL`` variables) to a scripted provider, so no network is needed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner.agents.rehearse import CALC_BUGGY, CALC_FIXED, scenario_script
from runner.gateway import Gateway

from .conftest import TOOLS_BIN

pytestmark = pytest.mark.slow
DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"


def recipe(name: str) -> str:
    match = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```sh\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/agents.md has no recipe block for {name}"
    return match.group(1)


@pytest.mark.parametrize("kind", ["claude-code", "codex", "mini-swe-agent"])
def test_documented_recipe_runs_through_the_gateway(kind, tmp_path):
    assert (TOOLS_BIN / {"claude-code": "claude", "codex": "codex", "mini-swe-agent": "mini"}[kind]).exists(), \
        "run `make tools`"
    workspace = tmp_path / "repo"
    workspace.mkdir()
    (workspace / "calc.py").write_text(CALC_BUGGY)
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    script = recipe(kind) + '\necho "OUT=$OUT"\n'
    # Codex's recipe names its default model, whose commands go through its exec tool
    with Gateway("scripted", script=scenario_script(kind, "success", exec_tool=kind == "codex")) as provider:
        upstream = provider.open_trial("provider", variables={"workspace": str(workspace)})
        env = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(TOOLS_BIN), "/usr/local/bin", "/usr/bin",
                                     "/bin"]),
            "HOME": str(tmp_path / "home"),
            "TMPDIR": str(tmp_path),
            "PYTHONPATH": str(DOC.parents[1]),
            "TRIALHOUSE_GATEWAY_ANTHROPIC_URL": upstream,
            "TRIALHOUSE_GATEWAY_OPENAI_URL": upstream,
        }
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workspace, env=env,
                              capture_output=True, text=True, timeout=180)
        provider_calls = provider.calls("provider")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (workspace / "calc.py").read_text() == CALC_FIXED
    out = Path(re.search(r"^OUT=(.+)$", proc.stdout, re.M).group(1))
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    assert [c["status"] for c in calls] == [200] * 5
    assert {c["mode"] for c in calls} == {"record" if kind == "claude-code" else "forward"}
    assert [c["output_tokens"] for c in calls] == [c.output_tokens for c in provider_calls]
    # the provider saw the gateway's key (the documented default), never the agent's dummy
    assert "via-gateway" not in (out / "calls.jsonl").read_text()
    if kind == "claude-code":
        recording = next((out / "recordings").glob("*.jsonl")).read_text()
        assert "sk-ant-your-key" not in recording and "via-gateway" not in recording
