"""What a command says when input is partly bad or an action cannot be undone, through the
real CLI: quarantine reasons printed by ingest, annotate and review import (the first
five with file and line, then the count and the SQL that lists them all); `runs delete`
asks, or needs --yes; `validate --manifest DIR` points at the manifest inside."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "examples" / "foreign" / "runs.jsonl"


def cli(*args: object, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIALHOUSE_")}
    env.update(NO_COLOR="1", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "trialhouse", *map(str, args)], stdin=stdin,
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=180)


def one_line(res: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("trialhouse: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def wh(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("reasons")
    res = cli("ingest", RUNS, "-w", d / "wh.duckdb")
    assert res.returncode == 0, res.stderr
    return d / "wh.duckdb"


def _copy(wh: Path, tmp: Path) -> Path:
    shutil.copytree(wh.parent, tmp / "wh")
    return tmp / "wh" / wh.name


def _trial(wh: Path) -> str:
    res = cli("sql", "-w", wh, "--json", "SELECT trial_id FROM trials ORDER BY trial_id LIMIT 1")
    return json.loads(res.stdout)[0]["trial_id"]


def _reasons(out: str) -> list[str]:
    return re.findall(r"^  (\S+:\d+): (.*)$", out, flags=re.M)


def test_ingest_prints_the_first_quarantine_reasons_with_lines_and_the_sql(wh, tmp_path):
    good = RUNS.read_text().splitlines()[:3]
    bad = [*good, *[f'{{"model": "m", "status": "weird-{i}"}}' for i in range(7)], "not json"]
    src = tmp_path / "mixed.jsonl"
    src.write_text("\n".join(bad) + "\n")
    target = tmp_path / "w" / "w.duckdb"
    res = cli("ingest", src, "-w", target)
    assert res.returncode == 2
    line = one_line(res)
    assert "8 line(s) quarantined" in line and "--allow-quarantine" in line
    shown = _reasons(res.stdout)
    assert len(shown) == 5 and all(where.startswith(f"{src}:") for where, _ in shown)
    assert [int(w.rsplit(":", 1)[1]) for w, _ in shown] == sorted(
        int(w.rsplit(":", 1)[1]) for w, _ in shown)
    assert "quarantined 8 line(s); the first 5:" in res.stdout
    sql = re.search(r'all of them: trialhouse sql -w \S+ "(.*)"$', res.stdout, flags=re.M)
    assert sql is not None
    every = json.loads(cli("sql", "-w", target, "--json", sql.group(1)).stdout)
    assert len(every) == 8 and {(f"{r['source_file']}:{r['line']}", r["reason"])
                                for r in every} >= set(shown)
    # allowed: still printed, exit 0; --json carries the same sample
    res = cli("ingest", src, "-w", tmp_path / "w2" / "w.duckdb", "--allow-quarantine", "--json")
    assert res.returncode == 0
    doc = json.loads(res.stdout)
    assert [(f"{q['file']}:{q['line']}", q["reason"]) for q in doc["quarantine_sample"]] == shown


def test_annotate_and_review_import_print_their_reasons(wh, tmp_path):
    target = _copy(wh, tmp_path)
    trial = _trial(target)
    csv = tmp_path / "ann.csv"
    csv.write_text(f"trial_id,category,annotator\nnope,verification,al\n{trial},bogus,al\n"
                   f"{trial},verification,al\n")
    res = cli("annotate", "--csv", csv, "-w", target)
    assert res.returncode == 2 and "2 line(s) quarantined" in one_line(res)
    assert _reasons(res.stdout) == [(f"{csv}:2", "unknown trial_id 'nope'"),
                                    (f"{csv}:3", "category 'bogus' is not one of "
                                                 + re.search(r"bogus' is not one of (.*)$",
                                                             res.stdout, re.M).group(1))]
    assert "quarantined 2 line(s):" in res.stdout
    reviews = tmp_path / "reviews.csv"
    verdict = "accept" if json.loads(cli(
        "sql", "-w", target, "--json", f"SELECT outcome FROM trials WHERE trial_id = '{trial}'"
    ).stdout)[0]["outcome"] == "accepted" else "reject"
    reviews.write_text(f"trial_id,reviewer,decision,minutes\n{trial},bob,maybe,3\n"
                       f"{trial},bob,{verdict},-1\n{trial},bob,{verdict},2\n")
    res = cli("review", "import", reviews, "-w", target)
    assert res.returncode == 2 and "2 line(s) quarantined" in one_line(res)
    where = [w for w, _ in _reasons(res.stdout)]
    assert where == [f"{reviews}:2", f"{reviews}:3"]
    assert "decision" in res.stdout and "minutes" in res.stdout


def test_runs_delete_asks_or_needs_yes(wh, tmp_path):
    target = _copy(wh, tmp_path)
    run = json.loads(cli("runs", "-w", target, "--json").stdout)[0]["run_id"]

    def kept() -> bool:
        return any(r["run_id"] == run for r in json.loads(cli("runs", "-w", target,
                                                                 "--json").stdout))

    res = cli("runs", "delete", run, "-w", target)  # stdin is not a terminal
    assert res.returncode == 2
    line = one_line(res)
    assert "pass --yes" in line and run in line and "360 trials" in line and kept()
    for answer, deleted in (("n", False), ("y", True)):
        master, slave = pty.openpty()
        try:
            os.write(master, f"{answer}\n".encode())
            res = cli("runs", "delete", run, "-w", target, stdin=slave)
        finally:
            os.close(master)
            os.close(slave)
        assert "Delete run" in res.stdout and "no undo" in res.stdout
        assert kept() is not deleted, res.stdout + res.stderr
        assert res.returncode == (0 if deleted else 1)
        if not deleted:
            assert "not deleted (not confirmed)" in one_line(res)
    target2 = _copy(wh, tmp_path / "again")
    res = cli("runs", "delete", run, "-w", target2, "--yes")
    assert res.returncode == 0 and f"{run}: deleted" in res.stdout


def test_validate_a_directory_points_at_the_manifest_inside(tmp_path):
    corpus = tmp_path / "corpus"
    assert cli("example", corpus).returncode == 0
    res = cli("validate", "--manifest", corpus)
    assert res.returncode == 2 and "Traceback" not in res.stderr + res.stdout
    assert f"is a directory; pass --manifest {corpus / 'manifest.json'}" in res.stdout
    res = cli("run", "--manifest", corpus, "--output", tmp_path / "run")
    assert res.returncode == 2
    assert f"pass --manifest {corpus / 'manifest.json'}" in one_line(res)
    assert not (tmp_path / "run").exists()
