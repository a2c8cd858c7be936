"""Aliases and labels files (ingest.aliases): loading, applying, and every bad file
stopped with one located message naming what to do."""

from __future__ import annotations

import json

import pytest

from ingest.aliases import AliasesError, load_aliases, load_labels, spelling

ALIASES = """\
models:
  claude-3-7-sonnet-20250219:
    - claude-3.7-sonnet
    - Claude 3.7 Sonnet
    - anthropic/claude-3-7-sonnet
  gpt-4o-2024-11-20: [gpt-4o, openai/gpt-4o]
harnesses:
  mini-SWE-agent: mini
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_aliases_map_every_spelling_to_its_canonical_name(tmp_path):
    a = load_aliases(_write(tmp_path, "aliases.yaml", ALIASES))
    for name in ("claude-3.7-sonnet", "claude 3.7  SONNET", "anthropic/claude-3-7-sonnet",
                 "claude-3-7-sonnet-20250219"):
        assert a.canonical("models", name) == "claude-3-7-sonnet-20250219"
    assert a.canonical("models", "gemini-2.5-pro") == "gemini-2.5-pro"  # unmapped: as is
    assert a.canonical("harnesses", "MINI") == "mini-SWE-agent"
    assert a.canonical("models", None) is None
    assert a.as_dict()["harnesses"] == {"mini-swe-agent": "mini-SWE-agent",
                                        "mini": "mini-SWE-agent"}


def test_a_json_aliases_file_is_read_the_same(tmp_path):
    doc = {"models": {"claude-3-7-sonnet-20250219": ["claude-3.7-sonnet"]}}
    a = load_aliases(_write(tmp_path, "a.json", json.dumps(doc, indent=2)))
    assert a.canonical("models", "Claude-3.7-Sonnet") == "claude-3-7-sonnet-20250219"


@pytest.mark.parametrize("text,message", [
    ("models:\n  a: [x]\n  b: [x]\n",
     r"a.yaml:3: model spelling 'x' is an alias of both 'a' \(line 2\) and 'b'"),
    ("models:\n  a: [b]\n  b: [c]\n",
     r"a.yaml:2: model 'b' is a canonical name \(line 3\) and an alias of 'a'"),
    ("models:\n  a: [x]\n  A: [y]\n", r"a.yaml:3: model 'A' is listed twice \(also line 2\)"),
    ("modles:\n  a: [x]\n", r"a.yaml:1: unknown section 'modles'; the sections are models and "
                            r"harnesses"),
    ("models:\n  a: {x: 1}\n", r"a.yaml:2: the aliases of 'a' must be a name or a list"),
    ("models: [a, b]\n", r"a.yaml:1: models must be a mapping"),
    ("models:\n  a: [x\n", r"a.yaml:\d+: not valid YAML or JSON"),
    ("", r"a.yaml: the file is empty"),
])
def test_bad_aliases_files_are_located(tmp_path, text, message):
    with pytest.raises(AliasesError, match=message):
        load_aliases(_write(tmp_path, "a.yaml", text))


def test_an_aliases_file_naming_nothing_in_the_data_is_refused(tmp_path):
    a = load_aliases(_write(tmp_path, "aliases.yaml", ALIASES))
    notes = a.check_against(models=["Claude 3.7 Sonnet", "gemini-2.5-pro"], harnesses=["x"])
    assert notes == [f"{tmp_path / 'aliases.yaml'}:6: models 'gpt-4o-2024-11-20' matches no "
                     "name in the data",
                     f"{tmp_path / 'aliases.yaml'}:8: harnesses 'mini-SWE-agent' matches no "
                     "name in the data"]
    with pytest.raises(AliasesError, match="none of its names appears in the data"):
        a.check_against(models=["llama-3"], harnesses=["openhands"])


def test_missing_aliases_file(tmp_path):
    with pytest.raises(AliasesError, match="nope.yaml: no such file"):
        load_aliases(tmp_path / "nope.yaml")


LABELS = """\
tasks:
  django__django-11099: {familiarity: known, difficulty: "15 min - 1 hour"}
  pro__task-1: {difficulty: hard}
repositories:
  django/django: {familiarity: known, task_class: web}
  acme/payments: {familiarity: unknown}
"""


def test_labels_by_task_and_by_repository(tmp_path):
    lab = load_labels(_write(tmp_path, "labels.yaml", LABELS))
    assert lab.labels_for("django__django-11099", "django/django") == {
        "familiarity": "known", "task_class": "web", "difficulty": "15 min - 1 hour"}
    assert lab.labels_for("pro__task-1", "acme/payments") == {
        "familiarity": "unknown", "difficulty": "hard"}
    out, unused = lab.resolve([("django__django-11099", "django/django"),
                               ("pro__task-1", "acme/payments"), ("other", None)])
    assert set(out) == {"django__django-11099", "pro__task-1"} and unused == []


def test_labels_from_csv(tmp_path):
    p = _write(tmp_path, "labels.csv", "task,repository,familiarity,difficulty\n"
                                       "t1,,known,easy\n,acme/payments,unknown,\n")
    lab = load_labels(p)
    assert lab.tasks["t1"].labels == {"familiarity": "known", "difficulty": "easy"}
    assert lab.repositories["acme/payments"].labels == {"familiarity": "unknown"}
    assert lab.repositories["acme/payments"].line == 3


def test_a_labels_csv_field_past_the_csv_limit_is_located_not_a_traceback(tmp_path):
    p = _write(tmp_path, "labels.csv", f"task,difficulty\nt1,easy\nt2,{'x' * 200_000}\n")
    with pytest.raises(AliasesError, match=r"labels.csv:3: not readable CSV \(field larger than field limit"):
        load_labels(p)


@pytest.mark.parametrize("text,message", [
    ("tasks:\n  t1: {familiarity: known}\n  t1: {familiarity: unknown}\n",
     r"labels.yaml:3: task 't1' is familiarity 'unknown' here and 'known' on line 2"),
    ("tasks:\n  t1: {familiarity: maybe}\n",
     r"labels.yaml:2: task 't1': familiarity 'maybe' must be known or unknown"),
    ("tasks:\n  t1: {Task Class: x}\n", r"labels.yaml:2: label 'Task Class' of task 't1'"),
    ("task:\n  t1: {difficulty: x}\n", r"labels.yaml:1: unknown section 'task'"),
])
def test_bad_labels_files_are_located(tmp_path, text, message):
    with pytest.raises(AliasesError, match=message):
        load_labels(_write(tmp_path, "labels.yaml", text))


def test_a_task_in_two_familiarity_classes_is_refused(tmp_path):
    lab = load_labels(_write(tmp_path, "labels.yaml", "tasks:\n  t1: {familiarity: known}\n"
                                                      "repositories:\n"
                                                      "  acme/payments: {familiarity: unknown}\n"))
    with pytest.raises(AliasesError, match=r"labels.yaml:2: task 't1' is known but its "
                                           r"repository 'acme/payments' is unknown \(line 4\)"):
        lab.resolve([("t1", "acme/payments")])
    csv_dup = _write(tmp_path, "dup.csv", "task,familiarity\nt1,known\nt1,unknown\n")
    with pytest.raises(AliasesError, match=r"dup.csv:3: task 't1' is familiarity 'unknown' "
                                           r"here and 'known' on line 2"):
        load_labels(csv_dup)


def test_a_labels_file_naming_nothing_in_the_data_is_refused(tmp_path):
    lab = load_labels(_write(tmp_path, "labels.yaml", LABELS))
    with pytest.raises(AliasesError, match="none of its 2 task.s. and 2 repository.ies. "
                                           "appears in the data"):
        lab.resolve([("x", "y/z")])
    _, unused = lab.resolve([("pro__task-1", None)])
    assert any("task 'django__django-11099' is not in the data" in u for u in unused)


def test_spelling_folds_case_and_space():
    assert spelling("  Claude  3.7\tSonnet ") == spelling("claude 3.7 sonnet")
