"""Check tiers and the behaviour bank on a real run (the shared ``real_rollout``: regression
checks broad, a scheduled copy of each target check, a bank of tagged checks two cases draw
from) and its ``run --tier scheduled`` regrade: tiers run when they should, asserted from the
grading events; the bank's draw is recorded and reproducible from its seed; results by tier
and by tag equal counts taken from the events."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import defaultdict
from contextlib import closing
from typing import Any

from statsmodels.stats.proportion import proportion_confint


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
    assert {k for k, _ in got} == {"reference", "sim-beta-minimal", "sim-weak"}
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
