"""Issue 12/13, the report side: the report names each run's isolation and integrity, says
"NOT ISOLATED" and "TAMPERED" where they apply, lists invalidated runs as excluded with
their reason, counts unscored cases with their reasons, and never puts an ineligible
configuration on the front or in a headline without saying INELIGIBLE."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from analysis.report import write_report
from warehouse.runs import invalidate_run

A, R = "accepted", "target_failed"
CASES = [f"t{i}" for i in range(8)]


def _trials(run: str, spec: dict[str, tuple[str, dict[str, list[str]]]]) -> list[dict]:
    out = []
    for cfg, (kind, cases) in spec.items():
        for case, outcomes in cases.items():
            for rep, o in enumerate(outcomes, 1):
                out.append({"config_id": cfg, "case_id": case, "rep": rep, "outcome": o,
                            "agent_kind": kind, "trial_id": f"{run}-{cfg}-{case}-{rep}"})
    return out


def _build(tmp_path, write_run, t0):
    db = tmp_path / "w" / "t.duckdb"
    main = _trials("r1", {"null": ("null", {c: [R] for c in CASES}),
                          "base": ("command", {c: [A if i % 2 else R] for i, c in enumerate(CASES)}),
                          "leaker": ("command", {c: [A] for c in CASES})})
    for t in main:
        if t["config_id"] == "leaker":
            t["cost_usd"] = 0.001
            t["secrets_leaked"] = 1 if t["case_id"] == "t2" else 0
    cases = [{"case_id": c, "scored": c != "t7", "fingerprint": "fp1",
              "unscored_reason": "flaky criterion target-tests (3 passed, 2 failed)"
              if c == "t7" else None} for c in CASES]
    write_run(db, main, run_id="r1", cases=cases, started=t0,
              run={"manifest_id": "m", "isolated": False, "isolation_backend": "none", "integrity": "intact",
                   "executor": "local"})
    write_run(db, _trials("r2", {"base": ("command", {"t0": [A]})}), run_id="r2",
              started=t0 + timedelta(hours=1),
              run={"manifest_id": "m", "isolated": True, "isolation_backend": "bubblewrap", "network": False,
                   "executor": "ray", "executor_address": "10.0.0.5:6379", "ray_version": "2.60.0",
                   "integrity": "tampered or damaged: 1 line(s) refused"})
    write_run(db, _trials("r3", {"base": ("command", {c: [A] for c in CASES})}), run_id="r3",
              started=t0 + timedelta(hours=2), run={"manifest_id": "m"})
    invalidate_run(db, "r3", "grader bug found in review")
    return db


def test_the_report_shows_isolation_integrity_invalidated_runs_unscored_cases_and_eligibility(
        tmp_path, write_run):
    db = _build(tmp_path, write_run, datetime(2026, 2, 1, tzinfo=UTC))
    paths = write_report(db, tmp_path / "report", baseline="base")
    doc = json.loads(paths.json.read_text("utf-8"))
    md = paths.markdown.read_text("utf-8")
    runs = {r["run_id"]: r for r in doc["controls"]["runs"]}
    # The invalidated run is excluded from every number and listed with its reason.
    assert set(runs) == {"r1", "r2"}
    assert [(r["run_id"], r["reason"]) for r in doc["controls"]["invalidated_runs"]] == [
        ("r3", "grader bug found in review")]
    assert "grader bug found in review" in md and "Invalidated runs (excluded)" in md
    # Isolation per run; "NOT ISOLATED" prominently (headline and controls).
    assert runs["r1"]["isolated"] is False and runs["r2"]["isolation_backend"] == "bubblewrap"
    head = md[:md.index("## Controls")] if "## Controls" in md else md[:2000]
    assert "NOT ISOLATED: run r1" in head and "TAMPERED: run r2" in head
    assert "bubblewrap, network off" in md
    # Where the trials ran, per run, beside the isolation; r3 predates executors.
    assert (runs["r1"]["executor"], runs["r2"]["executor"]) == ("local", "ray")
    assert "| ray 2.60.0, at 10.0.0.5:6379 |" in md and "| local |" in md
    # Unscored cases: counted, with the reason.
    assert doc["controls"]["unscored"]["count"] == 1
    assert "flaky criterion target-tests (3 passed, 2 failed)" in md
    # The leaker (cheapest, best) is ineligible: never on the front, flagged in the headline.
    elig = {e["config_id"]: e for e in doc["controls"]["eligibility"]}
    assert elig["leaker"]["eligible"] is False and elig["null"]["role"] == "baseline"
    # r2 is tampered: base ran there, so base is ineligible too.
    assert any("r2" in why for why in elig["base"]["reasons"])
    front = {r["config_id"]: r for r in doc["pareto"]["cost_per_trial"]}
    assert front["leaker"]["on_front"] is False and front["leaker"]["role"] == "ineligible"
    kinds = {(b["kind"], b["config_id"]) for b in doc["blockers"]}
    assert {("secrets_leaked", "leaker"), ("integrity", "base")} <= kinds
    assert not any(b["config_id"] == "null" for b in doc["blockers"])
    (line,) = doc["headline"]["lines"]
    assert "INELIGIBLE, not a candidate to ship" in line["sentence"]


def test_network_open_runs_and_in_process_graders_are_labelled_in_summarize_and_the_report(
        tmp_path, write_run):
    """Issue 28: a run whose agents had the host's network says "network open" wherever its
    results appear, and a criterion declared in_process is named "in-process"."""
    import subprocess
    import sys

    from analysis.summary import summarize
    from warehouse import db as warehouse_db

    db = tmp_path / "w" / "t.duckdb"
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    crits = [{"case_id": c, "criterion_id": "target", "layer": "target", "kind": "command",
              "in_process": c == "t1"} for c in CASES]
    for run, policy, hours in (("open-run", "open", 0), ("gated-run", "gateway", 1)):
        spec = {"base": ("command", {c: [A if i % 2 else R] for i, c in enumerate(CASES)}),
                "cand": ("command", {c: [A] for c in CASES})}
        write_run(db, _trials(run, spec), run_id=run, started=t0 + timedelta(hours=hours),
                  run={"manifest_id": "m", "isolated": True, "isolation_backend": "bubblewrap",
                       "network": policy == "open", "network_policy": policy, "integrity": "intact"},
                  extra_tables={"criteria": crits if run == "gated-run" else []})
    con = warehouse_db.open(db, read_only=True)
    try:
        notes = summarize(con).warnings
    finally:
        con.close()
    assert any(n.startswith("NETWORK OPEN: run open-run") for n in notes), notes
    assert not any("NETWORK OPEN: run gated-run" in n for n in notes)
    assert any(n.startswith("IN-PROCESS graders in run gated-run: t1/target:") for n in notes), notes
    paths = write_report(db, tmp_path / "report", baseline="base")
    md = paths.markdown.read_text("utf-8")
    assert "bubblewrap, network open" in md and "bubblewrap, model gateway only" in md
    assert "NETWORK OPEN: run open-run" in md[:md.index("## Controls")]
    assert "IN-PROCESS graders in run gated-run: t1/target" in md
    cli = json.loads(subprocess.run([sys.executable, "-m", "trialhouse", "summarize", "--warehouse", str(db),
                                     "--json"], capture_output=True, text=True, check=True).stdout)
    assert any("NETWORK OPEN: run open-run" in w for w in cli["warnings"])
