"""Visible and hidden checks (docs/runner.md, "Visible and hidden checks"): a real command agent
in the real sandbox runs the visible check (recorded as trajectory steps) and cannot read the
hidden one; ``validate`` refuses a visible check that would show a hidden grader."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from contract.call_events import TrajectoryStep
from contract.run_events import RunStarted
from contract.trial_events import Grading, TrialFinished
from runner.eventlog import read_events
from runner.fingerprint import case_fingerprint
from runner.manifest import Manifest
from runner.run import run_trials
from runner.validate import validate_manifest

VISIBLE_GRADER = """import os, sys
token = sys.stdin.readline().strip()
sys.path.insert(0, os.environ["TRIALHOUSE_WORKSPACE"])
try:
    import calc
    ok = hasattr(calc, "mul")
except Exception:
    ok = False
if ok:
    with open(os.environ["TRIALHOUSE_RESULT_FILE"], "w") as fh:
        fh.write(token)
print("mul is there" if ok else "no calc.mul yet")
sys.exit(0 if ok else 1)
"""

CHECKING_AGENT = """import json, os, subprocess, sys
events, checks = os.environ["TRIALHOUSE_AGENT_EVENTS"], os.environ.get("TRIALHOUSE_CHECKS", "")
def log(obj):
    with open(events, "a") as fh:
        fh.write(json.dumps(obj) + "\\n")
def run_checks():
    done = subprocess.run([sys.executable, os.path.join(checks, "run_check.py")], capture_output=True, text=True)
    log({"type": "tool_call", "name": "bash", "exit_code": done.returncode,
         "args": {"command": 'python3 "$TRIALHOUSE_CHECKS/run_check.py"'}})
    return done.stdout
report = {"checks_dir": sorted(os.path.relpath(os.path.join(d, f), checks)
                               for d, _, fs in os.walk(checks) for f in fs)}
report["before"] = run_checks()
subprocess.run(["git", "apply", sys.argv[1]], check=True)
report["after"] = run_checks()
report["hidden"] = {}
for path in HIDDEN:  # named in the script, not its argv: argv paths are shown to the agent
    try:
        with open(path) as fh:
            report["hidden"][path] = "READ " + fh.read(40)
    except OSError as exc:
        report["hidden"][path] = type(exc).__name__
print(json.dumps(report))
"""


def _corpus(kit, root: Path, agent_argv: list[str] | None = None) -> Path:
    m = kit.make_corpus(root, token=True, variants=[{"id": "checker", "agent": {"kind": "command",
                                                                                "argv": agent_argv or ["true"]}}])
    (root / "graders" / "visible_mul.py").write_text(VISIBLE_GRADER)
    doc = json.loads(m.read_text())
    doc["cases"][0]["criteria"].append({
        "id": "mul_exists", "description": "calc.mul exists", "layer": "target", "visible": True,
        "command": [sys.executable, "{inputs}/graders/visible_mul.py"], "success_token": True})
    m.write_text(json.dumps(doc, indent=2))
    return m


def test_the_agent_runs_the_visible_check_and_cannot_read_the_hidden_one(kit, corpus_root, tmp_path):
    out = tmp_path / "out"
    script = tmp_path / "checking_agent.py"
    hidden = [str((corpus_root / "graders" / "target_mul.py").resolve()),
              str(out / "inputs" / "graders" / "target_mul.py")]
    script.write_text(f"HIDDEN = {hidden!r}\n" + CHECKING_AGENT)
    patch = str((corpus_root / "patches" / "mul.patch").resolve())
    m = _corpus(kit, corpus_root, [sys.executable, str(script), patch])
    res = run_trials(m, out, progress=False)
    events = read_events(res.events_path)
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "accepted"
    tid = fin.trial_id
    report = json.loads((out / "trials" / tid / "logs" / "a1-build.stdout").read_text())
    # the stage's $TRIALHOUSE_CHECKS: the visible check's script and the runner, nothing hidden
    assert report["checks_dir"] == ["checks.json", "graders/visible_mul.py", "run_check.py"]
    assert report["before"].splitlines()[0] == "mul_exists: failed"
    assert report["after"].splitlines()[0] == "mul_exists: passed"
    # the hidden grader, in the manifest's directory and in the run's input copy: out of reach
    assert report["hidden"] == dict.fromkeys(hidden, "FileNotFoundError")
    # the two runs are in the trajectory, with their exit codes
    runs = [e for e in events if isinstance(e, TrajectoryStep) and e.trial_id == tid and e.tool == "bash"]
    assert [(e.command, e.exit_code) for e in runs] == [('python3 "$TRIALHOUSE_CHECKS/run_check.py"', 1),
                                                       ('python3 "$TRIALHOUSE_CHECKS/run_check.py"', 0)]
    # graded like any criterion; recorded as visible in the run header
    graded = {e.criterion_id: e.verdict for e in events if isinstance(e, Grading) and e.trial_id == tid}
    assert graded == {"mul_works": "passed", "add_works": "passed", "mul_exists": "passed"}
    head = next(e for e in events if isinstance(e, RunStarted))
    assert {c.criterion_id: c.visible for c in head.cases[0].criteria} == {
        "mul_works": False, "add_works": False, "mul_exists": True}
    prompt = (out / "trials" / tid / "prompts" / "a1-build.md").read_text()
    assert "## Checks you can run" in prompt and "`mul_exists` (target): calc.mul exists" in prompt
    assert "mul_works" not in prompt


def test_a_case_without_visible_checks_gets_no_checks_directory(kit, corpus_root, tmp_path):
    script = tmp_path / "env_agent.py"
    script.write_text("import os\nprint(repr(os.environ.get('TRIALHOUSE_CHECKS')))\n")
    m = kit.make_corpus(corpus_root, variants=[{"id": "v", "agent": {"kind": "command",
                                                                     "argv": [sys.executable, str(script)]}}])
    res = run_trials(m, tmp_path / "out", progress=False)
    (fin,) = [e for e in read_events(res.events_path) if isinstance(e, TrialFinished)]
    assert (tmp_path / "out" / "trials" / fin.trial_id / "logs" / "a1-build.stdout").read_text() == "None\n"
    assert "Checks you can run" not in (tmp_path / "out" / "trials" / fin.trial_id / "prompts" / "a1-build.md").read_text()


def test_validate_refuses_a_visible_check_that_shows_a_hidden_grader(kit, corpus_root):
    m = _corpus(kit, corpus_root)
    doc = json.loads(m.read_text())
    criteria = doc["cases"][0]["criteria"]
    criteria[2]["command"] = [sys.executable, "{inputs}/graders/target_mul.py"]  # the hidden target's script
    criteria.append({"id": "judged", "judge": {"rubric": "graders/visible_mul.py"}, "visible": True})
    m.write_text(json.dumps(doc))
    assert [str(p) for p in validate_manifest(m).problems] == [
        "cases[0].criteria[3]: visible: only a command criterion can be run by the agent"]
    criteria.pop()
    m.write_text(json.dumps(doc))
    assert [str(p) for p in validate_manifest(m).problems] == [
        "cases[0].criteria[2].visible: would show the agent graders/target_mul.py, which the hidden criterion "
        "mul/mul_works runs; give the visible check a script of its own"]


def test_making_a_check_visible_is_a_new_evaluator_and_hidden_ones_keep_their_fingerprint(kit, corpus_root):
    m = _corpus(kit, corpus_root)
    doc = json.loads(m.read_text())
    hashes = {"graders/visible_mul.py": "v", "graders/target_mul.py": "t", "graders/regress_add.py": "r",
              "patches/mul.patch": "p"}

    def fingerprint(d: dict) -> str:
        manifest = Manifest.model_validate(d)
        return case_fingerprint(manifest, manifest.cases[0], hashes, "c" * 40)

    visible = fingerprint(doc)
    doc["cases"][0]["criteria"][2]["visible"] = False
    hidden = fingerprint(doc)
    del doc["cases"][0]["criteria"][2]["visible"]
    assert visible != hidden == fingerprint(doc)


# -- the attack: everything the agent can reach, searched for every hidden check ------------

PROBING_AGENT = """import json, os, subprocess, sys
from pathlib import Path
here = Path(__file__).resolve()
mine = {here, Path(sys.argv[1]).resolve()}
markers = json.loads(Path(sys.argv[1]).read_text())
checks = Path(os.environ["TRIALHOUSE_CHECKS"])
SKIP = ("/proc", "/sys", "/dev", "/usr", "/etc", sys.base_prefix, sys.prefix)
found = {name: [] for name in markers}
for base, dirs, files in os.walk("/"):
    if base.startswith(SKIP):
        dirs[:] = []
        continue
    for f in files:
        path = Path(base) / f
        if path in mine:
            continue
        try:
            text = path.read_text(errors="replace") if path.stat().st_size < 256 * 1024 else ""
        except OSError:
            continue
        for name, marker in markers.items():
            if marker in text:
                found[name].append(str(path))
writes = {}
for rel in ("graders/visible_mul.py", "checks.json", "run_check.py", "planted.py"):
    try:
        (checks / rel).write_text("import sys\\nsys.exit(0)\\n")
        writes[rel] = "WROTE"
    except OSError as exc:
        writes[rel] = type(exc).__name__
ran = subprocess.run([sys.executable, str(checks / "run_check.py")], capture_output=True, text=True)
print(json.dumps({"found": found, "checks": str(checks), "writes": writes, "ran": ran.stdout,
                  "exit": ran.returncode}))
"""


def test_the_agent_reaches_the_visible_check_and_no_hidden_one_anywhere(kit, corpus_root, tmp_path):
    """Every file the agent's sandbox can read is searched for a random marker planted in each
    hidden grader (the case's own, the drawn pool criteria, the pool criteria not drawn) and in
    the visible one: only the visible marker is found, and only under ``$TRIALHOUSE_CHECKS``,
    which the agent cannot write to; its runs use the runner's copy. The visible marker is
    the probe's own control: the same search that finds it finds nothing hidden."""
    import secrets

    m = _corpus(kit, corpus_root)
    doc = json.loads(m.read_text())
    pool = ["pool-a", "pool-b", "pool-c", "pool-d"]
    for name in pool:
        (corpus_root / "graders" / f"{name}.py").write_text("import sys\nsys.exit(0)\n")
    doc["cases"][0]["hidden_pool"] = {"pick": 2, "criteria": [
        {"id": name, "layer": "regression", "command": [sys.executable, f"{{inputs}}/graders/{name}.py"]}
        for name in pool]}
    doc["rotation"] = {"seed": 11}
    markers = {}
    for name in ("target_mul", "regress_add", "visible_mul", *pool):
        markers[name] = f"marker-{secrets.token_hex(12)}"
        grader = corpus_root / "graders" / f"{name}.py"
        grader.write_text(grader.read_text() + f"# {markers[name]}\n")
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "markers.json").write_text(json.dumps(markers))
    (agent_dir / "probe.py").write_text(PROBING_AGENT)
    doc["variants"][0]["agent"]["argv"] = [sys.executable, str(agent_dir / "probe.py"),
                                            str(agent_dir / "markers.json")]
    m.write_text(json.dumps(doc, indent=2))
    out = tmp_path / "out"
    events = read_events(run_trials(m, out, progress=False).events_path)
    head = next(e for e in events if isinstance(e, RunStarted))
    assert head.rotation is not None
    drawn = head.rotation.chosen["mul"]
    assert len(drawn) == 2 and set(drawn) < set(pool)  # both drawn and undrawn pool criteria exist
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    report = json.loads((out / "trials" / fin.trial_id / "logs" / "a1-build.stdout").read_text())
    found = report["found"]
    assert found.pop("visible_mul") == [f"{report['checks']}/graders/visible_mul.py"]
    assert found == dict.fromkeys(["target_mul", "regress_add", *pool], [])  # no hidden grader, anywhere
    # read-only: the agent cannot replace the visible check (or add one) to pass it
    assert set(report["writes"]) == {"graders/visible_mul.py", "checks.json", "run_check.py", "planted.py"}
    assert set(report["writes"].values()) <= {"OSError", "PermissionError"}, report["writes"]
    assert (report["ran"].splitlines()[0], report["exit"]) == ("mul_exists: failed", 1)
    # the runner grades the drawn hidden checks and the visible one, never the undrawn
    graded = {e.criterion_id: e.verdict for e in events if isinstance(e, Grading) and e.trial_id == fin.trial_id}
    assert graded == {"mul_works": "failed", "add_works": "passed", "mul_exists": "failed",
                      **dict.fromkeys(drawn, "passed")}
    assert fin.outcome == "target_failed"
