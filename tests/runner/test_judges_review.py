"""calibrate-judge, review import, review summary and inspect-queue on a real run in a real
warehouse: located messages for bad input, calibration status that goes stale, agreement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

from warehouse import db

PY = sys.executable
RULE = ("import json, sys\nd = open(sys.argv[1] + '/diff.patch').read()\n"
        "print(json.dumps({'verdict': 'fail' if 'print(' in d else ('pass' if d.strip() else 'inconclusive'),"
        " 'reasons': ['rule']}))\n")
GRID = "id: grid\nversion: 2\nreason_codes: [grader_too_lenient, grader_too_strict]\n" \
       "items:\n  pattern: [follows-existing-pattern, creates-parallel-mechanism]\n"


def th(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([PY, "-m", "trialhouse", *args], capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc


def build(kit, root: Path, tmp: Path) -> tuple[Path, Path]:
    fixer = kit.agent("patch", str((root / "patches" / "mul.patch").resolve()))
    judge = {"judge": {"host": "command", "argv": [PY, "{inputs}/rule.py", "{evidence}"], "timeout_seconds": 20}}
    m = kit.make_corpus(root, variants=[{"id": "noop", "agent": kit.agent("noop"), "evaluations": judge},
                                        {"id": "fixer", "agent": fixer, "evaluations": judge}], repetitions=2)
    (root / "rule.py").write_text(RULE)
    (root / "rubric.md").write_text("# v1\n")
    data = json.loads(m.read_text())
    data["cases"][0]["criteria"].append({"id": "fits", "judge": {"rubric": "rubric.md"}, "files": ["rule.py"]})
    m.write_text(json.dumps(data))
    th("run", "--manifest", str(m), "--output", str(tmp / "run"))
    wh = tmp / "wh.duckdb"
    th("ingest", str(tmp / "run"), "--warehouse", str(wh))
    return m, wh


def dataset(path: Path, examples: list[tuple[str, str, str]]) -> Path:
    path.write_text(json.dumps({"examples": [{"id": i, "label": lab, "evidence": {"diff": d}}
                                             for i, d, lab in examples]}))
    return path


def status(wh: Path) -> list[tuple]:
    from analysis.judges import judgment_status

    con = db.open(wh, read_only=True)
    try:
        return judgment_status(con).select("trial_id", "verdict", "calibration", "kappa").rows()
    finally:
        con.close()


def test_calibration_review_and_queue(kit, corpus_root, tmp_path):
    m, wh = build(kit, corpus_root, tmp_path)
    assert {r[2] for r in status(wh)} == {"uncalibrated"}
    examples = [("a", "+x = 1\n", "pass"), ("b", "+print(x)\n", "fail"), ("c", "+y = 2\n", "pass"),
                ("d", "+print(y)\n", "pass"), ("e", "", "fail"), ("f", "+z = print\n", "fail")]
    ds = dataset(tmp_path / "d.json", examples)
    out = th("calibrate-judge", "--manifest", str(m), "--rubric", "rubric.md", "--dataset", str(ds),
             "--variant", "fixer", "-w", str(wh), "--json")
    doc = json.loads(out.stdout)
    # judge: a pass, b fail, c pass, d fail, e inconclusive, f pass (no "print(")
    assert (doc["examples"], doc["abstained"]) == (6, 1)
    assert doc["agreement"] == 3 / 5
    assert {d["example_id"] for d in doc["disagreements"]} == {"d", "e", "f"}
    assert json.loads(doc["confusion_json"])["fail"] == {"pass": 1, "fail": 1, "inconclusive": 1}
    rows = status(wh)
    assert {r[2] for r in rows} == {"calibrated"} and rows[0][3] == doc["kappa"]
    # the rubric changes: the next run's judgments are stale (calibrated for another version)
    (corpus_root / "rubric.md").write_text("# v2, stricter\n")
    th("run", "--manifest", str(m), "--output", str(tmp_path / "run2"))
    th("ingest", str(tmp_path / "run2"), "--warehouse", str(wh))
    assert sorted({r[2] for r in status(wh)}) == ["calibrated", "stale"]
    th("calibrate-judge", "--manifest", str(m), "--rubric", "rubric.md", "--dataset", str(ds), "--variant", "fixer",
       "-w", str(wh))
    assert {r[2] for r in status(wh)} == {"calibrated"}

    # reviews: the grader accepted fixer's trials and rejected noop's
    (tmp_path / "grid.yaml").write_text(GRID)
    good = tmp_path / "reviews.csv"
    run1 = json.loads((tmp_path / "run" / "report.json").read_text())["run_id"]
    good.write_text("trial_id,run_id,reviewer,decision,reason_code,minutes,grid.pattern,failure_category\n"
                    f"mul__fixer__r1,{run1},alice,accept,,4,follows-existing-pattern,\n"
                    f"mul__fixer__r2,{run1},bob,reject,grader_too_lenient,10,creates-parallel-mechanism,implementation\n"
                    f"mul__noop__r1,{run1},alice,reject,,1,,task_interpretation\n"
                    f"mul__noop__r2,{run1},bob,reject,,2,,\n")
    th("review", "import", str(good), "--rubric", str(tmp_path / "grid.yaml"), "-w", str(wh))
    summary = json.loads(th("review", "summary", "-w", str(wh), "--json").stdout)
    agree = {r["config_id"]: r for r in summary["agreement"]}
    assert sorted((r["reviewed"], r["disagreements"], r["disagreeing_trials"]) for r in agree.values()) == [
        (2, 0, ""), (2, 1, "mul__fixer__r2")]
    minutes = [r for r in summary["minutes"] if r["accepted_by_review"]]
    assert [(r["accepted_by_review"], r["minutes_median"], r["minutes_known"]) for r in minutes] == [(1, 4.0, 2)]
    cats = {(r["category"], r["assigned_by"]) for r in summary["categories"]}
    assert cats == {("implementation", "reviewer:bob"), ("task_interpretation", "reviewer:alice")}
    weekly = json.loads(th("review", "summary", "-w", str(wh), "--over", "week", "--json").stdout)["agreement"]
    assert sorted((r["reviewed"], r["disagreements"]) for r in weekly) == [(2, 0), (2, 1)]
    assert all(len(r["period"]) == 10 for r in weekly)  # the week's first day, e.g. 2026-11-30

    queue = json.loads(th("inspect-queue", "-w", str(wh), "--run", run1, "--runs-root", str(tmp_path / "run"),
                          "--json").stdout)
    kinds = {(q["kind"], q["trial_id"]) for q in queue}
    assert ("review_disagreement", "mul__fixer__r2") in kinds
    assert ("judge_abstained", "mul__noop__r1") in kinds  # noop's diff is empty: the rule judge abstains
    assert all(q["evidence"] == str(tmp_path / "run" / "trials" / q["trial_id"]) for q in queue if q["trial_id"])


def test_bad_review_rows_are_quarantined_with_their_line(kit, corpus_root, tmp_path):
    _m, wh = build(kit, corpus_root, tmp_path)
    (tmp_path / "grid.yaml").write_text(GRID)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps(r) for r in [
        {"trial_id": "mul__fixer__r1", "reviewer": "alice", "decision": "accept", "minutes": 3},
        {"trial_id": "nope__x__r1", "reviewer": "alice", "decision": "accept"},
        {"trial_id": "mul__fixer__r2", "reviewer": "bob", "decision": "reject", "minutes": 2},
        {"trial_id": "mul__noop__r1", "reviewer": "bob", "decision": "reject", "minutes": -1},
        {"trial_id": "mul__noop__r2", "reviewer": "bob", "decision": "reject", "grid": {"pattern": "meh"}},
    ]) + "\nnot json\n")
    proc = th("review", "import", str(bad), "--rubric", str(tmp_path / "grid.yaml"), "-w", str(wh), ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    con = duckdb.connect()
    con.close()
    c = db.open(wh, read_only=True)
    try:
        q = dict(c.execute("SELECT line, reason FROM quarantine WHERE source_file = ? ORDER BY line",
                           [str(bad)]).fetchall())
        kept = c.execute("SELECT trial_id FROM reviews").fetchall()
    finally:
        c.close()
    assert kept == [("mul__fixer__r1",)]
    assert q[2] == "unknown trial_id 'nope__x__r1'"
    assert q[3] == "reason_code is required: the decision reject disagrees with the grader (accept)"
    assert q[4] == "minutes -1 must be a finite number >= 0"
    assert q[5] == "grid.pattern: 'meh' is not one of follows-existing-pattern, creates-parallel-mechanism"
    assert q[6] == "not a JSON object"


def test_calibration_dataset_problems_are_located(kit, corpus_root, tmp_path):
    m = kit.make_corpus(corpus_root)
    (corpus_root / "rubric.md").write_text("# r\n")
    ds = dataset(tmp_path / "d.json", [("a", "+x\n", "pass"), ("b", "+y\n", "unsure")])
    wh = tmp_path / "wh.duckdb"
    proc = th("calibrate-judge", "--manifest", str(m), "--rubric", "rubric.md", "--dataset", str(ds), "-w", str(wh),
              ok=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{ds}: examples[1].label: 'unsure' is not a known label (expected pass or fail)" in proc.stderr
