"""A runs-jsonl log shaped like the benchmark's 2M-line file (4 models × 3 harnesses × tasks ×
5 trials, every field), 50k lines here, with bad lines scattered through it at known places:
each is quarantined at its exact line number with the row path's reason, everything else
loads, unknown stays null, and a second ingest of the same file writes nothing."""

from __future__ import annotations

import json
import random

import duckdb
import pytest

from ingest.api import ingest_paths
from ingest.formats import runs_jsonl, runs_jsonl_row
from ingest.prices import PriceTable

LINES = 50_000

# (line text from a good line, what its reason must say)
BAD = [
    (lambda d: json.dumps(d)[:40], "invalid JSON"),
    (lambda d: json.dumps({**d, "status": "timeout"}), "unknown status 'timeout'"),
    (lambda d: json.dumps({**d, "input_tokens": -3}), "input_tokens: Input should be greater than or equal to 0"),
    (lambda d: json.dumps({**d, "trial": 1.5}), "trial: Input should be a valid integer"),
    (lambda d: json.dumps({**d, "trial": "2"}), "trial: Input should be a valid integer"),
    (lambda d: json.dumps({**d, "cost_usd": float("nan")}), "cost_usd"),
    (lambda d: json.dumps({**d, "model": 7}), "model: Input should be a valid string"),
    (lambda d: json.dumps([d]), "not a JSON object"),
    (lambda d: json.dumps({**d, "started_at": "last tuesday"}), "started_at"),
]


def _good(rng: random.Random, m: int, h: int, t: int, k: int) -> dict:
    status = rng.choices(("solved", "failed", "infra_error"), (5, 4, 1))[0]
    line = {"model": f"model-{'abcd'[m]}", "harness": f"harness-{h}", "harness_version": "1.0.0",
            "task_id": f"task-{t:06d}", "trial": k, "status": status,
            "input_tokens": rng.randrange(1000, 200_000), "output_tokens": rng.randrange(100, 20_000),
            "steps": rng.randrange(1, 80), "repo": f"org-{t % 12}/repo-{t % 12}", "benchmark": "bench-b",
            "wall_seconds": round(rng.uniform(5, 900), 3),
            "started_at": f"2026-03-{1 + t % 28:02d}T{k:02d}:{m:02d}:{h:02d}Z"}
    if rng.random() < 0.05:
        line["cost_usd"] = round(rng.uniform(0.01, 3.0), 4)
    if rng.random() < 0.02:
        line["input_tokens"] = None  # unknown: stays null
    if status != "solved":
        line["failure_mode"] = "tests_failed" if status == "failed" else "sandbox_lost"
    return line


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    """The file, the line numbers of its bad lines with the reason each must give, and its
    number of valid trials."""
    rng = random.Random(2026)
    tasks = LINES // (4 * 3 * 5)
    lines = [json.dumps(_good(rng, m, h, t, k)) for m in range(4) for h in range(3)
             for t in range(tasks) for k in range(1, 6)]
    expect: dict[int, str] = {}
    spots = sorted(rng.sample(range(10, len(lines)), 240))
    for i, spot in enumerate(spots):
        if i % 10 == 9:  # a duplicate of an earlier good line
            source = next(j for j in range(spot - 1, 0, -1) if j + 1 not in expect and lines[j])
            lines[spot] = lines[source]
            expect[spot + 1] = f"duplicate (configuration, task, trial) of line {source + 1}"
        elif i % 10 == 8:
            lines[spot] = ""  # blank: skipped, not quarantined
        else:
            make, why = BAD[i % len(BAD)]
            lines[spot] = make(json.loads(lines[spot]))
            expect[spot + 1] = why
    path = tmp_path_factory.mktemp("scale") / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    prices = path.with_name("prices.json")
    prices.write_text(json.dumps({f"model-{c}": {"input_per_mtok": 3.0, "output_per_mtok": 15.0} for c in "abcd"}))
    blank = sum(1 for x in lines if not x)
    return path, PriceTable.load(prices), expect, len(lines) - blank - len(expect)


def test_bad_lines_scattered_through_a_large_log_are_quarantined_at_their_lines(log):
    path, prices, expect, valid = log
    [b] = runs_jsonl.load(path, prices)
    got = {q.line: q.reason for q in b.quarantine}
    assert sorted(got) == sorted(expect)
    for line, why in expect.items():
        assert got[line].startswith(f"line {line}: ") and why in got[line], (line, got[line])
    trials = b.tables["trials"]
    assert trials.num_rows == valid
    assert trials.column("trial_id").unique().__len__() == valid
    # unknown stays null, never 0: no input tokens and no reported cost → no cost
    con = duckdb.connect()
    con.register("t", trials)
    nulls, zeros = con.execute("""SELECT count(*) FILTER (WHERE input_tokens IS NULL AND cost_usd IS NULL),
                                         count(*) FILTER (WHERE input_tokens = 0 OR cost_usd = 0)
                                  FROM t""").fetchone()
    assert nulls > 0 and zeros == 0


def test_the_row_path_gives_the_same_quarantine_and_trials(log):
    path, prices, _expect, _valid = log
    [fast] = runs_jsonl.load(path, prices)
    [slow] = runs_jsonl.load(path, prices, row_path_only=True)
    assert [(q.line, q.reason, q.raw_text) for q in fast.quarantine] == \
           [(q.line, q.reason, q.raw_text) for q in slow.quarantine]
    assert fast.tables["trials"].equals(slow.tables["trials"])
    assert fast.tables["cases"].equals(slow.tables["cases"])


def test_trials_found_by_map_and_by_join_are_the_same(log, monkeypatch):
    """Few configurations and one price per model take DuckDB maps; many, a join and a sort."""
    path, prices, _expect, _valid = log
    [by_map] = runs_jsonl.load(path, prices)
    monkeypatch.setattr(runs_jsonl, "MAP_CONFIGS", 0)
    [by_join] = runs_jsonl.load(path, prices)
    assert by_map.tables["trials"].equals(by_join.tables["trials"])


def test_second_ingest_of_the_same_log_writes_nothing(log, tmp_path):
    path, _prices, expect, valid = log
    wh = tmp_path / "wh" / "w.duckdb"
    first = ingest_paths([path], wh, format="runs-jsonl", allow_quarantine=True)
    again = ingest_paths([path], wh, format="runs-jsonl", allow_quarantine=True)
    assert first.rows["trials"] == valid and first.quarantined == len(expect)
    assert [b.unchanged for b in again.batches] == [True]
    con = duckdb.connect(str(wh), read_only=True)
    lines = sorted(n for (n,) in con.execute("SELECT line FROM quarantine").fetchall())
    assert lines == sorted(expect)
    assert con.execute("SELECT count(*) FROM trials").fetchone()[0] == valid


def test_the_sql_checks_every_field_of_the_line_model():
    from ingest.formats.runs_jsonl_sql import KNOWN_KEYS

    assert KNOWN_KEYS == tuple(runs_jsonl_row.RunLine.model_fields)
