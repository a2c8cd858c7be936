"""Stop rules: a rule fires with its figures, the CLI exits 1, an owner resumes it, new
evidence fires it again; the figures equal an independent computation (statsmodels)."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from analysis.rules_check import check_rules
from analysis.stop_rules import load_rules
from warehouse import db

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

RULES = """
rules:
  - id: planner-regression-free
    metric: regression_free_rate
    below: 0.95
    window: {last: 2, unit: runs}
    scope: {config: planner}
    owner: [Maria Rossi]
    note: release lead
  - id: planner-accepted
    metric: accepted_rate
    below: 0.5
    window: {last: 2, unit: runs}
    scope: {config: planner}
    owner: Maria Rossi
  - id: minimal-cost
    metric: cost_per_accepted
    above: 2.0
    window: {last: 7, unit: days}
    scope: {config: minimal}
    owner: Ken
"""


def th(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def guarded(tmp_path: Path, rollout_kit) -> dict:
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    k = rollout_kit
    # week 1: planner clean; week 2 and 3: planner breaks regressions in 1 and 2 of 10 trials
    k.write_run(wh, "w1", k.T0, k.week("planner", 9, 0) + k.week("minimal", 5, 0))
    k.write_run(wh, "w2", k.T0 + timedelta(days=7), k.week("planner", 9, 1) + k.week("minimal", 5, 0))
    k.write_run(wh, "w3", k.T0 + timedelta(days=14), k.week("planner", 8, 2) + k.week("minimal", 5, 0))
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    return {"wh": wh, "rules": rules, "at": (k.T0 + timedelta(days=15)).isoformat()}


def test_a_rule_fires_with_figures_equal_to_an_independent_computation(guarded: dict) -> None:
    from datetime import datetime

    with closing(db.open(guarded["wh"], read_only=True)) as con:
        check = check_rules(con, load_rules(guarded["rules"]), datetime.fromisoformat(guarded["at"]))
    by = {r.rule.id: r for r in check.results}
    fired = by["planner-regression-free"]
    assert fired.status == "fired" and check.results[0] is fired
    assert fired.window["runs"] == ["w2", "w3"]  # the last two runs, w1 left out
    assert (fired.k, fired.n) == (17, 20)  # 20 graded valid trials, 3 broke a regression
    low, high = proportion_confint(17, 20, alpha=0.05, method="wilson")
    assert fired.value == pytest.approx(0.85) and fired.low == pytest.approx(low) and fired.high == pytest.approx(high)
    assert by["planner-accepted"].status == "ok" and (by["planner-accepted"].k, by["planner-accepted"].n) == (14, 20)
    # minimal: 7 days before the check holds only w3 (T0+14d); $0.5 × 10 trials / 5 accepted
    cost = by["minimal-cost"]
    assert cost.window["runs"] == ["w3"] and cost.value == pytest.approx(1.0) and cost.status == "ok"


def test_check_exits_1_names_the_owner_and_resume_records_the_decision(guarded: dict) -> None:
    wh, rules, at = str(guarded["wh"]), str(guarded["rules"]), guarded["at"]
    proc = th("rules", "check", "--rules", rules, "-w", wh, "--at", at)
    assert proc.returncode == 1, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("FIRED") and "planner-regression-free" in first and "17/20" in first
    assert "owner: Maria Rossi" in first and "1 of 3 rule(s) fired" in proc.stdout
    refused = th("rules", "resume", "planner-regression-free", "--rules", rules, "-w", wh, "--at", at,
                 "--by", "Bob", "--reason", "looks fine")
    assert refused.returncode == 2 and "only its owner (Maria Rossi)" in refused.stderr
    assert "Traceback" not in refused.stderr
    ok = th("rules", "resume", "planner-accepted", "--rules", rules, "-w", wh, "--at", at,
            "--by", "Maria Rossi", "--reason", "x")
    assert ok.returncode == 2 and "has not fired" in ok.stderr
    done = th("rules", "resume", "planner-regression-free", "--rules", rules, "-w", wh, "--at", at,
              "--by", "maria rossi", "--reason", "two flaky criteria, fixed in evaluator v3")
    assert done.returncode == 0, done.stderr
    after = th("rules", "check", "--rules", rules, "-w", wh, "--at", at, "--json")
    assert after.returncode == 0, after.stdout
    doc = json.loads(after.stdout)
    assert doc["fired"] == []
    (resumed,) = [r for r in doc["rules"] if r["rule"] == "planner-regression-free"]
    assert resumed["status"] == "resumed" and resumed["resumed"]["by"] == "maria rossi"
    assert resumed["resumed"]["reason"] == "two flaky criteria, fixed in evaluator v3"
    again = th("rules", "resume", "planner-regression-free", "--rules", rules, "-w", wh, "--at", at,
               "--by", "Maria Rossi", "--reason", "again")
    assert again.returncode == 2 and "resumed on this evidence already" in again.stderr
    rows = json.loads(th("sql", "-w", wh, "--json", "SELECT rule_id, decided_by, trials, value "
                         "FROM rule_decisions").stdout)
    assert rows == [{"rule_id": "planner-regression-free", "decided_by": "maria rossi", "trials": 20,
                     "value": pytest.approx(0.85)}]


def test_a_new_run_fires_a_resumed_rule_again(guarded: dict, rollout_kit) -> None:
    wh, rules, at = str(guarded["wh"]), str(guarded["rules"]), guarded["at"]
    assert th("rules", "resume", "planner-regression-free", "--rules", rules, "-w", wh, "--at", at,
              "--by", "Maria Rossi", "--reason", "accepted risk").returncode == 0
    k = rollout_kit
    k.write_run(guarded["wh"], "w4", k.T0 + timedelta(days=21), k.week("planner", 9, 1))
    later = (k.T0 + timedelta(days=22)).isoformat()
    proc = th("rules", "check", "--rules", rules, "-w", wh, "--at", later)
    assert proc.returncode == 1 and proc.stdout.startswith("FIRED")
    assert "w3, w4" in proc.stdout.splitlines()[0]


def test_an_edited_rule_is_a_new_rule(guarded: dict) -> None:
    wh, rules, at = str(guarded["wh"]), guarded["rules"], guarded["at"]
    assert th("rules", "resume", "planner-regression-free", "--rules", str(rules), "-w", wh, "--at", at,
              "--by", "Maria Rossi", "--reason", "ok").returncode == 0
    rules.write_text(RULES.replace("below: 0.95", "below: 0.9", 1))
    assert th("rules", "check", "--rules", str(rules), "-w", wh, "--at", at).returncode == 1


@pytest.mark.parametrize(("text", "message"), [
    ("rules: []", "rules: Tuple should have at least 1 item"),
    (RULES.replace("below: 0.95", "below: 95"), "rule 'planner-regression-free': regression_free_rate is a rate: its threshold must be within 0 and 1"),
    (RULES.replace("owner: Ken", "owner: ''"), "rule 'minimal-cost'.owner: give the owner's name"),
    (RULES.replace("metric: accepted_rate", "metric: speed"), "rule 'planner-accepted'.metric"),
    (RULES.replace("unit: runs}\n    scope: {config: planner}\n    owner: [", "unit: weeks}\n    scope: {config: planner}\n    owner: [", 1),
     "rule 'planner-regression-free'.window.unit"),
    ("rules: [\n", "line"),
])
def test_a_bad_rules_file_is_one_line_naming_the_rule_and_field(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    proc = th("rules", "check", "--rules", str(bad), "-w", str(tmp_path / "none.duckdb"))  # read before the warehouse
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"trialhouse: {bad}") and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_an_unknown_configuration_names_the_rule(tmp_path: Path, guarded: dict) -> None:
    rules = tmp_path / "r.yaml"
    rules.write_text(RULES.replace("config: minimal", "config: nobody"))
    proc = th("rules", "check", "--rules", str(rules), "-w", str(guarded["wh"]))
    assert proc.returncode == 2 and "rule 'minimal-cost': configuration 'nobody' not found" in proc.stderr


def test_too_few_trials_and_unknown_cost_are_not_evaluated_and_say_why(tmp_path: Path, rollout_kit) -> None:
    k = rollout_kit
    wh = tmp_path / "trialhouse.duckdb"
    k.write_run(wh, "w1", k.T0, k.week("planner", 3, 0, total=4, cost=None))
    rules = tmp_path / "r.yaml"
    rules.write_text(RULES.replace("owner: Maria Rossi\n", "owner: Maria Rossi\n    min_trials: 10\n")
                     .replace("config: minimal", "config: planner"))
    proc = th("rules", "check", "--rules", str(rules), "-w", str(wh), "--at", (k.T0 + timedelta(days=1)).isoformat())
    assert proc.returncode == 0, proc.stdout
    lines = {line.split()[2]: line for line in proc.stdout.splitlines() if line.startswith("not evaluated")}
    assert "4 trial(s) in the window; the rule needs at least 10" in lines["planner-accepted"]
    assert "cost unknown for 4 of 4 trials" in lines["minimal-cost"]


def test_the_report_opens_with_the_fired_rules_and_their_owner(guarded: dict, tmp_path: Path) -> None:
    from analysis.report import write_report

    paths = write_report(guarded["wh"], tmp_path / "report", rules=guarded["rules"],
                         until=guarded["at"], baseline="minimal")
    md = paths.markdown.read_text()
    sections = [line for line in md.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Stop rules", sections[:3]
    first = md.split("## ", 2)[1]
    assert "STOP: planner-regression-free fired for planner" in first and "17/20" in first
    assert "Owner who may resume: Maria Rossi" in first
    doc = json.loads(paths.json.read_text())
    assert doc["stop_rules"]["fired"] == ["planner-regression-free"]
    html = paths.html.read_text()
    assert html.index('<section id="stop-rules">') < html.index('<section id="headline">')
