"""``trialhouse regrade`` (issue 30, item 2): the final states of a real run graded again
with a loosened and then a tightened grader, trial by trial, with no agent process
started and no model call; the links, the kept usage and times, the new evaluator's
controls; trials whose final state was not kept listed; the warehouse, ``regrades``,
``compare``, ``summarize`` and a period comparison reading the regraded run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract.call_events import ModelCall
from contract.run_events import CaseValidated, ControlResult, RunStarted
from contract.stage_events import StageStarted
from contract.trial_events import Grading, IntegrityCheck, TrialFinished, TrialSkipped
from runner.eventlog import read_events

PY = sys.executable

# An agent outside the corpus: counts its invocations in MARKER, applies PATCH in the
# build stage and reports a cost, so the regrade can be checked to start none of it.
AGENT = """import json, os, pathlib, subprocess, sys
marker, patch, cost = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:  # the host's marker only without isolation: in a sandbox its directory is not the host's
    with open(marker, "a") as fh:
        fh.write(os.environ["TRIALHOUSE_CASE_ID"] + "\\n")
except OSError:
    pass
if os.environ.get("TRIALHOUSE_STAGE", "build") == "build" and patch != "-":
    subprocess.run(["git", "apply", patch], check=True)
with open(os.environ["TRIALHOUSE_AGENT_EVENTS"], "a") as fh:
    fh.write(json.dumps({"type": "usage", "input_tokens": 1000, "output_tokens": 50, "cost_usd": cost}) + "\\n")
    fh.write(json.dumps({"type": "step"}) + "\\n")
"""
MUL = {"sloppy": "return 6", "almost": "return a * b if b >= 0 else -1", "right": "return a * b"}
CHECKS = {"loose": "calc.mul(2, 3) == 6",
          "strict": "calc.mul(2, 3) == 6 and calc.mul(4, 5) == 20",
          "stricter": "calc.mul(2, 3) == 6 and calc.mul(4, 5) == 20 and calc.mul(3, -2) == -6"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}, timeout=600)


def grader(root: Path, which: str) -> None:
    """Write the target grader: loose, strict or stricter."""
    (root / "graders" / "target_mul.py").write_text(
        "import os, sys\nsys.path.insert(0, os.environ['TRIALHOUSE_WORKSPACE'])\n"
        f"try:\n    import calc\n    ok = {CHECKS[which]}\nexcept Exception:\n    ok = False\n"
        "sys.exit(0 if ok else 1)\n")


def corpus(kit, root: Path, agents: Path, marker: Path, **overrides) -> Path:
    """The tiny corpus with four agents (noop, right, sloppy, almost) and the strict grader."""
    m = kit.make_corpus(root, **overrides)
    agents.mkdir(exist_ok=True)
    (agents / "agent.py").write_text(AGENT)
    base = (root / "patches" / "mul.patch").read_text()
    variants = [{"id": "noop", "agent": {"kind": "command",
                                         "argv": [PY, str(agents / "agent.py"), str(marker), "-", "0.01"]}}]
    for name, body in MUL.items():
        patch = agents / f"{name}.patch"
        patch.write_text(base.replace("+    return a * b", f"+    {body}"))
        variants.append({"id": name, "agent": {"kind": "command", "argv": [
            PY, str(agents / "agent.py"), str(marker), str(patch), "0.25"]}})
    data = json.loads(m.read_text())
    data["variants"] = variants
    data.update(overrides)
    m.write_text(json.dumps(data))
    grader(root, "strict")
    return m


def finished(run: Path) -> dict[str, TrialFinished]:
    return {e.trial_id: e for e in read_events(run / "events.jsonl") if isinstance(e, TrialFinished)}


def outcomes(run: Path) -> dict[str, str]:
    return {t: f.outcome for t, f in finished(run).items()}


@pytest.fixture(params=["bubblewrap"])
def original(request, kit, corpus_root, tmp_path):
    """A real run of the four agents under the strict grader (isolation: the param)."""
    marker = tmp_path / "agent-invocations"
    m = corpus(kit, corpus_root, tmp_path / "agents", marker, isolation={"backend": request.param})
    run = tmp_path / "runs" / "original"
    res = cli("run", "--manifest", str(m), "--output", str(run), "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    assert outcomes(run) == {"mul__noop__r1": "target_failed", "mul__right__r1": "accepted",
                             "mul__sloppy__r1": "target_failed", "mul__almost__r1": "accepted"}
    return m, run, marker


@pytest.mark.parametrize("original", ["none"], indirect=True)  # the agents can write the host marker
def test_regrade_after_loosening_and_tightening_trial_by_trial_without_an_agent(original, corpus_root, tmp_path):
    m, run, marker = original
    invocations = marker.read_text()
    assert invocations.count("mul") == 4
    old = finished(run)
    # loosened: the sloppy agent's state now passes
    grader(corpus_root, "loose")
    loose = tmp_path / "runs" / "loose"
    res = cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(loose), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    assert doc["sentence"] == "regrade changed 1 of 4 outcomes: 1 target_failed → accepted"
    assert outcomes(loose) == {"mul__noop__r1": "target_failed", "mul__right__r1": "accepted",
                               "mul__sloppy__r1": "accepted", "mul__almost__r1": "accepted"}
    # tightened: the almost-right agent's state now fails
    grader(corpus_root, "stricter")
    strict = tmp_path / "runs" / "stricter"
    res = cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(strict))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "regrade changed 1 of 4 outcomes: 1 accepted → target_failed" in res.stdout
    assert "mul__almost__r1: accepted → target_failed" in res.stdout
    assert outcomes(strict) == {"mul__noop__r1": "target_failed", "mul__right__r1": "accepted",
                                "mul__sloppy__r1": "target_failed", "mul__almost__r1": "target_failed"}
    assert marker.read_text() == invocations  # no agent process started by either regrade
    for regraded in (loose, strict):
        events = read_events(regraded / "events.jsonl")
        assert not any(isinstance(e, StageStarted | ModelCall) for e in events)
        head = events[0]
        assert isinstance(head, RunStarted) and head.regrade_of == old["mul__noop__r1"].run_id
        assert head.run_id != head.regrade_of
        assert [v.variant for v in head.variants] == ["noop", "sloppy", "almost", "right"]
        assert head.isolation is not None and head.isolation.backend == "none"
        # the new evaluator's controls ran first
        first_trial = min(e.seq for e in events if e.trial_id is not None)
        controls = [e for e in events if isinstance(e, ControlResult | CaseValidated)]
        assert controls and max(e.seq for e in controls) < first_trial
        (cv,) = [e for e in events if isinstance(e, CaseValidated)]
        assert cv.ok and cv.fingerprint == head.cases[0].fingerprint
        for tid, new in finished(regraded).items():
            was = old[tid]
            link = new.regraded_from
            assert link is not None and (link.run_id, link.trial_id, link.outcome) == (was.run_id, tid, was.outcome)
            assert link.case_fingerprint == was.case_fingerprint != new.case_fingerprint == cv.fingerprint
            assert new.usage == was.usage and new.gateway_usage == was.gateway_usage
            assert (new.duration_s, new.agent_s, new.setup_s, new.attempts) == (
                was.duration_s, was.agent_s, was.setup_s, was.attempts)
            assert new.final_tree == was.final_tree and new.regrade_s is not None and new.regrade_s > 0
        assert all(g.final for g in events if isinstance(g, Grading))
        assert [e.phase for e in events if isinstance(e, IntegrityCheck)] == ["after_grading"] * 4
    assert finished(strict)["mul__almost__r1"].usage.cost_usd == 0.25


def test_a_selection_and_a_final_state_that_was_not_kept(original, corpus_root, tmp_path):
    m, run, _ = original
    grader(corpus_root, "loose")
    # a patch changed after the run no longer rebuilds the recorded tree: listed, never guessed
    patch = run / "trials" / "mul__almost__r1" / "changes.patch"
    patch.write_text(patch.read_text().replace("else -1", "else -2"))
    out = tmp_path / "runs" / "some"
    res = cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(out),
              "--config", "almost", "--config", "sloppy", "--case", "mul", "--no-progress")
    assert res.returncode == 0, res.stderr[-3000:]
    assert outcomes(out) == {"mul__sloppy__r1": "accepted"}
    (skip,) = [e for e in read_events(out / "events.jsonl") if isinstance(e, TrialSkipped)]
    assert skip.trial_id == "mul__almost__r1" and skip.regraded_from is not None
    assert "final state not kept" in skip.reason and "rebuilds" in skip.reason
    assert "mul__almost__r1: final state not kept" in res.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["regrade_of"] == skip.regraded_from.run_id and report["trials_total"] == 2
    bad = cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(tmp_path / "x"),
              "--config", "nobody")
    assert bad.returncode == 2 and "--config nobody: matches no configuration" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "x").exists()


def test_the_warehouse_compares_old_and_new_outcomes_and_reads_each_trial_once(original, corpus_root, tmp_path):
    m, run, _ = original
    grader(corpus_root, "stricter")
    strict = tmp_path / "runs" / "stricter"
    assert cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(strict)).returncode == 0
    wh = tmp_path / "w.duckdb"
    assert cli("ingest", str(run), str(strict), "--warehouse", str(wh)).returncode == 0
    regrade_id = finished(strict)["mul__noop__r1"].run_id
    rows = json.loads(cli("sql", "-w", str(wh), "SELECT trial_id, original_outcome, outcome, regraded_from_run_id "
                                              f"FROM trials WHERE run_id = '{regrade_id}' ORDER BY 1", "--json").stdout)
    assert [(r["trial_id"], r["original_outcome"], r["outcome"]) for r in rows] == [
        ("mul__almost__r1", "accepted", "target_failed"), ("mul__noop__r1", "target_failed", "target_failed"),
        ("mul__right__r1", "accepted", "accepted"), ("mul__sloppy__r1", "target_failed", "target_failed")]
    res = cli("regrades", "-w", str(wh), "--json")
    assert res.returncode == 0, res.stderr
    (one,) = json.loads(res.stdout)["runs"]
    assert one["sentence"].startswith("regrade changed 1 of 4 outcomes: 1 accepted → target_failed")
    assert [(c["trial_id"], c["old"], c["new"]) for c in one["changes"] if c["changed"]] == [
        ("mul__almost__r1", "accepted", "target_failed")]
    text = cli("regrades", "-w", str(wh))
    assert text.returncode == 0, text.stderr
    assert "mul__almost__r1" in text.stdout and "target_failed" in text.stdout
    # every analysis reads each agent trial once: the regrade's grade replaces the original's
    summary = json.loads(cli("summarize", "-w", str(wh), "--json").stdout)
    almost = [r for r in summary["rows"] if r["variant"] == "almost"]
    assert len(almost) == 1 and (almost[0]["valid"], almost[0]["solved"]) == (1, 0)
    both = json.loads(cli("summarize", "-w", str(wh), "--run", json.loads(cli(
        "sql", "-w", str(wh), "SELECT regrade_of FROM runs WHERE regrade_of IS NOT NULL", "--json").stdout)[0]
        ["regrade_of"], "--json").stdout)
    assert [r["solved"] for r in both["rows"] if r["variant"] == "almost"] == [1]  # the original, named
    compared = cli("compare", "-w", str(wh), "--baseline", "right", "--candidate", "almost")
    assert compared.returncode == 0, compared.stderr
    assert "regrade changed 1 of 4 outcomes" in compared.stdout
    out = tmp_path / "rep"
    assert cli("report", "-w", str(wh), "--output", str(out)).returncode == 0
    doc = json.loads((out / "report.json").read_text())
    assert doc["controls"]["regrades"]["runs"][0]["changed"] == 1
    assert "regrade changed 1 of 4 outcomes" in (out / "report.md").read_text()


def test_a_period_comparison_uses_the_regraded_run(original, corpus_root, tmp_path):
    m, run, _ = original
    grader(corpus_root, "stricter")
    strict = tmp_path / "runs" / "stricter"
    assert cli("regrade", "--manifest", str(m), "--from", str(run), "--output", str(strict)).returncode == 0
    later = tmp_path / "runs" / "later"  # this period's run, under the new grader
    assert cli("run", "--manifest", str(m), "--output", str(later), "--no-progress").returncode == 0
    wh = tmp_path / "w.duckdb"
    assert cli("ingest", str(run), str(strict), str(later), "--warehouse", str(wh)).returncode == 0
    started = min(e.ts for e in read_events(later / "events.jsonl") if e.event == "trial_started")
    since = started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    until = started.replace(year=started.year + 1).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = tmp_path / "rep"
    res = cli("report", "-w", str(wh), "--output", str(out), "--since", since, "--until", until,
              "--previous-period", "--baseline", "right")
    assert res.returncode == 0, res.stderr[-3000:]
    period = json.loads((out / "report.json").read_text())["previous_period"]
    assert period["notes"] == []  # one evaluator on both sides: the regraded run, not the original
    rows = {r["variant"]: r for r in period["rows"]}
    assert (rows["almost"]["previous_valid"], rows["almost"]["previous_solved"]) == (1, 0)
    assert (rows["almost"]["current_valid"], rows["almost"]["current_solved"]) == (1, 0)
