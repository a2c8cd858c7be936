"""The columnar runs-jsonl path against the row path, line for line: a file of awkward and
bad lines scattered among good ones gives the same trials (every column) and the same
quarantine (line numbers and reasons) whether DuckDB or pydantic judges the lines."""

from __future__ import annotations

import json
import random

import pytest

from ingest.formats.runs_jsonl import load
from ingest.prices import PriceTable

GOOD_VARIANTS = [
    {},
    {"task_id": 42},
    {"task_id": "t-é-ünï"},
    {"harness_version": None, "steps": None},
    {"cost_usd": 0}, {"cost_usd": 1e-05}, {"cost_usd": 2.5}, {"cost_usd": 3},
    {"wall_seconds": 0.001}, {"wall_seconds": 12},
    {"started_at": "2026-03-01T10:00:00Z"}, {"started_at": "2026-03-01T10:00:00.123456+02:00"},
    {"started_at": "2026-03-01T10:00:00"},  # naive: labelled
    {"started_at": "2026-03-01 10:00:00Z"}, {"started_at": "2026-03-01"},
    {"repo": "o/r", "benchmark": "b"}, {"system_id": "sys-1"}, {"system_id": ""},
    {"failure_mode": 'quote " and \\ backslash'}, {"familiarity": "known"},  # an extra key: a label
    {"failure_mode": "token ghp_" + "a1B2" * 9},  # redacted
    {"model": "m-\u00e9"},
]
BAD_LINES = [
    '{"model": "m", "harness"',                       # truncated
    "[1, 2]", "42", '"text"', "null",
    "NaN",
    # JSON that DuckDB's parser accepts and Python's refuses: trailing commas, a byte-order mark
    '{"model": "m", "harness": "h", "task_id": "tc", "trial": 1, "status": "solved",}',
    '{"model": "m", "harness": "h", "task_id": "tc", "trial": 2, "status": "solved" , \t}',
    '{"model": "m", "harness": "h", "task_id": "tc", "trial": 3, "status": "solved", "x": [1,]}',
    '\ufeff{"model": "m", "harness": "h", "task_id": "bom", "trial": 1, "status": "solved"}',
    '{"model": "m", "harness": "h", "task_id": "nan", "trial": 1, "status": "solved", "cost_usd": NaN}',
]
BAD_FIELDS = [
    {"status": "timeout"}, {"trial": "6"}, {"trial": True}, {"trial": -1}, {"trial": 1.5},
    {"input_tokens": -5}, {"input_tokens": "10"}, {"steps": 2**70}, {"trial": 2**40},
    {"cost_usd": -1}, {"cost_usd": "0.5"}, {"wall_seconds": float("inf")},
    {"model": None}, {"harness": 7}, {"started_at": "yesterday"}, {"task_id": 1.5},
    {"task_id": "\ud800"}, {"model": "m\u0001"},
]


def _file(tmp_path, n: int, seed: int = 7):
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        base = {"model": f"model-{i % 3}", "harness": f"h{i % 2}", "harness_version": "1.0",
                "task_id": f"task-{i // 6}", "trial": i % 6, "status": rng.choice(["solved", "failed", "infra_error"]),
                "input_tokens": rng.randrange(1, 10_000), "output_tokens": rng.randrange(1, 1000),
                "steps": rng.randrange(1, 50)}
        r = rng.random()
        if r < 0.02:
            lines.append(rng.choice(BAD_LINES))
        elif r < 0.05:
            lines.append(json.dumps({**base, **rng.choice(BAD_FIELDS)}))
        elif r < 0.06:
            lines.append("" if rng.random() < 0.5 else "   ")
        elif r < 0.07 and lines:
            lines.append(lines[-1])  # a duplicate (or a repeated bad line)
        elif r < 0.08:
            lines.append(json.dumps({**base, **rng.choice(GOOD_VARIANTS)}, ensure_ascii=False))
        elif r < 0.09:
            lines.append('{"model": "a", "model": "b", "harness": "h", "task_id": "d", "trial": '
                         f'{i}, "status": "solved"}}')  # a repeated key: the last wins, as in json.loads
        elif r < 0.4:
            lines.append(json.dumps({**base, **rng.choice(GOOD_VARIANTS)}))
        else:
            lines.append(json.dumps(base))
    p = tmp_path / "runs.jsonl"
    p.write_text("\r\n".join(lines[: n // 2]) + "\n" + "\n".join(lines[n // 2:]) + "\n", encoding="utf-8")
    return p


@pytest.fixture
def prices(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text(json.dumps({"models": {
        "model-0": {"input_per_mtok": 3.0, "output_per_mtok": 15.0},
        "model-1": [{"input_per_mtok": 1.0, "output_per_mtok": 2.0, "effective_from": "2026-01-01"},
                    {"input_per_mtok": 2.0, "output_per_mtok": 4.0, "effective_from": "2026-03-01"}]}}))
    return PriceTable.load(p)


def _rows(batch, table):
    return batch.table_rows(table)


def test_columnar_and_row_paths_agree_on_every_line(tmp_path, prices):
    path = _file(tmp_path, 6000)
    [fast] = load(path, prices)
    [slow] = load(path, prices, row_path_only=True)
    assert len(_rows(fast, "trials")) > 4000
    for table in ("trials", "attempts", "configs", "cases", "runs"):
        a, b = _rows(fast, table), _rows(slow, table)
        if table == "runs":
            a, b = [{**r, "details_json": None} for r in a], [{**r, "details_json": None} for r in b]
        assert len(a) == len(b), table
        for x, y in zip(a, b, strict=True):
            assert x == y, (table, {k: (x[k], y.get(k)) for k in x if x[k] != y.get(k)})
    assert [(q.line, q.reason, q.raw_text) for q in fast.quarantine] == \
           [(q.line, q.reason, q.raw_text) for q in slow.quarantine]
    reasons = " ".join(q.reason for q in fast.quarantine)
    for what in ("invalid JSON", "not a JSON object", "unknown status", "duplicate", "trials row:"):
        assert what in reasons
    assert fast.notes == slow.notes


def test_most_lines_take_the_columnar_path(tmp_path, prices, monkeypatch):
    """The speed comes from lines never becoming Python objects: count the row-path calls."""
    from ingest.formats import runs_jsonl

    path = _file(tmp_path, 3000)
    calls = []
    real = runs_jsonl.row_record
    monkeypatch.setattr(runs_jsonl, "row_record", lambda *a: calls.append(a[0]) or real(*a))
    [b] = load(path, prices)
    assert len(calls) < 0.2 * 3000 and len(b.quarantine) > 0


@pytest.mark.parametrize("pad", range(3))
def test_a_bad_line_whose_duckdb_error_cuts_a_character(tmp_path, pad):
    """DuckDB's error for a line that is not JSON quotes the line's first bytes, cut at a byte
    count: through a multi-byte character, the message is not UTF-8 and the Python binding
    raises UnicodeDecodeError instead of its own error (duckdb-python#93). The line must
    still be quarantined as the row path quarantines it, and the rest load (the fuzzer's
    finding: a traceback). Three offsets, so the cut falls inside a character."""
    good = [json.dumps({"model": "m", "harness": "h", "task_id": f"t{i}", "trial": 1, "status": "solved"})
            for i in range(3)]
    bad = '{"model" : "model-0" , "harness" : "h0" ,' + " " * pad + "\u00e9" * 40 + "}"
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join([good[0], bad, *good[1:]]) + "\n", encoding="utf-8")
    [fast] = load(path)
    [slow] = load(path, row_path_only=True)
    assert len(_rows(fast, "trials")) == 3
    assert [(q.line, q.reason) for q in fast.quarantine] == [(q.line, q.reason) for q in slow.quarantine]
    assert [q.line for q in fast.quarantine] == [2] and "invalid JSON" in fast.quarantine[0].reason
