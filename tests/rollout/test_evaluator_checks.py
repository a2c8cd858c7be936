"""The evaluator's own problems and a reviewer's flags, on one real run of a small corpus of
our own (two cases of the example, two configurations):

- a repository whose check hangs times out under every configuration: ``inspect-queue``
  lists it once as a likely evaluator problem, the healthy repository not at all;
- a grader that prints the time, its temporary paths and an object address gives the same
  ``output_key`` in every trial while the raw output (kept) differs;
- a replayed patch that removes an exported function, changes another's signature and adds a
  migration is flagged ``public_api_change`` and ``migration_added``; the reference is not.
"""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from types import SimpleNamespace

import pytest

NOISY = '''import datetime, os, sys, tempfile
print("checked at", datetime.datetime.now().isoformat(), "in", os.environ["TRIALHOUSE_WORKSPACE"])
print("scratch", tempfile.mkdtemp(), "object", object(), "took 0.%ds" % (os.getpid() % 97))
print("inputs", os.environ["TRIALHOUSE_INPUTS"], file=sys.stderr)
'''
SLOW = "import time\ntime.sleep(30)\n"


def th(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"trialhouse {' '.join(args)} exited {proc.returncode}\n{proc.stderr}")
    return proc


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout


def _api_patch(corpus: Path, dest: Path) -> None:
    """The reference fix of order-quantity-validation plus: ``format_cents`` removed,
    ``apply_discount`` given a required parameter, and a new ``migrations/0002_quantity.py``."""
    clone = dest.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(corpus / "repos" / "shop-service"), str(clone)], check=True)
    _git(clone, "apply", str(corpus / "references" / "order-quantity-validation.patch"))
    billing = clone / "shop" / "billing.py"
    text = billing.read_text()
    start = text.index("def format_cents")
    billing.write_text(text[:start].rstrip() + "\n")
    text = billing.read_text().replace("def apply_discount(total_cents: int, percent: float)",
                                       "def apply_discount(total_cents: int, percent: float, currency: str)")
    billing.write_text(text)
    (clone / "migrations").mkdir()
    (clone / "migrations" / "0002_quantity.py").write_text("OPERATIONS = ['check quantity > 0']\n")
    _git(clone, "add", "-A")
    dest.write_text(_git(clone, "diff", "--cached", "--full-index"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    base = tmp_path_factory.mktemp("evaluator-checks")
    corpus = base / "corpus"
    th("example", str(corpus))
    (corpus / "graders" / "noisy.py").write_text(NOISY)
    (corpus / "graders" / "slow.py").write_text(SLOW)
    (corpus / "api-patches").mkdir()
    _api_patch(corpus, corpus / "api-patches" / "order-quantity-validation.patch")
    (corpus / "api-patches" / "transfer-atomic.patch").write_bytes(
        (corpus / "references" / "transfer-atomic.patch").read_bytes())
    m = json.loads((corpus / "manifest.json").read_text())
    m["cases"] = [c for c in m["cases"] if c["id"] in ("order-quantity-validation", "transfer-atomic")]
    extra = {"order-quantity-validation": {"id": "noisy-output", "command": ["python3", "{inputs}/graders/noisy.py"],
                                           "files": ["graders/noisy.py"]},
             "transfer-atomic": {"id": "slow-check", "command": ["python3", "{inputs}/graders/slow.py"],
                                 "files": ["graders/slow.py"], "timeout_seconds": 1}}
    for case in m["cases"]:
        case["criteria"].append({"description": "an extra check", "layer": "regression", **extra[case["id"]]})
    replay = {"id": "replay-api", "harness": "trialhouse-builtin", "harness_version": "1",
              "agent": {"kind": "replay", "patches_dir": "api-patches"}}
    m["variants"] = [v for v in m["variants"] if v["id"] == "reference"] + [replay]
    m.update(repetitions=1, control_repeats=1, max_attempts=1)
    manifest = corpus / "checks.json"
    manifest.write_text(json.dumps(m, indent=1))
    run_dir = base / "runs" / "main"
    run = th("run", "--manifest", str(manifest), "--output", str(run_dir), "--jobs", "2", "--no-progress",
             "--score-unvalidated", check=False)  # exits 1: the hanging check's case is not scored
    assert "transfer-atomic: negative control: slow-check (regression) inconclusive" in run.stderr, run.stderr
    wh = base / "wh" / "trialhouse.duckdb"
    th("ingest", str(run_dir), "-w", str(wh))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return SimpleNamespace(run_dir=run_dir, wh=wh, events=events)


def test_a_repository_timing_out_under_every_configuration_is_an_evaluator_problem(checked) -> None:
    from analysis.review import inspect_queue
    from warehouse import db

    with closing(db.open(checked.wh, read_only=True)) as con:
        queue = inspect_queue(con).to_dicts()
    flagged = [q for q in queue if q["kind"] == "repository_timeouts"]
    assert len(flagged) == 1, flagged
    assert flagged[0]["detail"].startswith("repository inventory-core: 2 trial(s) timed out across 2 configurations")
    assert "likely an evaluator problem" in flagged[0]["detail"]
    timed = {e["trial_id"] for e in checked.events if e["event"] == "grading" and e.get("timed_out")}
    assert {t.split("__")[1] for t in timed} == {"reference", "replay-api"}  # the events agree
    out = th("inspect-queue", "-w", str(checked.wh)).stdout
    assert "repository_timeouts" in out


def test_grader_output_is_compared_normalised_and_kept_raw(checked) -> None:
    noisy = [e for e in checked.events if e["event"] == "grading" and e["criterion_id"] == "noisy-output"]
    assert len(noisy) == 2 and len({e["output_key"] for e in noisy}) == 1
    raws = {(checked.run_dir / "trials" / e["trial_id"] / "grading" / "a1" / "noisy-output.out").read_text()
            for e in noisy}
    assert len(raws) == 2  # different times, paths and addresses, kept as written
    assert all("/tmp/" in r or "checked at 20" in r for r in raws)
    norm = (checked.run_dir / "trials" / noisy[0]["trial_id"] / "grading" / "a1" / "noisy-output.normalized").read_text()
    assert "<timestamp>" in norm and "<workspace>" in norm and "0x<address>" in norm and "<inputs>" in norm
    assert "<duration>" in norm and "<tmp>" in norm
    targets = {e["output_key"] for e in checked.events if e["event"] == "grading"
               and e["criterion_id"] == "rejects-bad-quantity"}
    assert targets.isdisjoint({noisy[0]["output_key"]})
    from warehouse import db

    with closing(db.open(checked.wh, read_only=True)) as con:
        keys = con.sql("SELECT DISTINCT output_key FROM gradings WHERE criterion_id = 'noisy-output' "
                       "AND trial_id IS NOT NULL").fetchall()
    assert keys == [(noisy[0]["output_key"],)]


def test_public_api_changes_and_migrations_are_flagged(checked) -> None:
    flags = [e for e in checked.events if e["event"] == "flag"]
    by_trial = {}
    for f in flags:
        by_trial.setdefault(f["trial_id"], []).append(f)
    replay = {f["kind"]: f for f in by_trial["order-quantity-validation__replay-api__r1"]}
    assert replay["public_api_change"]["path"] == "shop/billing.py"
    assert "removed: format_cents" in replay["public_api_change"]["detail"]
    assert ("apply_discount(total_cents, percent) → apply_discount(total_cents, percent, currency)"
            in replay["public_api_change"]["detail"])
    assert replay["migration_added"]["path"] == "migrations/0002_quantity.py"
    assert not [f for f in flags if f["trial_id"].split("__")[1] == "reference"
               and f["kind"] in ("public_api_change", "migration_added")]


def test_what_counts_as_the_public_api() -> None:
    from runner.api_flags import api_findings, migration_findings

    before = ("__all__ = ['run', 'Job']\ndef run(a, b=1, *, c): ...\ndef helper(x): ...\n"
              "class Job:\n    def start(self, when): ...\n    def _inner(self): ...\n")
    same = before.replace("b=1", "b=2").replace("def helper(x)", "def helper(x, y)")  # default; not exported
    assert api_findings("pkg/jobs.py", before, same) == []
    moved = before.replace("def start(self, when)", "def start(self, when, *, retries)")
    [f] = api_findings("pkg/jobs.py", before, moved)
    assert f.detail == "signature changed: Job.start(self, when) → Job.start(self, when, *, retries)"
    assert api_findings("pkg/jobs.py", before, None)[0].detail == "removed: Job, Job.start, run"
    assert api_findings("pkg/_private.py", before, "") == []  # private modules export nothing
    assert api_findings("tests/test_jobs.py", before, "") == []
    assert api_findings("pkg/jobs.py", before, "def (:") == []  # does not parse: not compared
    found = migration_findings(["app/migrations/0003_x.py", "db/migrate/20260101_add.rb",
                                "alembic/versions/abc.py", "src/main/resources/db/migration/V2__x.sql",
                                "docs/migrations.md", "app/models.py"])
    assert [f.path for f in found] == ["app/migrations/0003_x.py", "db/migrate/20260101_add.rb",
                                       "alembic/versions/abc.py", "src/main/resources/db/migration/V2__x.sql"]


def test_normalisation_keeps_what_differs_in_substance() -> None:
    from contract.grader_output import normalise, output_key

    a = "FAIL at 2026-12-06T11:02:03.123Z in /tmp/tmpab12/x.py (obj at 0x7f3a2b1c9d80) 127.0.0.1:43121 0.21s"
    b = "FAIL at 2026-12-07 09:00:00 UTC in /tmp/tmpzz99/x.py (obj at 0x7f00aa11bb22) 127.0.0.1:50000 3s"
    assert normalise(a) == normalise(b) == ("FAIL at <timestamp> in <tmp> (obj at 0x<address>) "
                                            "<host>:<port> <duration>")
    assert output_key(a, "") == output_key(b, "") != output_key(a.replace("FAIL", "PASS"), "")
    assert normalise("/w/ws/a.py /w/inputs", {"<workspace>": "/w/ws", "<inputs>": "/w/inputs"}) == \
        "<workspace>/a.py <inputs>"
