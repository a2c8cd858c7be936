"""Rehearsals: run a real harness CLI end to end against the scripted gateway, offline.

A rehearsal is one small task — ``calc.py`` subtracts where it should add — played by
a scripted model in the harness's own tool vocabulary: read the file, run the check
(it fails), edit, run the check again (it passes), finish. Variants of the script
produce the faults worth recording: an HTTP 500, a context-window failure, a turn
limit, a denied tool, a failure after work was done, a killed process.

The test suite runs rehearsals against the pinned CLIs in ``tools/``, and
``tests/runner/agents/record_real.py`` stores their outputs as fixtures, so a CLI
version bump is one command. Rehearsals go through :func:`runner.agents.harness.plan`,
exactly what a trial will run.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.agents.harness import HarnessSettings, plan, read_outputs
from runner.gateway import CallRecord, Gateway, Reply, Script, Step, Tokens, ToolCall
from runner.procs import run_bounded

CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n"
CHECK = "python3 -B -c 'import calc; assert calc.add(2, 3) == 5' && echo ok"
"""``-B``: an edit that keeps the file's size within the same second as the first check
would otherwise be hidden by the stale ``__pycache__`` (seen on a fast real run)."""
PROMPT = "calc.add subtracts instead of adding. Fix it and check it with python3."
CODEX_PATCH = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n"
               "-    return a - b\n+    return a + b\n*** End Patch\nEOF\n")

CODEX_DEFAULT_MODEL = "gpt-6.2-sol"
"""What Codex 0.171 asks for without ``-m`` (measured): its current family offers its tools in an
``additional_tools`` input item, with ``exec`` (JavaScript calling ``tools.exec_command``) as
the model's tool."""

SCENARIOS: dict[str, tuple[str, ...]] = {
    "claude-code": ("success", "success-json", "denied", "http-500", "retry-then-success", "turn-limit",
                    "context-length", "killed"),
    "codex": ("success", "http-500", "context-length", "fail-after-work", "bad-flag"),
    "mini-swe-agent": ("success", "http-500", "turn-limit", "context-length"),
}
"""Every scenario each harness can play (what ``record_real.py`` records)."""


def codex_exec(cmd: str) -> ToolCall:
    """A Codex command the way its current model family runs one: JavaScript in its ``exec``
    custom tool calling the nested ``exec_command`` (what Codex 0.171 offers that family)."""
    return ToolCall(name="exec", custom=f"const r = await tools.exec_command({{cmd: {json.dumps(cmd)}}});\ntext(r);")


def _tools(kind: str, exec_tool: bool = False) -> dict[str, ToolCall]:
    """read / check / edit / finish in each harness's tool vocabulary (``exec_tool``: Codex's
    current family, whose commands go through ``exec``)."""
    if kind == "codex" and exec_tool:
        return {"read": codex_exec("cat calc.py"), "check": codex_exec(CHECK), "edit": codex_exec(CODEX_PATCH)}
    if kind == "claude-code":
        return {
            "read": ToolCall(name="Read", input={"file_path": "{workspace}/calc.py"}),
            "check": ToolCall(name="Bash", input={"command": CHECK, "description": "Run the check"}),
            "edit": ToolCall(name="Edit", input={"file_path": "{workspace}/calc.py",
                                                 "old_string": "a - b", "new_string": "a + b"}),
        }
    if kind == "codex":
        return {
            "read": ToolCall(name="exec_command", input={"cmd": "cat calc.py"}),
            "check": ToolCall(name="exec_command", input={"cmd": CHECK}),
            "edit": ToolCall(name="exec_command", input={"cmd": CODEX_PATCH}),
        }
    return {
        "read": ToolCall(name="bash", input={"command": "cat calc.py"}),
        "check": ToolCall(name="bash", input={"command": CHECK}),
        "edit": ToolCall(name="bash", input={"command": "sed -i 's/a - b/a + b/' calc.py"}),
        "finish": ToolCall(name="bash", input={"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}),
    }


def _usage(step: int) -> Tokens:
    # Growing context, some of it cached: distinct numbers per step so sums are checkable.
    return Tokens(input_tokens=300 + 10 * step, output_tokens=40 + step, cache_read_tokens=1000 * step,
                  cache_write_tokens=0)


def scenario_script(kind: str, scenario: str, *, exec_tool: bool = False) -> Script:
    tools = _tools(kind, exec_tool)
    plain = [tools["read"], tools["check"], tools["edit"], tools["check"]]
    steps = [Step(text=f"Step {i + 1}.", tool_calls=[call], usage=_usage(i)) for i, call in enumerate(plain)]
    if "finish" in tools:
        steps.append(Step(text="Submitting.", tool_calls=[tools["finish"]], usage=_usage(len(steps))))
    else:
        steps.append(Step(text="Fixed: add now adds, and the check passes.", usage=_usage(len(steps))))
    if scenario == "http-500":
        steps = [Step(status=500, error_message="scripted upstream failure")]
    elif scenario == "retry-then-success":
        steps[0] = steps[0].model_copy(update={"before": [Reply(status=500, error_message="transient")]})
    elif scenario == "context-length":
        steps = [steps[0], Step(context_length=True)]
    elif scenario == "fail-after-work":
        steps = [*steps[:3], Step(status=500, error_message="scripted failure after work")]
    elif scenario == "killed":
        steps[1] = steps[1].model_copy(update={"delay_s": 60.0})
    return Script(steps=steps)


def scenario_settings(kind: str, scenario: str, binary: str, model: str | None = None) -> HarnessSettings:
    fields: dict[str, Any] = {"kind": kind, "binary": binary, "max_retries": 1,
                              "model": model or ("claude-sonnet-4-5" if scenario == "success-json" else "th-scripted-1")}
    if kind == "claude-code":
        fields["output_format"] = "json" if scenario in ("success-json", "turn-limit") else "stream-json"
        if scenario != "denied":
            fields["allowed_tools"] = ("Bash",)
        if scenario == "turn-limit":
            fields["max_turns"] = 2
    elif kind == "codex":
        if scenario == "bad-flag":
            fields["extra_args"] = ("--full-auto",)
        if scenario != "http-500":
            fields["max_retries"] = 0
    elif kind == "mini-swe-agent" and scenario == "turn-limit":
        fields["max_turns"] = 2
    if scenario == "http-500":
        fields["max_retries"] = 1
    return HarnessSettings(**fields)


@dataclass
class Rehearsal:
    kind: str
    scenario: str
    settings: HarnessSettings
    root: Path
    workspace: Path
    exit_code: int | None
    timed_out: bool
    duration_s: float
    stage_started_at: datetime
    stdout: Path
    stderr: Path
    trajectory: Path | None
    calls: list[CallRecord] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    result: Any = None
    """The parser's ``HarnessResult``."""
    workspace_fixed: bool = False
    """``calc.py`` holds the fix when the run ended."""


def rehearse(kind: str, scenario: str, binary: str, *, root: Path | None = None, timeout: float = 90.0,
             path_env: str = "/usr/local/bin:/usr/bin:/bin", model: str | None = None,
             parse: bool = True, base_url: str | None = None, overrides: dict[str, Any] | None = None) -> Rehearsal:
    """Run one scenario for real; everything it writes stays under ``root``.

    The harness talks to a scripted gateway started here, or to ``base_url`` (another
    gateway's trial route, e.g. in record or replay mode; ``calls`` is then empty).
    """
    if scenario not in SCENARIOS[kind]:
        raise ValueError(f"{kind} has no scenario {scenario!r}; choose from {', '.join(SCENARIOS[kind])}")
    root = Path(root or tempfile.mkdtemp(prefix=f"rehearse-{kind}-"))
    workspace, home, tmp, out = (root / name for name in ("workspace", "home", "tmp", "out"))
    for directory in (workspace, home, tmp, out):
        directory.mkdir(parents=True, exist_ok=True)
    (workspace / "calc.py").write_text(CALC_BUGGY)
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    settings = scenario_settings(kind, scenario, binary, model)
    if overrides:
        settings = HarnessSettings(**{**settings.model_dump(), **overrides})
    calls: list[CallRecord] = []
    gateway = Gateway("scripted", script=scenario_script(kind, scenario), on_call=calls.append)
    with gateway if base_url is None else contextlib.nullcontext():
        base = base_url or gateway.open_trial(f"{kind}-{scenario}", variables={"workspace": str(workspace)})
        harness_plan = plan(settings, prompt=PROMPT, workspace=workspace, home=home, tmp=tmp,
                            model_base_url=base, output_dir=out)
        for path, text in harness_plan.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        env = {"PATH": path_env, "LANG": "C.UTF-8", **harness_plan.env}
        stdout, stderr = out / "stdout", out / "stderr"
        stdout.touch()
        stderr.touch()
        started = datetime.now(UTC)
        t0 = time.monotonic()
        proc = run_bounded(harness_plan.argv, cwd=harness_plan.cwd, env=env,
                           timeout=4.0 if scenario == "killed" else timeout,
                           stdout_path=stdout, stderr_path=stderr)
        duration = time.monotonic() - t0
    rehearsal = Rehearsal(kind, scenario, settings, root, workspace, proc.exit_code, proc.timed_out, duration,
                          started, stdout, stderr, harness_plan.trajectory, calls, list(harness_plan.argv),
                          workspace_fixed=(workspace / "calc.py").read_text() == CALC_FIXED)
    if parse:
        rehearsal.result = read_outputs(settings, harness_plan, stdout=stdout, stderr=stderr,
                                        stage_started_at=started)
    return rehearsal


def save_fixture(rehearsal: Rehearsal, dest: Path, version: str) -> None:
    """Store a rehearsal's real outputs under ``dest`` (one directory per scenario)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    root = str(rehearsal.root)
    shutil.copy(rehearsal.stdout, dest / "stdout")
    shutil.copy(rehearsal.stderr, dest / "stderr")
    if rehearsal.kind == "codex" and rehearsal.trajectory is not None and rehearsal.trajectory.is_dir():
        rollouts = sorted(rehearsal.trajectory.rglob("rollout-*.jsonl"))
        for rollout in rollouts:
            shutil.copy(rollout, dest / rollout.name)
    elif rehearsal.trajectory is not None and rehearsal.trajectory.is_file():
        shutil.copy(rehearsal.trajectory, dest / "trajectory.json")
    with open(dest / "model_calls.jsonl", "w") as handle:
        for call in rehearsal.calls:
            handle.write(call.model_dump_json() + "\n")
    meta = {
        "harness": rehearsal.kind,
        "version": version,
        "scenario": rehearsal.scenario,
        "settings": rehearsal.settings.settings_record(),
        "argv": [a.replace(root, "$ROOT") for a in rehearsal.argv],
        "root": root,
        "workspace": str(rehearsal.workspace),
        "exit_code": rehearsal.exit_code,
        "timed_out": rehearsal.timed_out,
        "stage_started_at": rehearsal.stage_started_at.isoformat(),
        "duration_s": round(rehearsal.duration_s, 3),
        "workspace_fixed": rehearsal.workspace_fixed,
    }
    (dest / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
