"""``ingest --aliases/--labels`` (ingest.relabel): spellings of one model become one
configuration, labels reach the cases, and bad files stop the ingest before anything is
written, with one located message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import warehouse
from ingest.aliases import AliasesError
from ingest.api import ingest_paths

REPO = Path(__file__).resolve().parents[2]
BASE = {"harness": "mini", "harness_version": "1.0", "trial": 1, "status": "solved",
        "input_tokens": 10, "output_tokens": 5, "steps": 3}


def _runs(tmp_path: Path, lines: list[dict]) -> Path:
    p = tmp_path / "runs.jsonl"
    p.write_text("".join(json.dumps({**BASE, **ln}) + "\n" for ln in lines), encoding="utf-8")
    return p


def _file(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


ALIASES = """\
models:
  claude-3-7-sonnet-20250219: [claude-3.7-sonnet, Claude 3.7 Sonnet]
harnesses:
  mini-SWE-agent: [mini]
"""


def _query(wh: Path, sql: str) -> list[tuple]:
    with warehouse.open(wh, read_only=True) as con:
        return con.execute(sql).fetchall()


def test_spellings_of_one_model_are_one_configuration_recorded_with_the_batch(tmp_path):
    src = _runs(tmp_path, [
        {"model": "claude-3.7-sonnet", "task_id": "t1"},
        {"model": "Claude 3.7 Sonnet", "task_id": "t2"},
        {"model": "claude-3.7-sonnet", "task_id": "t3", "trial": 2},
        {"model": "gpt-4o", "task_id": "t1"},
    ])
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([src], wh, aliases=_file(tmp_path, "aliases.yaml", ALIASES))
    assert result.quarantined == 0
    configs = _query(wh, "SELECT model, harness, count(*) FROM trials GROUP BY ALL ORDER BY ALL")
    assert configs == [("claude-3-7-sonnet-20250219", "mini-SWE-agent", 3), ("gpt-4o", "mini-SWE-agent", 1)]
    assert _query(wh, "SELECT count(DISTINCT config_id) FROM trials") == [(2,)]
    assert _query(wh, "SELECT count(*) FROM configs") == [(2,)]
    [(details,)] = _query(wh, "SELECT details_json FROM runs")
    applied = json.loads(details)["aliases"]["applied"]
    assert applied["models"] == {"claude-3.7-sonnet": "claude-3-7-sonnet-20250219",
                                 "Claude 3.7 Sonnet": "claude-3-7-sonnet-20250219"}
    assert applied["harnesses"] == {"mini": "mini-SWE-agent"}


def test_adding_editing_or_dropping_an_aliases_file_rewrites_an_unchanged_source(tmp_path):
    """The source did not change but what it becomes did: re-ingesting is not 'unchanged'."""
    src = _runs(tmp_path, [{"model": "claude-3.7-sonnet", "task_id": "t1"}])
    wh = tmp_path / "wh" / "w.duckdb"
    models = "SELECT DISTINCT model FROM trials"
    ingest_paths([src], wh)
    assert _query(wh, models) == [("claude-3.7-sonnet",)]
    aliases = _file(tmp_path, "aliases.yaml", ALIASES)
    ingest_paths([src], wh, aliases=aliases)
    assert _query(wh, models) == [("claude-3-7-sonnet-20250219",)]
    again = ingest_paths([src], wh, aliases=aliases)  # same source, same file: nothing to do
    assert [b.unchanged for b in again.batches] == [True]
    aliases.write_text(ALIASES.replace("claude-3-7-sonnet-20250219", "sonnet-3.7"), encoding="utf-8")
    ingest_paths([src], wh, aliases=aliases)
    assert _query(wh, models) == [("sonnet-3.7",)]
    ingest_paths([src], wh)
    assert _query(wh, models) == [("claude-3.7-sonnet",)]


def test_two_spellings_of_the_same_trial_keep_the_first_and_quarantine_the_other(tmp_path):
    src = _runs(tmp_path, [{"model": "claude-3.7-sonnet", "task_id": "t1"},
                           {"model": "Claude 3.7 Sonnet", "task_id": "t1", "status": "failed"}])
    wh = tmp_path / "wh" / "w.duckdb"
    result = ingest_paths([src], wh, aliases=_file(tmp_path, "a.yaml", ALIASES), allow_quarantine=True)
    assert result.quarantined == 1
    assert _query(wh, "SELECT outcome FROM trials") == [("accepted",)]
    assert _query(wh, "SELECT count(*) FROM attempts") == [(1,)]
    [(reason,)] = _query(wh, "SELECT reason FROM quarantine")
    assert "same configuration, task and repetition" in reason


def test_labels_reach_the_cases_by_task_and_by_repository(tmp_path):
    src = _runs(tmp_path, [
        {"model": "m", "task_id": "django__django-1", "repo": "django/django"},
        {"model": "m", "task_id": "pro-1", "repo": "acme/secret-app"},
        {"model": "m", "task_id": "other"},
    ])
    labels = _file(tmp_path, "labels.yaml", """\
repositories:
  django/django: {familiarity: known}
  acme/secret-app: {familiarity: unknown, difficulty: hard}
tasks:
  pro-1: {difficulty: easy}
""")
    wh = tmp_path / "wh" / "w.duckdb"
    ingest_paths([src], wh, labels=labels)
    rows = _query(wh, "SELECT case_id, familiarity, json_extract_string(labels_json, '$.difficulty') "
                      "FROM cases ORDER BY case_id")
    assert rows == [("django__django-1", "known", None), ("other", None, None), ("pro-1", "unknown", "easy")]


@pytest.mark.parametrize("name,text,message", [
    ("a.yaml", "models:\n  a: [x]\n  b: [x]\n", r"a.yaml:3: model spelling 'x' is an alias of both"),
    ("a.yaml", "modles:\n  a: [x]\n", r"a.yaml:1: unknown section 'modles'"),
    ("a.yaml", "models:\n  llama-9: [llama9]\n", r"a.yaml: none of its names appears in the data"),
])
def test_bad_aliases_files_write_nothing(tmp_path, name, text, message):
    src = _runs(tmp_path, [{"model": "m", "task_id": "t"}])
    wh = tmp_path / "wh" / "w.duckdb"
    with pytest.raises(AliasesError, match=message):
        ingest_paths([src], wh, aliases=_file(tmp_path, name, text))
    assert not list((tmp_path / "wh").rglob("*.parquet"))


def test_a_task_in_two_familiarity_classes_is_refused(tmp_path):
    src = _runs(tmp_path, [{"model": "m", "task_id": "t1", "repo": "o/r"}])
    labels = _file(tmp_path, "l.yaml", "tasks:\n  t1: {familiarity: unknown}\nrepositories:\n"
                                       "  o/r: {familiarity: known}\n")
    with pytest.raises(AliasesError, match=r"l.yaml:2: task 't1' is unknown but its repository 'o/r' is known"):
        ingest_paths([src], tmp_path / "wh" / "w.duckdb", labels=labels)


def test_the_cli_prints_one_located_line_and_exits_2(tmp_path):
    src = _runs(tmp_path, [{"model": "m", "task_id": "t"}])
    bad = _file(tmp_path, "aliases.yaml", "harnesses:\n  h: [x]\n  g: [x]\n")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRIALHOUSE_")}, "NO_COLOR": "1"}
    res = subprocess.run([sys.executable, "-m", "trialhouse", "ingest", str(src), "--aliases", str(bad),
                          "-w", str(tmp_path / "wh" / "w.duckdb")],
                         capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    assert f"{bad}:3: harness spelling 'x' is an alias of both 'h' (line 2) and 'g'" in res.stderr
