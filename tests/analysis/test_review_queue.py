"""The review loop closes (issue 32, item 4): baselines never steer the inspection queue,
and failure categories from reviewers, annotators and judges reach ``failures`` with who
assigned them, their disagreements listed, and ``review summary`` counting the same."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from analysis import failures, review

A, R = "accepted", "target_failed"


def _trial(cfg: str, case: str, rep: int, outcome: str, duration: float, kind: str | None = None,
           cost: float = 0.01) -> dict:
    return {"config_id": cfg, "variant": cfg, "case_id": case, "rep": rep, "outcome": outcome,
            "duration_s": duration, "agent_kind": kind, "cost_usd": cost,
            "trial_id": f"{case}__{cfg}__r{rep}"}


def test_baselines_never_steer_the_queue(wh):
    """The reference agent solves every case in no time: with it counted, no case is ever
    failed by "every configuration" and the oracle fills the fast-success queue."""
    trials = []
    for rep in (1, 2):
        trials += [_trial("reference", c, rep, A, 0.01, "reference") for c in ("t1", "t2")]
        trials += [_trial("null", c, rep, R, 50.0, "null") for c in ("t1", "t2")]
        for cfg in ("alpha", "beta"):
            trials.append(_trial(cfg, "t1", rep, R, 40.0))
            trials.append(_trial(cfg, "t2", rep, A, 1.0 if (cfg, rep) == ("beta", 2) else 30.0))
    queue = review.inspect_queue(wh(trials)).to_dicts()
    fails = [q for q in queue if q["kind"] == "every_configuration_fails"]
    assert [q["case_id"] for q in fails] == ["t1"]
    fast = {q["trial_id"] for q in queue if q["kind"] == "fast_success"}
    # the agents' median on t2 is 30 s: beta's 1 s trial is fast; the oracle's 0.01 s ones
    # would be too, against any median, and are never listed
    assert fast == {"t2__beta__r2"}


def test_categories_from_every_assigner_reach_failures(wh):
    ts = datetime(2026, 3, 1, tzinfo=UTC)
    trials = [_trial("alpha", f"t{i}", 1, R, 10.0, cost=0.1) for i in range(3)]
    reviews = [{"trial_id": "t0__alpha__r1", "trial_run_id": "r1", "reviewer": "bob",
                "decision": "reject", "grader_verdict": "reject", "failure_category": "verification",
                "reviewed_at": ts, "source_line": 2}]
    judgments = [
        {"trial_id": "t0__alpha__r1", "kind": "failure_category", "category": "implementation",
         "verdict": "implementation", "annotator": "carol", "ts": ts},
        {"trial_id": "t1__alpha__r1", "kind": "judge", "verdict": "failed", "category":
         "task_interpretation", "annotator": "model-j", "judge_host": "builtin", "attempt": 1,
         "ts": ts},
        {"trial_id": "t2__alpha__r1", "kind": "review_decision", "verdict": "accept",
         "annotator": "dana", "ts": ts},
    ]
    con = wh(trials, judgments=judgments, extra_tables={"reviews": reviews})
    res = failures.failures(con)
    cats = {(r["value"], r["assigned_by"], r["annotator"]): (r["count"], r["lost_spend_usd"])
            for r in res.rows if r["dimension"] == "category"}
    assert cats == {("verification", "reviewer", "bob"): (1, pytest.approx(0.1)),
                    ("implementation", "annotator", "carol"): (1, pytest.approx(0.1)),
                    ("task_interpretation", "judge", "builtin model-j"): (1, pytest.approx(0.1))}
    (dis,) = res.category_disagreements
    assert dis["trial_id"] == "t0__alpha__r1"
    assert dis["categories"] == ["annotator:carol=implementation", "reviewer:bob=verification"]
    by = {(r["category"], r["assigned_by"]): (r["trials"], r["lost_spend_usd"])
          for r in review.categories_by_assigner(con).to_dicts()}
    assert by == {(c, f"{who}:{name}"): v for (c, who, name), v in cats.items()}
    # a decision from annotate disagrees with the grader: every surface lists it
    listed = failures.review_disagreements(con).rows
    assert [(r["trial_id"], r["annotator"], r["source"]) for r in listed] == [
        ("t2__alpha__r1", "dana", "annotation")]
    agreement = review.agreement(con).to_dicts()
    assert sum(r["disagreements"] for r in agreement) == 1
    queue = review.inspect_queue(con).to_dicts()
    assert [q["trial_id"] for q in queue if q["kind"] == "review_disagreement"] == ["t2__alpha__r1"]
