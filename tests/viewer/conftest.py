"""A real run for the viewer tests, built once per module: a tiny corpus (tests/runner/conftest's
``make_corpus``: calc.add, graders, a reference patch) run by the real CLI with two variants —
``chat``, a command agent whose model calls go through the run's scripted gateway (steps with a
command and its exit status, model calls with tokens), and ``noop`` — both judged by a
scripted judge, then ingested with a runs-jsonl file whose task id is markup. A viewer is
started on it as a subprocess (``trialhouse view --no-open``), with a reviews file and a grid.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
MARKUP = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
"""A task id with markup in it (a foreign source may name tasks anything)."""
GRID = """id: review-grid
version: 1
reason_codes: [grader_too_lenient, grader_too_strict, style_not_graded]
items:
  pattern: [follows-existing-pattern, creates-parallel-mechanism]
"""
# The agent's one command: mul with a broad handler (a patch-inspection flag on that line)
ADD_MUL = ("python3 -c \"open('calc.py', 'a').write('\\n\\ndef mul(a, b):\\n    try:\\n        return a * b\\n"
           "    except Exception:\\n        raise\\n')\"")
GRADER = """import os, sys
sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
try:
    import calc
    value = {expr}
except Exception as exc:
    value = repr(exc)
print("grader says: {expr} ->", value)
sys.exit(0 if value == {want} else 1)
"""


def _runner_kit():
    """tests/runner/conftest.py's corpus helpers (a conftest cannot be imported by name)."""
    spec = importlib.util.spec_from_file_location("runner_kit", ROOT / "tests" / "runner" / "conftest.py")
    assert spec is not None and spec.loader is not None
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    return kit


def th(*args: str, check: bool = True, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"trialhouse {' '.join(args)} exited {proc.returncode}\n{proc.stderr[-3000:]}")
    return proc


def build_run(base: Path) -> dict[str, Path | str]:
    kit = _runner_kit()
    root = base / "corpus"
    root.mkdir(parents=True)
    judge = {"judge": {"host": "builtin", "script": "judge.json"}}
    variants = [{"id": "chat", "model": "chat-model", "agent": kit.agent("chat", "{model_base_url}", gateway=True),
                 "evaluations": judge},
                {"id": "noop", "agent": kit.agent("noop"), "evaluations": judge}]
    manifest = kit.make_corpus(root, variants=variants, stages=["build", "qa"])
    (root / "graders" / "target_mul.py").write_text(GRADER.format(expr="calc.mul(2, 3)", want=6))
    (root / "graders" / "regress_add.py").write_text(GRADER.format(expr="calc.add(2, 3)", want=5))
    (root / "script.json").write_text(json.dumps({"steps": [
        {"tool_calls": [{"name": "bash", "input": {"command": ADD_MUL}}],
         "usage": {"input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 50}},
        {"text": "added mul", "usage": {"input_tokens": 260, "output_tokens": 5, "cache_read_tokens": 50}}]}))
    (root / "rubric.md").write_text("# rubric v1\npass when the change follows the existing pattern\n")
    answer = {"verdict": "fail", "reasons": ["adds a parallel mechanism"], "failure_category": "implementation"}
    (root / "judge.json").write_text(json.dumps({"steps": [{"text": json.dumps(answer),
                                                             "usage": {"input_tokens": 700, "output_tokens": 20}}]}))
    data = json.loads(manifest.read_text())
    data["gateway"] = {"mode": "scripted", "script": "script.json"}
    data["cases"][0]["criteria"].append({"id": "fits", "description": "fits the codebase",
                                         "judge": {"rubric": "rubric.md"}})
    manifest.write_text(json.dumps(data))
    run_dir = base / "run"
    th("run", "--manifest", str(manifest), "--output", str(run_dir), "--no-progress")
    foreign = base / "foreign.jsonl"
    foreign.write_text(json.dumps({"model": "model-x", "harness": "h", "harness_version": "1", "task_id": MARKUP,
                                   "trial": 1, "status": "solved", "started_at": "2026-01-22T18:53:00+00:00"}) + "\n")
    wh = base / "wh" / "trialhouse.duckdb"
    th("ingest", str(run_dir), str(foreign), "--warehouse", str(wh))
    (base / "grid.yaml").write_text(GRID)
    run_id = json.loads((run_dir / "report.json").read_text())["run_id"]
    return {"base": base, "run": run_dir, "wh": wh, "run_id": run_id, "grid": base / "grid.yaml",
            "reviews": base / "reviews.jsonl", "manifest": manifest}


def start_viewer(*args: str) -> tuple[subprocess.Popen[str], str]:
    """``trialhouse view --no-open ARGS`` as a subprocess; (process, URL) once it listens."""
    proc = subprocess.Popen([PY, "-m", "trialhouse", "view", "--no-open", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "http://" in line or proc.poll() is not None:
            break
    found = re.search(r"http://\S+", line)
    if not found:
        proc.kill()
        raise AssertionError(f"the viewer did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, found.group(0)


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop the viewer this test started (its own process group only)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def viewer_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | str]:
    return build_run(tmp_path_factory.mktemp("viewer run"))


@pytest.fixture(scope="module")
def served(viewer_run):
    """The running viewer on the run's warehouse: URL and the run's facts."""
    proc, url = start_viewer("--warehouse", str(viewer_run["wh"]), "--reviews", str(viewer_run["reviews"]),
                             "--rubric", str(viewer_run["grid"]))
    try:
        yield {**viewer_run, "url": url, "proc": proc}
    finally:
        stop(proc)
