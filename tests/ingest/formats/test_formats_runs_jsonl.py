from __future__ import annotations

import json
from collections import Counter

import pytest

from ingest.errors import IngestError
from ingest.formats import load
from ingest.prices import PriceTable

from .conftest import EXAMPLES, check_tables, labels, rows_of

BASE = {"model": "model-a", "harness": "minimal-shell", "harness_version": "1.2.0",
        "task_id": "fix-permissions", "trial": 1, "status": "solved",
        "input_tokens": 1_000_000, "output_tokens": 100_000, "steps": 14}


def row(**kw):
    return {**BASE, **kw}


@pytest.fixture
def prices(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text(json.dumps({"model-a": {"input_per_mtok": 3.0, "output_per_mtok": 15.0}}))
    return PriceTable.load(p)


def test_maps_statuses_tokens_and_cost(write_lines, prices):
    path = write_lines([
        row(),
        row(trial=2, status="failed", failure_mode="tests_failed", cost_usd=0.25, repo="acme/x", benchmark="b1"),
        row(trial=3, status="infra_error", input_tokens=None, output_tokens=None, steps=None, harness_version=None),
        row(model="model-z", trial=1),  # no price for this model
    ])
    [b] = load(path, "runs-jsonl", prices)
    check_tables(b)
    assert b.source_format == "runs-jsonl" and b.run_id.startswith("runs-jsonl-")
    t = rows_of(b, "trials")
    assert [r["outcome"] for r in t] == ["accepted", "target_failed", "infra_error", "accepted"]
    assert [r["repetition"] for r in t] == [1, 2, 3, 1]
    # priced = 1M × 3 + 0.1M × 15 = 4.5
    assert t[0]["cost_usd"] == pytest.approx(4.5) and t[0]["cost_source"] == "priced"
    assert t[1]["cost_usd"] == 0.25 and t[1]["cost_source"] == "reported"  # reported wins
    assert t[1]["failure_mode"] == "tests_failed"
    # unknown stays null, never 0
    assert t[2]["input_tokens"] is None and t[2]["steps"] is None and t[2]["cost_usd"] is None
    assert t[2]["cost_source"] is None and labels(t[2])["cost_unpriced"] is True
    assert t[2]["harness_version"] is None
    assert t[3]["cost_usd"] is None
    assert len({r["trial_id"] for r in t}) == 4
    # harness_version None is its own configuration, model-z another
    assert len(b.rows["configs"]) == 3
    [case] = b.table_rows("cases")
    assert case["repository"] == "acme/x" and case["benchmark"] == "b1" and case["holdout"] is False
    assert [a["attempt"] for a in rows_of(b, "attempts")] == [1, 1, 1, 1]
    assert b.rows["runs"][0]["prices_as_of"] is None
    assert not b.quarantine


def test_without_prices_cost_is_null_unless_reported(write_lines):
    path = write_lines([row(), row(trial=2, cost_usd=0.0)])
    [b] = load(path, "runs-jsonl")
    t = rows_of(b, "trials")
    assert t[0]["cost_usd"] is None and t[0]["cost_source"] is None
    assert t[1]["cost_usd"] == 0.0 and t[1]["cost_source"] == "reported"
    assert any("prices file" in n for n in b.notes)


def test_bad_lines_quarantined_with_line_numbers(write_lines, prices):
    path = write_lines([
        row(),                                   # 1 ok
        row(status="timeout", trial=2),          # 2 unknown status
        row(),                                   # 3 duplicate of 1
        row(trial=4, input_tokens=-5),           # 4 negative tokens
        '{"model": "model-a", "harness": "minimal-shell", "harness_version": "1.2.0", "task_id": "t", "trial": 5, '
        '"status": "solved", "input_tokens": 1, "output_tokens": 1, "steps": 1, "cost_usd": NaN}',  # 5 NaN cost
        row(trial="6"),                          # 6 wrong type
        row(input_tokens="1000", trial=7),       # 7 wrong type (string tokens)
        '{"model": "model-a", "harness"',        # 8 truncated JSON
        "[1, 2]",                                # 9 not an object
        row(trial=10, steps=None),               # 10 ok
    ])
    [b] = load(path, "runs-jsonl", prices)
    check_tables(b)
    by_line = {q.line: q.reason for q in b.quarantine}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8, 9]
    assert "unknown status 'timeout'" in by_line[2] and by_line[2].startswith("line 2:")
    assert "duplicate" in by_line[3] and "line 1" in by_line[3]
    assert "input_tokens" in by_line[4]
    assert "cost_usd" in by_line[5]
    assert "trial" in by_line[6]
    assert "input_tokens" in by_line[7]
    assert "invalid JSON" in by_line[8]
    assert all(q.source_file == str(path) and q.raw_text for q in b.quarantine)
    assert [r["repetition"] for r in rows_of(b, "trials")] == [1, 10]


def test_stable_ids_across_reingest(write_lines):
    path = write_lines([row(), row(trial=2)])
    [a] = load(path, "runs-jsonl")
    [b] = load(path, "runs-jsonl")
    assert a.run_id == b.run_id
    assert [r["trial_id"] for r in rows_of(a, "trials")] == [r["trial_id"] for r in rows_of(b, "trials")]
    assert a.rows["configs"][0]["config_id"] == b.rows["configs"][0]["config_id"]


def test_system_id_separates_configurations(write_lines):
    path = write_lines([row(system_id="sys-1"), row(system_id="sys-2")])
    [b] = load(path, "runs-jsonl")
    assert len(b.rows["configs"]) == 2 and not b.quarantine


def test_empty_file_and_missing_path(write_lines, tmp_path):
    with pytest.raises(IngestError, match="empty"):
        load(write_lines([]), "runs-jsonl")
    with pytest.raises(IngestError, match="no such file"):
        load(tmp_path / "absent.jsonl", "runs-jsonl")
    with pytest.raises(IngestError, match="unknown format"):
        load(tmp_path, "csv")


def test_example_file_loads_cleanly():
    prices = PriceTable.load(EXAMPLES / "prices.json")
    [b] = load(EXAMPLES / "runs.jsonl", "runs-jsonl", prices)
    check_tables(b)
    t = rows_of(b, "trials")
    assert len(t) == 360 and not b.quarantine
    assert len(b.rows["configs"]) == 6 and len(b.table_rows("cases")) == 20
    src = Counter(r["cost_source"] for r in t)
    assert src["priced"] > 0 and src["reported"] > 0 and src[None] > 0
    # model-c has null prices: it is never priced, only reported or unknown
    assert all(r["cost_source"] != "priced" for r in t if r["model"] == "model-c")
    assert b.rows["runs"][0]["prices_as_of"] == "2026-02-15"
