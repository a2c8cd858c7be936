"""The columnar runs-jsonl path against the row path on mutated lines (``tests/fuzz/
runs_jsonl_diff.py``; ``make fuzz`` runs many more files): the same trials, quarantine and
notes, line for line. This is how a trailing comma, hour 24 and an offset of +24:00 were
found loading on the columnar path while the row path quarantined them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_path = Path(__file__).resolve().parents[2] / "fuzz" / "runs_jsonl_diff.py"
_spec = importlib.util.spec_from_file_location("runs_jsonl_diff", _path)
diff = importlib.util.module_from_spec(_spec)
sys.modules["runs_jsonl_diff"] = diff
_spec.loader.exec_module(diff)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mutated_files_load_the_same_on_both_paths(tmp_path, seed):
    path = diff.write_file(tmp_path / "runs.jsonl", 2500, seed)
    assert diff.differences(path) == []


def test_the_mutations_reach_both_paths(tmp_path, monkeypatch):
    """The fuzz is only worth something if lines take both paths and both outcomes."""
    from ingest.formats import runs_jsonl

    path = diff.write_file(tmp_path / "runs.jsonl", 2500, 4)
    slow = []
    real = runs_jsonl.row_record
    monkeypatch.setattr(runs_jsonl, "row_record", lambda *a: slow.append(a[0]) or real(*a))
    [b] = runs_jsonl.load(path)
    reasons = " ".join(q.reason for q in b.quarantine)
    assert 300 < len(slow) < 1500  # a third of the lines are mutated; most of the rest is fast
    assert b.tables["trials"].num_rows > 1200
    for what in ("invalid JSON", "duplicate", "started_at", "trials row:", "Field required"):
        assert what in reasons, what


@pytest.mark.parametrize("line, why", [
    ('{"model": "m", "harness": "h", "task_id": "t", "trial": 1, "status": "solved",}', "invalid JSON"),
    ('{"model": "m", "harness": "h", "task_id": "t", "trial": 1, "status": "solved", '
     '"started_at": "2026-03-01T24:00:00Z"}', "started_at"),
    ('{"model": "m", "harness": "h", "task_id": "t", "trial": 1, "status": "solved", '
     '"started_at": "2026-03-01T10:00:00+24:00"}', "started_at"),
])
def test_what_the_fuzz_found_is_quarantined(tmp_path, line, why):
    from ingest.formats.runs_jsonl import load

    good = '{"model": "m", "harness": "h", "task_id": "g", "trial": 1, "status": "solved"}'
    path = tmp_path / "runs.jsonl"
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")
    [b] = load(path)
    assert b.tables["trials"].num_rows == 1
    assert [(q.line, why in q.reason) for q in b.quarantine] == [(2, True)]


@pytest.mark.parametrize("block", [8192, 65536])
def test_a_file_read_in_small_blocks_loads_as_in_one(tmp_path, monkeypatch, block):
    """Blocks of lines (``runs_jsonl_lines.line_blocks``) change nothing: the same trials and cases,
    the same quarantine line for line (duplicates of a line in an earlier block too), and lines
    longer than a block are quarantined where they are, the lines after them read."""
    from ingest.formats import runs_jsonl, runs_jsonl_lines

    path = diff.write_file(tmp_path / "runs.jsonl", 1500, 5)
    good = b'{"model": "m", "harness": "h", "task_id": "first", "trial": 1, "status": "solved"}\n'
    long = b'{"model": "m", "harness": "h", "task_id": "' + b"x" * 3000 + b'", "trial": 1, "status": "solved"}\n'
    path.write_bytes(good + path.read_bytes() + long + good)  # the last line repeats the first
    monkeypatch.setattr(runs_jsonl_lines, "LINE_MAX", 2048)  # below the smallest block, as in use
    [whole] = runs_jsonl.load(path)
    monkeypatch.setattr(runs_jsonl_lines, "BLOCK_BYTES", block)
    [split] = runs_jsonl.load(path)
    assert [(q.line, q.reason, q.raw_text) for q in split.quarantine] == \
           [(q.line, q.reason, q.raw_text) for q in whole.quarantine]
    for table in ("trials", "cases", "attempts"):
        assert split.tables[table].equals(whole.tables[table])
    assert split.rows["configs"] == whole.rows["configs"]
    last = runs_jsonl_lines.read_lines(path.read_bytes()).num_rows
    assert any(q.line == last and "duplicate (configuration, task, trial) of line 1:" in q.reason
               for q in split.quarantine)
    assert any(q.line == last - 1 and "longer than the 2,048 bytes" in q.reason for q in split.quarantine)
