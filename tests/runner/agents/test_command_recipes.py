"""docs/agents.md's aider and OpenHands recipes, verbatim, as ``command`` agents in ``trialhouse run``.

Each tool is the pinned release from PyPI that ``make recipe-tools`` installs into
``tools/`` (package registries are the only network it needs; ``TRIALHOUSE_RECIPE_TOOLS``
points elsewhere); a missing install is a setup failure, never a skip. The installs are about
1.5 GB, so these run under ``make test-recipes``, not ``make test`` (marker ``recipes``). The block runs inside
bubblewrap against a scripted gateway (the only network the sandbox has) on the calc task:
graded ``accepted``, its calls are main-loop calls (steps, trial tokens from the gateway),
and ``changes.patch`` holds only the fix (no history files).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall, TrajectoryStep
from contract.trial_events import TrialFinished
from runner.eventlog import read_events
from runner.gateway import Script, Step, Tokens, ToolCall

from .conftest import harness_corpus

pytestmark = [pytest.mark.slow, pytest.mark.recipes]
PY = sys.executable
DOC = Path(__file__).resolve().parents[3] / "docs" / "agents.md"
TOOLS = Path(os.environ.get("TRIALHOUSE_RECIPE_TOOLS") or Path(__file__).resolve().parents[3] / "tools")
INSTALLS = {"aider": ("aider-chat-0.86.2", "aider"), "openhands": ("openhands-1.16.0", "openhands")}
EDIT = ("calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n")


def recipe(name: str) -> dict:
    match = re.search(rf"<!-- command-recipe: {re.escape(name)} -->\n```json\n(.*?)```", DOC.read_text(), re.S)
    assert match, f"docs/agents.md has no command-recipe block {name}"
    return json.loads(match.group(1))


def installed(name: str) -> Path:
    folder, program = INSTALLS[name]
    binary = TOOLS / folder / "bin" / program
    assert binary.exists(), f"{binary} is missing: run `make recipe-tools` (PyPI only)"
    return Path(os.path.realpath(binary.parent)) / program


def visible(binary: Path) -> list[str]:
    """The virtualenv and the Python installation it links to (read-only in the sandbox)."""
    venv = binary.parent.parent
    base = Path(os.path.realpath(venv / "bin" / "python")).parent.parent
    return sorted({str(venv), str(base)})


def run(name: str, script: Script, tmp_path: Path) -> tuple[list, Path]:
    binary = installed(name)
    variant = {"id": name, "model": "th-scripted-1", "agent": recipe(name)}
    manifest = harness_corpus(tmp_path / "corpus", [variant], {"mode": "scripted", "script": "scripts/s.json"},
                              {"s": script}, isolation={"read_only_paths": visible(binary)})
    out = tmp_path / "run"
    env = {**os.environ, "PATH": f"{binary.parent}:{os.environ['PATH']}"}
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(manifest), "--output", str(out), "--json"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_events(out / "events.jsonl"), out


def test_aider_recipe_is_the_main_loop_and_its_history_stays_out_of_the_patch(tmp_path):
    script = Script(steps=[Step(text=EDIT, usage=Tokens(input_tokens=900, output_tokens=60, cache_read_tokens=100))])
    events, out = run("aider", script, tmp_path)
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    trial = out / "trials" / "fix-add__aider__r1"
    assert fin.outcome == "accepted", (fin.reason, (trial / "logs" / "a1-build.stdout").read_text()[-2000:])
    calls = [e for e in events if isinstance(e, ModelCall)]
    main = [c for c in calls if not c.side_request]
    assert main and all(c.model == "th-scripted-1" for c in main)  # aider offers no tools: main_loop "model"
    steps = [e for e in events if isinstance(e, TrajectoryStep)]
    assert [s.kind for s in steps] == ["model"] * len(main) and {s.tokens_from for s in steps} == {"gateway"}
    assert fin.gateway_usage.input_tokens is not None
    assert (fin.usage.input_tokens, fin.usage.output_tokens) == (fin.gateway_usage.input_tokens,
                                                                 fin.gateway_usage.output_tokens)
    assert "gateway" in fin.usage.source.split("+") and fin.usage.steps == len(main)
    assert fin.patch_paths == ["calc.py"]  # no .aider.chat.history.md, no .aider.input.history
    patch = (trial / "changes.patch").read_text()
    assert "+    return a + b" in patch and ".aider" not in patch


def test_openhands_recipe_runs_the_current_cli_headless_through_the_gateway(tmp_path):
    """The OpenHands CLI's own tools (``terminal``, ``file_editor``, ``finish``), scripted. Its
    tools refuse a call without ``security_risk`` (measured: an AgentErrorEvent, nothing runs)."""
    risk = {"security_risk": "LOW"}
    read = ToolCall(name="terminal", input={"command": "cat calc.py", **risk})
    edit = ToolCall(name="file_editor", input={"command": "str_replace", "path": "{workspace}/calc.py",
                                               "old_str": "a - b", "new_str": "a + b", **risk})
    check = ToolCall(name="terminal", input={"command": "python3 -B -c 'import calc; assert calc.add(2, 3) == 5'",
                                             **risk})
    finish = ToolCall(name="finish", input={"message": "Fixed: add adds."})
    script = Script(steps=[Step(text=f"Step {i}.", tool_calls=[call], usage=Tokens(input_tokens=500 + i, output_tokens=20))
                           for i, call in enumerate([read, edit, check, finish])])
    events, out = run("openhands", script, tmp_path)
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    trial = out / "trials" / "fix-add__openhands__r1"
    assert fin.outcome == "accepted", (fin.reason, (trial / "logs" / "a1-build.stderr").read_text()[-2000:])
    main = [e for e in events if isinstance(e, ModelCall) and not e.side_request]
    assert [c.tool_calls for c in main] == [["terminal"], ["file_editor"], ["terminal"], ["finish"]]
    assert (fin.usage.input_tokens, fin.usage.output_tokens) == (500 + 501 + 502 + 503, 80)
    assert fin.usage.steps == 4 and fin.patch_paths == ["calc.py"]
