from __future__ import annotations

import json
import shutil

import pytest

from ingest.errors import IngestError
from ingest.formats import detect_format, load
from ingest.formats.harbor import outcome_for
from ingest.prices import PriceTable

from .conftest import EXAMPLES, FIXTURES, check_tables, labels

JOB = FIXTURES / "harbor" / "2026-01-10__12-00-00"


def _by(b):
    return {(r["case_id"], r["repetition"]): r for r in b.rows["trials"]}


def test_job_maps_trials_outcomes_and_tokens():
    [b] = load(JOB, "harbor")
    check_tables(b)
    t = _by(b)
    assert len(t) == 8  # the running trial without result.json is not a trial
    assert any("still-running" in n for n in b.notes)
    assert {k: r["outcome"] for k, r in t.items()} == {
        ("hello-world", 1): "accepted",
        ("hello-world", 2): "target_failed",
        ("fix-git-history-after-bad-rebase", 1): "accepted",
        ("fix-git-history-after-bad-rebase", 2): "budget_exhausted",
        ("build-kernel", 1): "infra_error",  # grader wrote no reward
        ("build-kernel", 2): "infra_error",  # environment never started
        ("parse-logs", 1): "target_failed",  # partial reward 0.5
        ("parse-logs", 2): "accepted",  # agent exit code, but valid passing reward
    }
    assert labels(t[("fix-git-history-after-bad-rebase", 1)])["limit_hit"] == "time"
    assert labels(t[("parse-logs", 1)])["partial"] is True
    hw = t[("hello-world", 1)]
    # n_input_tokens (52000) includes the 30000 cache reads
    assert (hw["input_tokens"], hw["cache_read_tokens"], hw["output_tokens"]) == (22000, 30000, 2100)
    assert hw["cost_usd"] == pytest.approx(0.0912) and hw["cost_source"] == "reported"
    assert (hw["setup_s"], hw["agent_s"], hw["verification_s"]) == (55.0, 300.0, 25.0)
    env = t[("build-kernel", 2)]
    assert env["input_tokens"] is None and env["output_tokens"] is None and env["cost_usd"] is None
    # cost 0 next to tokens means unpriced, not free
    pl = t[("parse-logs", 1)]
    assert pl["cost_usd"] is None and labels(pl)["cost_unpriced"] is True
    [cfg] = b.rows["configs"]
    assert (cfg["model"], cfg["harness"], cfg["harness_version"]) == ("model-a", "terminus-2", "2.0.0")
    run = b.rows["runs"][0]
    assert run["engine_version"] == "0.26.0" and run["run_cost_usd"] == pytest.approx(1.2056)
    assert run["repetitions"] == 2
    assert {c["benchmark"] for c in b.rows["cases"]} == {"terminal-bench"}


def test_repetition_follows_started_at_and_ids_are_stable():
    [a] = load(JOB, "harbor")
    [b] = load(JOB, "harbor")
    assert a.run_id == b.run_id
    assert [r["trial_id"] for r in a.rows["trials"]] == [r["trial_id"] for r in b.rows["trials"]]
    hw = sorted((r["started_at"], r["repetition"]) for r in a.rows["trials"] if r["case_id"] == "hello-world")
    assert [rep for _, rep in hw] == [1, 2]


def test_prices_fill_missing_cost_from_uncached_and_cache(tmp_path):
    p = tmp_path / "p.json"
    p.write_text(json.dumps({"model-a": {"input_per_mtok": 1.0, "output_per_mtok": 10.0, "cached_input_per_mtok": 0.1}}))
    [b] = load(JOB, "harbor", PriceTable.load(p))
    pl = _by(b)[("parse-logs", 1)]
    assert pl["cost_source"] == "priced"
    assert pl["cost_usd"] == pytest.approx((20000 * 1.0 + 3000 * 10.0 + 50000 * 0.1) / 1e6)
    # unknown cache split → not priced
    assert _by(b)[("build-kernel", 1)]["cost_usd"] is None


def test_single_trial_dir_and_corrupt_trial(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    (job / "hello-world__00ab1cd" / "result.json").write_text('{"trial_name": ')
    [b] = load(job, "harbor")
    assert len(b.rows["trials"]) == 7
    assert len(b.quarantine) == 1 and "hello-world__00ab1cd" in b.quarantine[0].source_file
    assert detect_format(job / "parse-logs__06ab1cd") == "harbor"
    [one] = load(job / "parse-logs__06ab1cd", "harbor")
    assert len(one.rows["trials"]) == 1


def test_empty_dir_is_an_error(tmp_path):
    with pytest.raises(IngestError, match="no Harbor trial results"):
        load(tmp_path, "harbor")


@pytest.mark.parametrize(
    ("result", "reward", "outcome"),
    [
        ({"exception_info": {"exception_type": "BudgetExceededError", "policy": {"has_valid_reward": False}}}, None, "budget_exhausted"),
        ({"exception_info": {"exception_type": "ApiRateLimitError", "policy": {"has_valid_reward": False}}}, None, "infra_error"),
        ({"exception_info": {"exception_type": "SomethingNew", "policy": {"has_valid_reward": True}}}, 0.0, "target_failed"),
        ({"exception_info": {"exception_type": "SomethingNew", "policy": {"has_valid_reward": True},
                             "policy_override": {"has_valid_reward": False}}}, 1.0, "infra_error"),
        ({"reward_valid": False}, 1.0, "infra_error"),
        ({}, None, "infra_error"),
    ],
)
def test_outcome_rules(result, reward, outcome):
    assert outcome_for(result, reward)[0] == outcome


def test_example_job_matches_fixture():
    [b] = load(EXAMPLES / "harbor-job", "harbor")
    assert len(b.rows["trials"]) == 8


def test_jobs_directory_gives_one_batch_per_job(tmp_path):
    for name in ("job-a", "job-b"):
        shutil.copytree(JOB, tmp_path / name)
    assert detect_format(tmp_path) == "harbor"
    batches = load(tmp_path, "harbor")
    assert [len(b.rows["trials"]) for b in batches] == [8, 8]
    assert len({b.run_id for b in batches}) == 2
