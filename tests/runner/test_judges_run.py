"""Judges in real runs: a scripted judge through the gateway, in the sandbox, on read-only
evidence; every broken judge is an inconclusive judgment with the reason; a rubric changed
or removed mid-run makes the trial invalid; a judgment never changes an outcome."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall
from contract.stage_events import Judgment
from contract.trial_events import TrialFinished, TrialStarted
from runner.eventlog import read_events

PY = sys.executable
RUBRIC = "# rubric v1\npass when the change follows the existing pattern\n"
TOOLS_BIN = Path(__file__).resolve().parents[2] / "tools" / "bin"


def judged_corpus(kit, root: Path, variants: list[dict], scripts: dict[str, dict], **overrides) -> Path:
    m = kit.make_corpus(root, variants=variants, **overrides)
    (root / "rubric.md").write_text(RUBRIC)
    for name, doc in scripts.items():
        (root / name).write_text(json.dumps(doc))
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"].append({"id": "fits", "description": "fits the codebase",
                                         "judge": {"rubric": "rubric.md"}})
    m.write_text(json.dumps(data))
    return m


def run(m: Path, out: Path) -> list:
    proc = subprocess.run([PY, "-m", "trialhouse", "run", "--manifest", str(m), "--output", str(out), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return read_events(out / "events.jsonl")


def by_variant(events: list, cls) -> dict[str, object]:
    names = {e.trial_id: e.variant for e in events if isinstance(e, TrialStarted)}
    return {names[e.trial_id]: e for e in events if isinstance(e, cls)}


def answer(verdict: str, *reasons: str, category: str | None = None) -> dict:
    doc = {"verdict": verdict, "reasons": list(reasons) or ["r"], **({"failure_category": category} if category else {})}
    return {"steps": [{"text": json.dumps(doc),
                       "usage": {"input_tokens": 700, "output_tokens": 20}}]}


def test_scripted_judges_are_recorded_and_never_change_the_outcome(kit, corpus_root, tmp_path):
    fixer = kit.agent("patch", str((corpus_root / "patches" / "mul.patch").resolve()))
    variants = [
        {"id": "noop", "agent": kit.agent("noop"),
         "evaluations": {"judge": {"host": "builtin", "script": "pass.json"}}},  # a failure judged "pass"
        {"id": "fixer", "agent": fixer, "evaluations": {"judge": {"host": "builtin", "model": "judge-m",
                                                                  "reasoning_effort": "medium",
                                                                  "script": "fail.json"}}},
    ]
    m = judged_corpus(kit, corpus_root, variants, {"pass.json": answer("pass", "looks right"),
                                                   "fail.json": answer("fail", "parallel mechanism",
                                                                       category="implementation")})
    events = run(m, tmp_path / "out")
    fin, judged = by_variant(events, TrialFinished), by_variant(events, Judgment)
    assert (fin["noop"].outcome, fin["fixer"].outcome) == ("target_failed", "accepted")
    assert (judged["noop"].verdict, judged["noop"].reasons) == ("passed", ["looks right"])
    assert (judged["fixer"].verdict, judged["fixer"].rationale) == ("failed", "parallel mechanism")
    assert (judged["fixer"].failure_category, judged["noop"].failure_category) == ("implementation", None)
    j = judged["fixer"]
    assert (j.judge.host, j.judge.provider, j.judge.model, j.judge.reasoning_effort, j.judge.source) == (
        "builtin", "anthropic", "judge-m", "medium", "variant")
    import hashlib

    assert j.rubric == "rubric.md" and j.rubric_sha256 == hashlib.sha256(RUBRIC.encode()).hexdigest()
    assert j.advisory and j.model_calls == 1 and j.error is None
    calls = [e for e in events if isinstance(e, ModelCall) and e.stage == "judge.fits"]
    assert len(calls) == 2 and {c.input_tokens for c in calls} == {700}
    assert all(c.side_request for c in calls)  # the judge offered no tools
    # the trial's own usage is the agent's: judge calls are not added to it
    assert fin["fixer"].gateway_usage is None


def test_judge_defaults_follow_the_host_and_the_config_id_ignores_the_judge(kit, corpus_root, tmp_path):
    from runner.fingerprint import case_fingerprint
    from runner.judges.config import resolve
    from runner.manifest import Manifest, config_id

    m = judged_corpus(kit, corpus_root, [{"id": "noop", "agent": kit.agent("noop")}], {})
    data = json.loads(m.read_text())
    base = Manifest.model_validate(data)
    info = resolve(base.variants[0], base.cases[0].criteria[-1]).info
    assert (info.host, info.provider, info.model, info.reasoning_effort, info.source) == (
        "codex", "openai", "gpt-5.1-codex-mini", "low", "default")
    data["variants"][0]["evaluations"] = {"judge": {"host": "claude-code", "reasoning_effort": "high"}}
    other = Manifest.model_validate(data)
    assert config_id(base.variants[0], {}) == config_id(other.variants[0], {})
    fp = [case_fingerprint(x, x.cases[0], {}, "c0ffee") for x in (base, other)]
    assert fp[0] != fp[1]  # the evaluator changed
    assert resolve(other.variants[0]).info.model == "claude-haiku-4-5"


BROKEN = {
    "slow": "import time; time.sleep(30)",
    "prose": "print('I would say it passes')",
    "claims": "import json; print(json.dumps({'verdict': 'pass', 'reasons': ['fixed'], 'edited_files': ['calc.py']}))",
    "crash": "import sys; sys.exit(3)",
}
WRITES = ("import json, os, sys\ntry:\n    open(os.path.join(sys.argv[1], 'diff.patch'), 'w').write('')\n"
          "except OSError:\n    print(json.dumps({'verdict': 'fail', 'reasons': ['read-only']})); sys.exit(0)\n"
          "print(json.dumps({'verdict': 'pass', 'reasons': ['wrote the evidence']}))")


def test_broken_judges_are_inconclusive_with_the_reason(kit, corpus_root, tmp_path):
    variants = []
    for name, code in BROKEN.items():
        (corpus_root / f"{name}.py").write_text(code)
        variants.append({"id": name, "agent": kit.agent("noop"), "evaluations": {"judge": {
            "host": "command", "argv": [PY, f"{{inputs}}/{name}.py", "{evidence}"], "timeout_seconds": 3}}})
    variants.append({"id": "tooluser", "agent": kit.agent("noop"),
                     "evaluations": {"judge": {"host": "builtin", "script": "tools.json"}}})
    tools = {"steps": [{"tool_calls": [{"name": "Edit", "input": {"file_path": "calc.py"}}]},
                       {"text": json.dumps({"verdict": "pass", "reasons": ["done"]})}]}
    m = judged_corpus(kit, corpus_root, variants, {"tools.json": tools})
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"][-1]["files"] = [f"{n}.py" for n in BROKEN]  # snapshotted as inputs
    m.write_text(json.dumps(data))
    # a builtin judge offers no tools: the scripted step asking for one answers the side request
    # with the last step, so make the side answer ask for a tool too
    tools["side"] = {"tool_calls": [{"name": "Edit", "input": {"file_path": "calc.py"}}]}
    (corpus_root / "tools.json").write_text(json.dumps(tools))
    events = run(m, tmp_path / "out")
    fin, judged = by_variant(events, TrialFinished), by_variant(events, Judgment)
    assert {f.outcome for f in fin.values()} == {"target_failed"}  # as without judges
    assert all(j.verdict == "inconclusive" and j.abstained for j in judged.values()), {
        k: (j.verdict, j.error) for k, j in judged.items()}
    assert "timed out after 3s" in judged["slow"].error
    assert "not JSON" in judged["prose"].error
    assert "claims to have edited files (calc.py)" in judged["claims"].error
    assert "exited 3" in judged["crash"].error
    assert "asked for tools (Edit)" in judged["tooluser"].error


def test_writes_to_the_evidence_are_refused_by_the_sandbox(kit, corpus_root, tmp_path):
    (corpus_root / "writes.py").write_text(WRITES)
    variants = [{"id": "w", "agent": kit.agent("noop"), "evaluations": {"judge": {
        "host": "command", "argv": [PY, "{inputs}/writes.py", "{evidence}"]}}}]
    m = judged_corpus(kit, corpus_root, variants, {})
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"][-1]["files"] = ["writes.py"]
    m.write_text(json.dumps(data))
    events = run(m, tmp_path / "out")
    (j,) = [e for e in events if isinstance(e, Judgment)]
    assert (j.verdict, j.reasons) == ("failed", ["read-only"])  # the write failed: evidence is read-only


@pytest.mark.parametrize("change", ["edit", "remove"])
def test_a_rubric_changed_or_removed_mid_run_makes_the_trial_invalid(kit, corpus_root, tmp_path, change):
    rubric = (corpus_root / "rubric.md").resolve()
    code = (f"open({str(rubric)!r}, 'a').write('loosened')" if change == "edit"
            else f"import os; os.remove({str(rubric)!r})")
    # an unisolated agent stands in for an operator editing the rubric during the run
    variants = [{"id": "editor", "agent": {"kind": "command", "argv": [PY, "-c", code]},
                 "evaluations": {"judge": {"host": "builtin", "script": "pass.json"}}}]
    m = judged_corpus(kit, corpus_root, variants, {"pass.json": answer("pass")}, isolation={"backend": "none"})
    events = run(m, tmp_path / "out")
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "invalid"
    word = "changed" if change == "edit" else "missing"
    assert f"integrity violated while judging: rubric rubric.md (criterion fits) is {word}" in fin.reason \
        or f"rubric rubric.md (criterion fits) {word}" in fin.reason
    (j,) = [e for e in events if isinstance(e, Judgment)]
    assert j.verdict == "inconclusive" and word in j.error


@pytest.mark.parametrize(("host", "binary", "model", "api"), [
    ("claude-code", "claude", "claude-haiku-4-5", "messages"), ("codex", "codex", "gpt-5.1-codex-mini", "responses")])
def test_a_real_cli_judge_against_the_scripted_gateway(kit, corpus_root, tmp_path, host, binary, model, api):
    if not (TOOLS_BIN / binary).exists():
        pytest.skip(f"make tools installs the pinned {host} CLI")
    fixer = kit.agent("patch", str((corpus_root / "patches" / "mul.patch").resolve()))
    variants = [{"id": "fixer", "agent": fixer, "evaluations": {"judge": {
        "host": host, "binary": str(TOOLS_BIN / binary), "model": model, "script": "judge.json",
        "timeout_seconds": 120}}}]
    m = judged_corpus(kit, corpus_root, variants, {"judge.json": answer("fail", "a second validator")})
    events = run(m, tmp_path / "out")
    (j,) = [e for e in events if isinstance(e, Judgment)]
    assert (j.verdict, j.reasons, j.error) == ("failed", ["a second validator"], None)
    assert (j.judge.host, j.judge.model, j.judge.reasoning_effort) == (host, model, "low") and j.model_calls >= 1
    calls = [e for e in events if isinstance(e, ModelCall) and e.stage == "judge.fits"]
    assert calls and all(c.api == api and c.status == 200 and not c.tool_calls for c in calls)
    (fin,) = [e for e in events if isinstance(e, TrialFinished)]
    assert fin.outcome == "accepted"  # a real judge's "fail" is advisory


def test_validate_names_a_missing_judge_cli_and_a_broken_judge_script(kit, corpus_root):
    variants = [{"id": "a", "agent": kit.agent("noop"),
                 "evaluations": {"judge": {"host": "claude-code", "binary": "/nonexistent/claude"}}},
                {"id": "b", "agent": kit.agent("noop"), "evaluations": {"judge": {"host": "builtin",
                                                                                  "script": "bad.json"}}}]
    m = judged_corpus(kit, corpus_root, variants, {"bad.json": {"steps": []}})
    proc = subprocess.run([PY, "-m", "trialhouse", "validate", "--manifest", str(m)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    out = proc.stdout + proc.stderr
    assert "variants[0].evaluations.judge.binary: claude-code: '/nonexistent/claude' is not installed" in out
    assert "variants[1].evaluations.judge.script: bad.json: not a gateway script" in out
