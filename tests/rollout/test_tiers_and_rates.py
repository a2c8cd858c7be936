"""Dashboard rates, check tiers and the behaviour bank, on one real run (``real_rollout``: two
cases of the example corpus, the reference and a weak simulated configuration; regression
checks broad, a scheduled copy of each target check, a bank of tagged checks both cases draw
from) and its ``run --tier scheduled`` regrade. One module, so the run is made once per
worker (``--dist loadfile``).

- The rates equal an independent computation from the run's own events and a reviews file
  (statsmodels' Wilson, a numpy delta-method ratio interval), in ``summarize --rates``, the
  report and the stop rules (one definition of regression-free).
- Tiers run when they should, asserted from the grading events; the bank's draw is recorded
  and reproducible from its seed; results by tier and by tag equal counts from the events.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections import defaultdict
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import t as student_t
from statsmodels.stats.proportion import proportion_confint

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')


def th(*args: str) -> Any:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


def _tiers(events: list[dict]) -> dict[tuple[str, str], str]:
    """(case, criterion) → tier, from the run header."""
    head = events[0]
    return {(c["case_id"], k["criterion_id"]): k["tier"] for c in head["cases"] for k in c["criteria"]}


def _attempts(events: list[dict]) -> dict[tuple[str, int], list[dict]]:
    out: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for e in events:
        if e["event"] == "grading" and e.get("trial_id"):
            out[(e["trial_id"], e["attempt"])].append(e)
    return out


def test_tiers_run_when_they_should(real_rollout) -> None:
    tiers = _tiers(real_rollout.events)
    outcome = {e["trial_id"]: e["outcome"] for e in real_rollout.events if e["event"] == "trial_finished"}
    broad_of = defaultdict(set)
    for (case, cid), tier in tiers.items():
        if tier == "broad":
            broad_of[case].add(cid)
    retried_on_fast = 0
    for (trial, _attempt), gs in _attempts(real_rollout.events).items():
        case = trial.split("__")[0]
        graded = {tiers[(case, g["criterion_id"])]: [] for g in gs}
        for g in gs:
            graded[tiers[(case, g["criterion_id"])]].append(g)
        assert "scheduled" not in graded  # never in a trial
        final = gs[0]["final"]
        fast_passed = all(g["verdict"] == "passed" for g in graded["fast"])
        if final or fast_passed:  # the broad tier ran, every check of it
            assert {g["criterion_id"] for g in graded.get("broad", [])} == broad_of[case], (trial, final)
        else:  # a retry comes on the fast tier's findings alone
            assert "broad" not in graded
            retried_on_fast += 1
        if final and outcome[trial] == "accepted":  # acceptance needs the broad tier
            assert all(g["verdict"] == "passed" for g in graded["broad"])
    assert retried_on_fast >= 1  # the corpus cut has a failed fast tier with an attempt left
    head = real_rollout.scheduled[0]
    assert head["tier"] == "scheduled" and head["regrade_of"] == real_rollout.run_id
    nightly = {(e["trial_id"], e["criterion_id"]) for e in real_rollout.scheduled
               if e["event"] == "grading" and e.get("trial_id") and e["criterion_id"].endswith("-nightly")}
    trials = {e["trial_id"] for e in real_rollout.events if e["event"] == "trial_finished"}
    assert {t for t, _c in nightly} == trials  # every kept final state got its scheduled check


def test_the_bank_draw_is_recorded_and_reproducible(real_rollout) -> None:
    from runner.bank import draw
    from runner.validate import load_valid_manifest
    from tests.rollout.conftest import BANK, DRAWS  # the fixture's own declarations

    recorded = real_rollout.events[0]["bank"]
    assert recorded == real_rollout.scheduled[0]["bank"]  # another run, the same draw
    _manifest, again = draw(load_valid_manifest(real_rollout.manifest))
    assert again is not None and again.model_dump() == recorded
    tags = {cid: {"subsystem": sub, "mechanism": mech} for cid, _c, sub, mech, _x, _i in BANK}
    for case, spec in DRAWS.items():
        expected = [cid for cid, *_ in BANK
                    if all(tags[cid][key] in values for key, values in spec["tags"].items())]
        assert recorded["matched"][case] == expected
        rest = [cid for cid, *_ in BANK if cid not in expected]
        ranked = sorted(rest, key=lambda c: hashlib.sha256(f"20261206/{case}/{c}".encode()).hexdigest())
        assert recorded["sampled"][case] == [c for c in rest if c in ranked[:spec["sample"]]]
    head = {c["case_id"]: c for c in real_rollout.events[0]["cases"]}
    banked = {k["criterion_id"] for k in head["order-quantity-validation"]["criteria"] if k["banked"]}
    assert banked == set(recorded["matched"]["order-quantity-validation"]
                         + recorded["sampled"]["order-quantity-validation"])


def test_results_by_tier_and_tag_equal_the_events(real_rollout) -> None:
    tiers = _tiers(real_rollout.events)
    variant = {e["trial_id"]: e["variant"] for e in real_rollout.events if e["event"] == "trial_started"}
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for e in real_rollout.events:
        if e["event"] == "grading" and e.get("trial_id") and e["final"]:
            c = counts[(variant[e["trial_id"]], tiers[(e["trial_id"].split("__")[0], e["criterion_id"])])]
            c[0] += e["verdict"] == "passed"
            c[1] += 1
    out = json.loads(th("summarize", "--checks", "--json", "-w", str(real_rollout.wh),
                        "--run", real_rollout.run_id).stdout)
    got = {(r["variant"], r["value"]): r for r in out["rows"]}
    assert {k for k, _ in got} == {"reference", "sim-weak"}
    assert set(got) == set(counts) and all(r["graded_in"] == "trial" for r in got.values())
    for key, (k, n) in counts.items():
        low, high = proportion_confint(k, n, method="wilson")
        assert (got[key]["passed"], got[key]["checks"]) == (k, n)
        assert abs(got[key]["pass_low"] - low) < 1e-12 and abs(got[key]["pass_high"] - high) < 1e-12
    incidents = json.loads(th("summarize", "--checks", "--by", "tag.incident", "--json", "-w",
                              str(real_rollout.wh)).stdout)
    seen = {r["value"] for r in incidents["rows"]}
    assert {"INC-101", "INC-106", "INC-102"} <= seen  # the drawn bank checks, by the incident they guard
    assert {r["graded_in"] for r in incidents["rows"]} == {"scheduled"}  # the latest grade of each trial


def test_the_report_shows_tiers_and_tags(real_rollout) -> None:
    from analysis.filters import Filters
    from analysis.report.gather import gather
    from analysis.report.sections import check_tiers
    from warehouse import db

    with closing(db.open(real_rollout.wh, read_only=True)) as con:
        data = gather(con, Filters(), window={"since": None, "until": None})
    assert data.checks is not None and set(data.checks) == {"tier", "tag.subsystem", "tag.mechanism",
                                                            "tag.consequence", "tag.incident"}
    section = check_tiers.section(data)
    assert section is not None and [t.caption for t in section.tables][0] == "Checks by tier"
    tiers = {row[2] for row in section.tables[0].rows}
    assert tiers == {"fast", "broad", "scheduled"}


def test_a_manifest_without_tiers_keeps_its_fingerprint() -> None:
    from runner.fingerprint import case_fingerprint
    from runner.manifest import Case

    case = {"id": "c", "prompt": "p", "reference_patch": "r.patch",
            "criteria": [{"id": "t", "command": ["true"]}, {"id": "r", "layer": "regression", "command": ["true"]}]}
    plain = Case.model_validate(case)
    explicit = Case.model_validate({**case, "criteria": [{**k, "tier": "fast", "tags": {"subsystem": "x"}}
                                                         for k in case["criteria"]]})
    broad = Case.model_validate({**case, "criteria": [case["criteria"][0], {**case["criteria"][1], "tier": "broad"}]})

    class M:  # what case_fingerprint reads of a manifest
        variants: list = []
        prepare_commands: list = []
        checkpoint_exclude = None

    fp = [case_fingerprint(M(), c, {}, "0" * 40) for c in (plain, explicit, broad)]  # type: ignore[arg-type]
    assert fp[0] == fp[1] != fp[2]


# -- dashboard rates ---------------------------------------------------------------
REVIEWS = """trial_id,reviewer,decision,reason_code,minutes
order-quantity-validation__reference__r1,alice,accept,,4
order-quantity-validation__reference__r1,bob,accept,,
json-store-atomic-save__reference__r1,alice,accept,,6
json-store-atomic-save__reference__r1,bob,reject,grader_too_lenient,3.5
order-quantity-validation__sim-weak__r1,alice,reject,,7
json-store-atomic-save__sim-weak__r1,bob,reject,,12
"""


@pytest.fixture(scope="module")
def reviewed(real_rollout, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The shared run's warehouse copied, with the reviews above imported."""

    base = tmp_path_factory.mktemp("dashboard")
    wh = base / "trialhouse.duckdb"
    shutil.copytree(real_rollout.wh.parent, base, dirs_exist_ok=True)
    lines = REVIEWS.splitlines()  # the trial ids are in both runs (the regrade's too): name the run
    (base / "reviews.csv").write_text("\n".join([lines[0] + ",run_id"]
                                                + [f"{line},{real_rollout.run_id}" for line in lines[1:]]) + "\n")
    th("review", "import", str(base / "reviews.csv"), "--rubric",
       str(real_rollout.corpus / "reviews" / "grid.yaml"), "-w", str(wh))
    out = json.loads(th("summarize", "--rates", "--json", "-w", str(wh), "--run", real_rollout.run_id).stdout)
    return {"wh": wh, "json": out, "rows": {r["variant"]: r for r in out["rows"]}}


def _expected_rates(events: list[dict]) -> dict[str, dict[str, tuple[int, int]]]:
    """Per variant, (k, n) of each rate straight from the events: final gradings and finishes."""
    variant = {e["trial_id"]: e["variant"] for e in events if e["event"] == "trial_started"}
    outcome = {e["trial_id"]: e["outcome"] for e in events if e["event"] == "trial_finished"}
    final = defaultdict(list)
    for e in events:
        if e["event"] == "grading" and e.get("final") and e.get("trial_id"):
            final[e["trial_id"]].append(e)
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for tid, out in outcome.items():
        if out in ("infra_error", "invalid"):
            continue
        c = counts[variant[tid]]
        c["accepted"][0] += out == "accepted"
        c["accepted"][1] += 1
        target = [g for g in final[tid] if g["layer"] == "target"]
        if target:
            c["target_fix"][0] += all(g["verdict"] == "passed" for g in target)
            c["target_fix"][1] += 1
        before = [g for g in final[tid] if g["layer"] in ("regression", "repository")
                  and g["baseline"] == "passed"]
        if before:
            c["regression_free"][0] += not any(g["verdict"] == "failed" for g in before)
            c["regression_free"][1] += 1
    return {v: {k: (a, b) for k, (a, b) in c.items()} for v, c in counts.items()}


def test_rates_equal_an_independent_computation(real_rollout, reviewed) -> None:
    expected = _expected_rates(real_rollout.events)
    rows = reviewed["rows"]
    assert set(rows) == set(expected) == {"reference", "sim-weak"}
    for variant, rates in expected.items():
        for rate, (k, n) in rates.items():
            row = rows[variant]
            assert (row[rate], row[f"{rate}_n"]) == (k, n), (variant, rate)
            low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert row[f"{rate}_rate"] == pytest.approx(k / n)
            assert (row[f"{rate}_low"], row[f"{rate}_high"]) == (pytest.approx(low), pytest.approx(high))
    weak = rows["sim-weak"]  # the corpus cut is chosen so the rates differ from each other
    assert weak["accepted"] < weak["target_fix"] and weak["regression_free"] < weak["regression_free_n"]


def test_review_minutes_per_accepted_with_a_task_clustered_interval(reviewed) -> None:
    per_case: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for line in REVIEWS.splitlines()[1:]:
        trial, _who, decision, _code, minutes = line.split(",")
        case, variant, _rep = trial.split("__")
        cell = per_case[variant][case]
        cell[0] += float(minutes or 0)
        cell[1] += decision == "accept"
    for variant, cases in per_case.items():
        m, a = np.array([c[0] for c in cases.values()]), np.array([c[1] for c in cases.values()])
        row = reviewed["rows"][variant]
        if a.sum() == 0:
            assert row["review_minutes_per_accepted"] is None
            continue
        r = m.sum() / a.sum()
        g = len(m)
        cov = np.cov(np.vstack([m, a]), ddof=1)  # the delta method for a ratio of means
        se = np.sqrt((cov[0, 0] - 2 * r * cov[0, 1] + r * r * cov[1, 1]) / (g * a.mean() ** 2))
        half = student_t.ppf(0.975, g - 1) * se
        assert row["review_minutes_per_accepted"] == pytest.approx(r)
        assert row["review_minutes_low"] == pytest.approx(max(0.0, r - half))
        assert row["review_minutes_high"] == pytest.approx(r + half)
        assert row["review_tasks"] == g
    ref = reviewed["rows"]["reference"]
    assert (ref["reviewed"], ref["review_minutes_known"], ref["accepted_by_review"]) == (4, 3, 3)
    assert any("review minutes recorded for 3 of 4" in w for w in reviewed["json"]["warnings"])


def report_data(wh: Path, run_id: str) -> Any:
    """What the report lays out (``gather``), without drawing its charts."""
    from analysis.filters import Filters
    from analysis.report.gather import gather
    from warehouse import db

    with closing(db.open(wh, read_only=True)) as con:
        return gather(con, Filters(runs=(run_id,)), window={"since": None, "until": None})


def test_one_definition_for_the_stop_rule_the_report_and_the_terminal(real_rollout, reviewed,
                                                                       tmp_path: Path) -> None:
    from analysis.dashboard import dashboard
    from analysis.report import render
    from analysis.report.sections import dashboard as dashboard_section
    from analysis.rules_check import check_rules
    from analysis.stop_rules import load_rules
    from warehouse import db

    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - id: weak-regression-free\n    metric: regression_free_rate\n"
                     "    below: 0.95\n    window: {last: 2, unit: runs}\n    scope: {config: sim-weak}\n"
                     "    owner: Maria\n")
    with closing(db.open(reviewed["wh"], read_only=True)) as con:  # both runs: the regrade's trials
        fired = check_rules(con, load_rules(rules)).results[0]
        whole = {r["variant"]: r for r in dashboard(con).rows}
    assert (fired.k, fired.n) == (whole["sim-weak"]["regression_free"], whole["sim-weak"]["regression_free_n"])
    weak = reviewed["rows"]["sim-weak"]
    data = report_data(reviewed["wh"], real_rollout.run_id)
    doc = render.document(data, title="t", version="0", warehouse="w", generated_at="now", charts={},
                          skipped={})
    assert doc["dashboard"]["rows"] == reviewed["json"]["rows"]
    section = dashboard_section.section(data)
    assert section is not None and section.tables[0].columns[-1].name == "review min / accepted [95% CI]"
    table = th("summarize", "--rates", "-w", str(reviewed["wh"]), "--run", real_rollout.run_id).stdout
    k, n = weak["target_fix"], weak["target_fix_n"]
    assert f"{k}/{n} ({100 * k / n:.0f}%)" in table and "sim-weak" in table


def test_a_bank_checks_files_are_inputs_of_the_run() -> None:
    from runner.paths import input_refs

    raw = {"cases": [{"reference_patch": "r.patch", "criteria": [{"command": ["true"]}],
                      "bank": {"tags": {"subsystem": ["x"]}}}],
           "bank": {"checks": [{"id": "b", "command": ["python3", "{inputs}/graders/bank_only.py"],
                                "files": ["graders/bank_data.json"]}]}}
    refs = {(r.location, r.rel) for r in input_refs(raw)}
    assert ("bank.checks[0].files[0]", "graders/bank_data.json") in refs
    assert ("bank.checks[0].command[1]", "graders/bank_only.py") in refs
