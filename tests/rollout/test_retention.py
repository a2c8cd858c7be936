"""Retention: gc removes raw stage output and workspaces of finished runs older than the
policy, keeps what the numbers rest on, records what it removed, and every analysis gives
the same numbers afterwards (a real run of the example corpus, re-ingested after gc)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

CASES = ["order-quantity-validation", "transfer-atomic"]


def th(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=900)
    if check and proc.returncode != 0:
        raise AssertionError(f"trialhouse {' '.join(args)} exited {proc.returncode}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    base = tmp_path_factory.mktemp("retention")
    corpus = base / "corpus"
    th("example", str(corpus))
    manifest = json.loads((corpus / "manifest.json").read_text())
    manifest["cases"] = [c for c in manifest["cases"] if c["id"] in CASES]
    manifest.update(repetitions=1, control_repeats=1)
    small = corpus / "small.json"
    small.write_text(json.dumps(manifest, indent=1))
    th("run", "--manifest", str(small), "--output", str(base / "runs" / "main"), "--jobs", "2", "--no-progress")
    return {"base": base, "runs": base / "runs", "manifest": small}


@pytest.fixture
def runs(real_run: dict, tmp_path: Path) -> Path:
    """A copy of the real run this test may collect."""
    dest = tmp_path / "runs"
    shutil.copytree(real_run["runs"], dest, symlinks=True)
    return dest


def _policy(tmp_path: Path, text: str = "raw_output_days: 0\nworkspace_days: 0\n") -> Path:
    p = tmp_path / "retention.yaml"
    p.write_text(text)
    return p


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for top, _dirs, names in os.walk(root):
        for n in names:
            p = Path(top) / n
            out[str(p.relative_to(root))] = p.read_bytes() if not p.is_symlink() else b"<link>"
    return out


def _analyses(wh: Path, run_id: str, tmp: Path) -> dict:
    """Every analysis: the report (summary, comparison, consistency, Pareto, matrix, failures,
    familiarity, latency, flags, trajectory, period, review) plus the questions it does not ask."""
    from contextlib import closing

    from analysis.eligibility import eligibility
    from analysis.filters import Filters
    from analysis.noise import noise
    from analysis.ranks import ranks
    from analysis.report import write_report
    from warehouse import db

    paths = write_report(wh, tmp, runs=[run_id], baseline="sim-alpha-minimal")
    doc = json.loads(paths.json.read_text())
    for volatile in ("generated_at", "warehouse", "charts"):
        doc.pop(volatile)
    with closing(db.open(wh, read_only=True)) as con:
        f = Filters(runs=(run_id,))
        doc["noise"] = noise(con, f).as_dict()
        doc["ranks"] = ranks(con, f).as_dict()
        ids = [r[0] for r in con.execute("SELECT DISTINCT config_id FROM trials").fetchall()]
        doc["eligibility"] = {k: v.as_dict() for k, v in sorted(eligibility(con, ids).items())}
        doc["tables"] = {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]  # noqa: S608
                         for t in ("trials", "attempts", "stages", "gradings", "steps", "events", "flags")}
    return doc


def test_every_analysis_gives_the_same_numbers_after_gc(real_run: dict, runs: Path, tmp_path: Path) -> None:
    run_dir = runs / "main"
    run_id = json.loads((run_dir / "report.json").read_text())["run_id"]
    before_wh = tmp_path / "before" / "trialhouse.duckdb"
    th("ingest", str(run_dir), "--warehouse", str(before_wh))
    before = _analyses(before_wh, run_id, tmp_path / "r1")
    stored = _files(before_wh.parent)
    th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--apply")
    assert _files(before_wh.parent) == stored  # the warehouse is not touched
    assert not list(run_dir.glob("trials/*/workspace")) and not list(run_dir.glob("trials/*/logs"))
    after_wh = tmp_path / "after" / "trialhouse.duckdb"
    th("ingest", str(run_dir), "--warehouse", str(after_wh))
    assert _analyses(after_wh, run_id, tmp_path / "r2") == before  # rebuilt from what gc kept
    assert before["tables"]["trials"] == 12 and before["tables"]["gradings"] > 0


def test_a_dry_run_removes_nothing_and_says_what_would_go(runs: Path, tmp_path: Path) -> None:
    snapshot = _files(runs)
    proc = th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--json")
    doc = json.loads(proc.stdout)
    assert doc["applied"] is False and doc["files"] > 0 and _files(runs) == snapshot
    (run,) = doc["runs"]
    kinds = {r["kind"] for r in run["removed"]}
    assert kinds == {"raw_output", "workspace"}
    assert {r["path"] for r in run["removed"] if r["path"].startswith("controls/")}, "the controls' copies too"
    text = th("gc", str(runs), "--policy", str(_policy(tmp_path))).stdout
    assert "would remove (dry run; --apply removes)" in text and "kept: events" in text


def test_gc_keeps_what_the_numbers_rest_on_and_records_what_it_removed(runs: Path, tmp_path: Path) -> None:
    run_dir = runs / "main"
    before = _files(run_dir)
    out = th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--apply", "--json")
    doc = json.loads(out.stdout)
    after = _files(run_dir)
    kept = [p for p in before if p.startswith(("events", "report.json", "inputs/")) or
            "/checkpoints/" in p or "/verdicts/" in p or "/prompts/" in p or p.endswith("changes.patch")]
    assert kept and all(after[p] == before[p] for p in kept)
    gone = set(before) - set(after)
    assert gone and all(any(f"/{d}/" in p for d in ("logs", "agent-events", "trajectories", "grading",
                                                     "workspace", "negative", "positive"))
                        or "-logs/" in p for p in gone)
    (line,) = (run_dir / "retention.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["policy_sha256"] == doc["policy"]["sha256"] and record["raw_output_days"] == 0
    assert sum(r["files"] for r in record["removed"]) == len(gone)
    assert all(not os.path.lexists(run_dir / r["path"]) for r in record["removed"])
    again = json.loads(th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--apply", "--json").stdout)
    assert again["files"] == 0 and len((run_dir / "retention.jsonl").read_text().splitlines()) == 1


def test_the_policy_age_is_days_after_the_run_finished(runs: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, "raw_output_days: 30\nworkspace_days: 7\n")
    last = json.loads((runs / "main" / "events.jsonl").read_text().splitlines()[-1])["ts"]
    finished = datetime.fromisoformat(last.replace("Z", "+00:00"))
    now = json.loads(th("gc", str(runs), "--policy", str(policy), "--json").stdout)
    assert now["files"] == 0
    week = json.loads(th("gc", str(runs), "--policy", str(policy), "--json",
                         "--at", (finished + timedelta(days=8)).isoformat()).stdout)
    assert {r["kind"] for r in week["runs"][0]["removed"]} == {"workspace"}
    month = json.loads(th("gc", str(runs), "--policy", str(policy), "--json",
                          "--at", (finished + timedelta(days=31)).isoformat()).stdout)
    assert {r["kind"] for r in month["runs"][0]["removed"]} == {"workspace", "raw_output"}


def test_an_unfinished_run_is_never_collected(runs: Path, tmp_path: Path) -> None:
    (runs / "main" / "events.seal.json").unlink()
    doc = json.loads(th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--apply", "--json").stdout)
    assert doc["files"] == 0 and "run not finished" in doc["runs"][0]["skipped"]
    assert list((runs / "main").glob("trials/*/workspace"))


def test_a_planted_symlink_is_removed_as_a_link_never_followed(runs: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    (victim / "logs").mkdir(parents=True)
    (victim / "logs" / "precious.txt").write_text("keep me")
    trial = sorted((runs / "main" / "trials").iterdir())[0]
    shutil.rmtree(trial / "logs")
    (trial / "logs").symlink_to(victim / "logs")
    shutil.rmtree(trial / "workspace")
    (trial / "workspace").symlink_to(victim)
    (sorted((runs / "main" / "trials").iterdir())[1] / "workspace" / "escape").symlink_to(victim)
    outside = runs.parent / "elsewhere"
    outside.mkdir()
    (runs / "linked-run").symlink_to(outside)
    th("gc", str(runs), "--policy", str(_policy(tmp_path)), "--apply")
    assert (victim / "logs" / "precious.txt").read_text() == "keep me"
    assert not os.path.lexists(trial / "logs") and not os.path.lexists(trial / "workspace")


@pytest.mark.parametrize(("text", "message"), [
    ("{}", "give raw_output_days, workspace_days or both"),
    ("raw_output_days: -1", "raw_output_days: Input should be greater than or equal to 0"),
    ("keep_forever: true", "keep_forever: Extra inputs are not permitted"),
    ("raw_output_days: [", "not YAML or JSON"),
])
def test_a_bad_policy_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "runs").mkdir()
    proc = th("gc", str(tmp_path / "runs"), "--policy", str(_policy(tmp_path, text)), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_raw_output_is_evidence_the_runner_writes() -> None:
    """The directories gc removes are the runner's evidence directories, never a kept one."""
    from runner.retention import KEPT, RAW_OUTPUT
    from runner.trial_files import EVIDENCE_DIRS

    assert set(RAW_OUTPUT) <= set(EVIDENCE_DIRS) and not set(RAW_OUTPUT) & set(KEPT)
    assert set(EVIDENCE_DIRS) - set(RAW_OUTPUT) <= set(KEPT)


def test_retired_evidence_excuses_only_what_retention_removed(tmp_path):
    """A file missing below a path retention recorded is collected, not tampered with; a file
    changed beside it, or missing elsewhere, is still reported."""
    import json

    from contract.chain import evidence_changes, evidence_hashes, retired_paths

    trial = tmp_path / "trials" / "t1"
    (trial / "logs").mkdir(parents=True)
    (trial / "logs" / "stage.log").write_text("raw output\n")
    (trial / "changes.patch").write_text("diff\n")
    (trial / "verdicts").mkdir()
    (trial / "verdicts" / "v.json").write_text("{}\n")
    recorded = evidence_hashes(trial)
    (trial / "logs" / "stage.log").unlink()
    (trial / "verdicts" / "v.json").unlink()
    (trial / "changes.patch").write_text("forged\n")
    (tmp_path / "retention.jsonl").write_text(json.dumps({"removed": [{"path": "trials/t1/logs"}]}) + "\n")
    retired = retired_paths(tmp_path)
    assert retired == {"trials/t1/logs"}
    assert sorted(evidence_changes(trial, recorded, retired)) == ["changes.patch changed", "verdicts/v.json missing"]
    assert "logs/stage.log missing" in evidence_changes(trial, recorded)  # without the record: reported
