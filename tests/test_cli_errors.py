"""Acceptance: every command given the bad input a demanding user would type.

Each case runs the real CLI in a subprocess and asserts a non-zero exit, one
``trialhouse:`` line on stderr naming the file/field and no traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "examples" / "foreign" / "runs.jsonl"
PRICES = REPO / "examples" / "foreign" / "prices.json"


def cli(*args: str, cwd: Path | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIALHOUSE_")}
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "trialhouse", *map(str, args)],
        capture_output=True, text=True, cwd=cwd or REPO, env=env, timeout=timeout,
    )


@pytest.fixture(scope="module")
def qa(tmp_path_factory) -> Path:
    """A scratch directory with a real ingested warehouse and a set of bad inputs."""
    d = tmp_path_factory.mktemp("qa")
    res = cli("ingest", RUNS, "--prices", PRICES, "-w", d / "wh.duckdb")
    assert res.returncode == 0, res.stderr
    (d / "a_dir").mkdir()
    (d / "bad.json").write_text("{bad json\n")
    (d / "bad.yaml").write_text("a: : b: [\n")
    (d / "binary.bin").write_bytes(b"\xff\xfe\x00binary")
    (d / "not_report.json").write_text('{"x": 1}\n')
    (d / "garbage.duckdb").write_text("garbage\n")
    (d / "existing.txt").write_text("keep me\n")
    (d / "list.yaml").write_text("[1, 2]\n")
    (d / "empty.csv").write_text("")
    (d / "junk_dir").mkdir()
    (d / "junk_dir" / "notes.txt").write_text("hello\n")
    (d / "blank.jsonl").write_text("\n  \n")
    # a second task universe: one configuration on other tasks, no cost
    other = d / "other.jsonl"
    other.write_text("".join(
        json.dumps({"model": f"model-{m}", "harness": "zh", "harness_version": "1",
                    "task_id": f"z{i}", "trial": 1, "status": "solved", "input_tokens": 10,
                    "output_tokens": 5, "steps": 2, "benchmark": "other"}) + "\n"
        for m in "yz" for i in range(3)))
    res = cli("ingest", RUNS, other, "--prices", PRICES, "-w", d / "two.duckdb")
    assert res.returncode == 0, res.stderr
    # an empty warehouse: created by ingest machinery, nothing in it
    subprocess.run([sys.executable, "-c", "import sys, warehouse.db as d; d.open(sys.argv[1]).close()",
                    str(d / "empty.duckdb")], check=True, cwd=REPO)
    return d


W = "{d}/wh.duckdb"
# (id, argv template, expected exit code, words that must be in the one stderr line)
CASES = [
    # warehouse paths
    ("sql-missing-wh", ["sql", "select 1", "-w", "{d}/nope.duckdb"], 2, ["nope.duckdb", "no warehouse here", "ingest"]),
    ("sql-dir-wh", ["sql", "select 1", "-w", "{d}/a_dir"], 2, ["a_dir", "is a directory"]),
    ("tables-json-as-wh", ["tables", "-w", "{d}/bad.json"], 2, ["bad.json", "not a DuckDB warehouse"]),
    ("tables-garbage-wh", ["tables", "-w", "{d}/garbage.duckdb"], 2, ["garbage.duckdb", "not a DuckDB warehouse"]),
    ("ingest-json-as-wh", ["ingest", str(RUNS), "-w", "{d}/bad.json"], 2, ["bad.json", "not a DuckDB warehouse"]),
    ("ingest-dir-as-wh", ["ingest", str(RUNS), "-w", "{d}/a_dir"], 2, ["a_dir", "is a directory"]),
    ("summarize-missing-wh", ["summarize", "-w", "{d}/nope.duckdb"], 2, ["no warehouse here"]),
    ("summarize-empty-wh", ["summarize", "-w", "{d}/empty.duckdb"], 2, ["no complete trials", "ingest a run"]),
    ("report-empty-wh", ["report", "-w", "{d}/empty.duckdb", "-o", "{d}/r_empty"], 2, ["no trials match", "ingest"]),
    # SQL
    ("sql-syntax", ["sql", "selec 1", "-w", W], 2, ["SQL error", "syntax error"]),
    ("sql-empty", ["sql", "  ", "-w", W], 2, ["empty SQL query", "SELECT"]),
    ("sql-no-result", ["sql", "/* only a comment */", "-w", W], 2, ["no rows", "SELECT"]),
    ("sql-missing-table", ["sql", "select * from nope", "-w", W], 2, ["SQL error", "nope", "does not exist"]),
    # DuckDB's message quotes the value cut inside an 'é': the binding raises UnicodeDecodeError (duckdb-python#93)
    ("sql-message-not-utf8", ["sql", "SELECT json_extract('{{\"model\" : \"m\" , \"h\" : \"' || repeat('\u00e9', 60) || '\" , x}}', '$')",
                              "-w", W], 2, ["SQL error", "Malformed JSON", "\ufffd"]),
    # ingest inputs
    ("ingest-missing-path", ["ingest", "{d}/nope", "-w", "{d}/w1.duckdb"], 2, ["nope", "no such file"]),
    ("ingest-unknown-format", ["ingest", "{d}/junk_dir", "-w", "{d}/w1.duckdb"], 2, ["junk_dir", "cannot tell its format", "--format"]),
    ("ingest-empty-dir", ["ingest", "{d}/a_dir", "-w", "{d}/w1.duckdb"], 2, ["a_dir", "is an empty directory"]),
    ("ingest-empty-file", ["ingest", "{d}/empty.csv", "-w", "{d}/w1.duckdb"], 2, ["empty.csv", "is empty"]),
    ("ingest-blank-file", ["ingest", "{d}/blank.jsonl", "-w", "{d}/w1.duckdb"], 2, ["blank.jsonl", "is empty"]),
    ("ingest-bad-format-flag", ["ingest", str(RUNS), "--format", "bogus", "-w", "{d}/w1.duckdb"], 2, ["--format", "bogus"]),
    ("ingest-prices-missing", ["ingest", str(RUNS), "--prices", "{d}/nope.json", "-w", "{d}/w1.duckdb"], 2, ["nope.json", "prices"]),
    ("ingest-prices-bad-json", ["ingest", str(RUNS), "--prices", "{d}/bad.json", "-w", "{d}/w1.duckdb"], 2, ["bad.json", "not valid JSON"]),
    ("ingest-prices-bad-yaml", ["ingest", str(RUNS), "--prices", "{d}/bad.yaml", "-w", "{d}/w1.duckdb"], 2, ["bad.yaml", "not valid YAML", "line 1"]),
    ("ingest-prices-binary", ["ingest", str(RUNS), "--prices", "{d}/binary.bin", "-w", "{d}/w1.duckdb"], 2, ["binary.bin", "not UTF-8"]),
    ("ingest-prices-list", ["ingest", str(RUNS), "--prices", "{d}/list.yaml", "-w", "{d}/w1.duckdb"], 2, ["list.yaml", "object"]),
    ("ingest-prices-dir", ["ingest", str(RUNS), "--prices", "{d}/a_dir", "-w", "{d}/w1.duckdb"], 2, ["a_dir", "prices"]),
    # annotate
    ("annotate-missing-csv", ["annotate", "--csv", "{d}/nope.csv", "-w", W], 2, ["nope.csv", "no such file"]),
    ("annotate-dir-csv", ["annotate", "--csv", "{d}/a_dir", "-w", W], 2, ["a_dir", "is a directory"]),
    ("annotate-binary-csv", ["annotate", "--csv", "{d}/binary.bin", "-w", W], 2, ["binary.bin", "UTF-8"]),
    ("annotate-empty-csv", ["annotate", "--csv", "{d}/empty.csv", "-w", W], 2, ["empty.csv", "header", "trial_id"]),
    ("annotate-bad-kind", ["annotate", "--csv", "{d}/empty.csv", "--kind", "bogus", "-w", W], 2, ["--kind", "bogus"]),
    ("annotate-missing-wh", ["annotate", "--csv", "{d}/empty.csv", "-w", "{d}/typo.duckdb"], 2, ["typo.duckdb", "no warehouse here"]),
    # filters
    ("label-syntax", ["summarize", "-w", W, "--label", "bad"], 2, ["--label", "key=value"]),
    ("since-bad", ["summarize", "-w", W, "--since", "notadate"], 2, ["--since", "ISO date"]),
    ("until-bad", ["latency", "-w", W, "--until", "2026-13-45"], 2, ["--until", "ISO date"]),
    ("budget-curve-no-sweep", ["budget-curve", "-w", W], 2, ["no budget sweep in the selection", "docs/runner.md"]),
    ("visibility-no-visible-check", ["visibility", "-w", W], 2, ["no visible check in the selection"]),
    ("holdout-bad", ["familiarity", "-w", W, "--holdout", "maybe"], 2, ["--holdout", "include, exclude or only"]),
    ("by-unknown", ["summarize", "-w", W, "--by", "nocolumn"], 2, ["--by", "nocolumn"]),
    ("run-unknown", ["consistency", "-w", W, "--run", "nope"], 2, ["--run 'nope'", "no run", "known: runs-jsonl-"]),
    ("label-key-unknown", ["summarize", "-w", W, "--label", "task_class=x"], 2,
     ["--label task_class=x", "no case has a 'task_class' label", "labels in the warehouse: benchmark, repository"]),
    ("label-value-unknown", ["pareto", "-w", W, "--label", "repository=nope"], 2,
     ["--label repository=nope", "known repository values: acme/ledger, acme/widgets"]),
    ("selection-empty-together", ["summarize", "-w", W, "--since", "2031-01-01"], 2,
     ["no complete trials match --since 2031-01-01", "trialhouse runs"]),
    # configuration names
    ("baseline-unknown", ["compare", "-w", W, "--baseline", "nope"], 2, ["'nope'", "not found", "known:"]),
    ("candidate-unknown", ["compare", "-w", W, "--baseline", "minimal-shell@1.2.0 / model-a", "--candidate", "zzz"], 2, ["'zzz'", "not found"]),
    ("baseline-ambiguous", ["compare", "-w", W, "--baseline", "f"], 2, ["'f'", "ambiguous", "longer"]),
    ("report-baseline-unknown", ["report", "-w", W, "-o", "{d}/r_base", "--baseline", "nope"], 2, ["'nope'", "not found"]),
    # scoping: selectors, task universes, zero pairs, degenerate grids, cost coverage
    ("source-unknown", ["summarize", "-w", W, "--source", "inspcet"], 2, ["--source 'inspcet'", "known: runs-jsonl"]),
    ("universe-unknown", ["pareto", "-w", W, "--universe", "nope"], 2, ["--universe 'nope'", "known: acme-bugs-v1"]),
    ("benchmark-unknown", ["consistency", "-w", W, "--benchmark", "nope"], 2, ["--benchmark 'nope'", "known: acme-bugs-v1"]),
    ("config-unknown", ["summarize", "-w", W, "--config", "zzz"], 2, ["'zzz'", "not found", "known:"]),
    ("model-unknown", ["matrix", "-w", W, "--model", "zzz"], 2, ["--model 'zzz'", "known: model-a"]),
    ("cost-coverage-bad", ["pareto", "-w", W, "--cost-coverage", "some"], 2, ["--cost-coverage", "all or complete"]),
    ("compare-two-universes", ["compare", "-w", "{d}/two.duckdb"], 2, ["2 task universes", "--universe NAME"]),
    ("compare-no-shared-task", ["compare", "-w", "{d}/two.duckdb", "--baseline", "minimal-shell@1.2.0 / model-a",
                                "--candidate", "zh@1 / model-z"], 2, ["shares no task", "different task universes"]),
    ("matrix-one-cell", ["matrix", "-w", "{d}/two.duckdb", "--universe", "other", "--model", "model-z"], 2, ["only one model × harness cell", "two models or two harnesses"]),
    ("cost-none-known", ["pareto", "-w", "{d}/two.duckdb", "--universe", "other", "--cost-coverage", "complete"], 2, ["none of the 6", "known cost", "--prices"]),
    ("plan-many-candidates", ["plan", "-w", W], 2, ["plan needs one pair", "--candidate"]),
    ("plan-half-components", ["plan", "--between", "0.1"], 2, ["give both --between and --within"]),
    ("rank-few-resamples", ["rank", "-w", W, "--resamples", "5"], 2, ["--resamples", "100"]),
    # compare --report
    ("compare-report-missing", ["compare", "--report", "{d}/nope.json"], 2, ["nope.json", "report.json"]),
    ("compare-report-not-report", ["compare", "--report", "{d}/not_report.json"], 2, ["not_report.json", "trials"]),
    ("compare-report-bad-json", ["compare", "--report", "{d}/bad.json"], 2, ["bad.json", "not valid JSON", "line 1"]),
    ("compare-report-dir", ["compare", "--report", "{d}/a_dir"], 2, ["a_dir", "is a directory", "report.json"]),
    ("compare-report-binary", ["compare", "--report", "{d}/binary.bin"], 2, ["binary.bin", "cannot read"]),
    # outputs: every path a command creates is checked before work starts (a parent that is
    # a file; a place nobody can write, root included: /sys refuses, /proc has no such entry)
    ("report-output-is-file", ["report", "-w", W, "-o", "{d}/existing.txt"], 2, ["existing.txt", "not a directory"]),
    ("report-output-parent-is-file", ["report", "-w", W, "-o", "{d}/existing.txt/r"], 2,
     ["--output", "existing.txt is a file, not a directory"]),
    ("report-output-unwritable", ["report", "-w", W, "-o", "/sys/trialhouse-report"], 2,
     ["--output /sys/trialhouse-report", "cannot write in /sys"]),
    ("example-into-file", ["example", "{d}/existing.txt"], 2, ["existing.txt", "not a directory"]),
    ("example-unwritable", ["example", "/proc/trialhouse-example"], 2, ["cannot write in /proc"]),
    ("ingest-wh-parent-is-file", ["ingest", str(RUNS), "-w", "{d}/existing.txt/w.duckdb"], 2,
     ["--warehouse", "existing.txt is a file, not a directory"]),
    ("ingest-wh-unwritable", ["ingest", str(RUNS), "-w", "/sys/trialhouse-wh/w.duckdb"], 2,
     ["--warehouse /sys/trialhouse-wh/w.duckdb", "cannot write in /sys"]),
    ("ingest-wh-in-proc", ["ingest", str(RUNS), "-w", "/proc/trialhouse-wh/w.duckdb"], 2,
     ["cannot write in /proc"]),
    ("run-output-parent-is-file", ["run", "-m", "{d}/bad.json", "-o", "{d}/existing.txt/run"], 2,
     ["--output", "existing.txt is a file, not a directory"]),
    ("run-output-unwritable", ["run", "-m", "{d}/bad.json", "-o", "/sys/trialhouse-run"], 2,
     ["cannot write in /sys"]),
    ("view-bundle-parent-is-file", ["view", "-w", W, "--bundle", "{d}/existing.txt/b"], 2,
     ["--bundle", "existing.txt is a file, not a directory"]),
    ("view-reviews-unwritable", ["view", "-w", W, "--no-open", "--reviews", "/sys/r.jsonl"], 2,
     ["--reviews /sys/r.jsonl", "cannot write in /sys"]),
    # sql sees only the warehouse: never a variable of the program (a replacement scan)
    ("sql-python-variable", ["sql", "select * from query", "-w", W], 2,
     ["query does not exist", "trialhouse tables"]),
    ("sql-python-module", ["sql", "select * from annotations", "-w", W], 2,
     ["annotations does not exist"]),
    # runner inputs
    ("run-missing-manifest", ["run", "-m", "{d}/nope.json", "-o", "{d}/run1"], 2, ["nope.json", "not found"]),
    ("run-bad-manifest", ["run", "-m", "{d}/bad.json", "-o", "{d}/run1"], 2, ["bad.json", "line 1", "JSON"]),
    ("schema-unknown", ["schema", "bogus"], 2, ["bogus", "events or manifest"]),
]


@pytest.mark.parametrize(("argv", "code", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line(qa: Path, argv: list[str], code: int, words: list[str]) -> None:
    res = cli(*[a.format(d=qa) for a in argv])
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode == code, (res.returncode, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("trialhouse: "), lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_validate_names_each_problem(qa: Path) -> None:
    """validate lists problems on stdout and a one-line count naming the file on stderr."""
    for bad, words in [("nope.json", ["not found"]),
                       ("a_dir", ["is a directory", "give the manifest's JSON file"]),
                       ("bad.json", ["line 1", "malformed JSON"])]:
        res = cli("validate", "-m", qa / bad)
        assert res.returncode == 2 and "Traceback" not in res.stderr + res.stdout
        assert f"{bad}: 1 problem(s)" in res.stderr
        for w in words:
            assert w in res.stdout, (w, res.stdout)


def test_non_duckdb_warehouse_is_left_untouched(qa: Path, tmp_path: Path) -> None:
    """DuckDB would open x.json as an in-memory database; ingest must refuse before writing."""
    target = tmp_path / "results.json"
    target.write_text('{"keep": true}\n')
    res = cli("ingest", RUNS, "-w", target)
    assert res.returncode == 2 and "not a DuckDB warehouse" in res.stderr
    assert target.read_text() == '{"keep": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_locked_warehouse_exits_3(qa: Path) -> None:
    from warehouse.db import write_lock

    wh = qa / "locked.duckdb"
    shutil.copy(qa / "wh.duckdb", wh)
    with write_lock(wh):
        res = cli("ingest", RUNS, "-w", wh)
    assert res.returncode == 3, res.stderr
    assert "Traceback" not in res.stderr
    assert "locked" in res.stderr and "locked.duckdb" in res.stderr


def test_report_without_familiarity_labels_still_writes(qa: Path) -> None:
    """Foreign runs carry no known/unknown labels: the report says so instead of failing."""
    out = qa / "r_foreign"
    res = cli("report", "-w", qa / "wh.duckdb", "-o", out)
    assert res.returncode == 0, res.stderr
    html = (out / "report.html").read_text()
    assert "No task carries a known/unknown repository label" in html
    assert (out / "report.json").is_file()


def test_compare_report_accepts_run_directory(qa: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "report.json").write_text('{"x": 1}')
    res = cli("compare", "--report", run_dir)
    # the directory is resolved to its report.json, whose content is then judged
    assert res.returncode == 2 and "report.json: no 'trials' list" in res.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="runs the CLI as another user (root)")
def test_an_output_below_a_directory_the_user_cannot_search_is_one_line(tmp_path: Path) -> None:
    """Found in a cgroup v2 guest: an ordinary user's ``run --output`` below root's 0700 pytest
    directory was a PermissionError traceback from the path check itself."""
    import tempfile

    locked = Path(tempfile.mkdtemp(prefix="trialhouse-locked-"))
    try:
        locked.chmod(0o700)
        uid = 1_999_100_000 + os.getpid() % 100_000
        res = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                              sys.executable, "-m", "trialhouse", "example", str(locked / "x" / "ex")],
                             capture_output=True, text=True, cwd="/", timeout=180,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/", "NO_COLOR": "1"})
        if "trialhouse" not in res.stderr and res.returncode != 2:
            pytest.skip(f"the test interpreter cannot run as uid {uid}: {res.stderr.strip()[-200:]}")
        assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-1500:]
        assert res.stderr.strip() == (f"trialhouse: DIR {locked / 'x' / 'ex'}: a directory on the way cannot be "
                                      "searched by this user (permission denied); choose a place you can reach for DIR")
    finally:
        shutil.rmtree(locked)
