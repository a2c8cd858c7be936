"""Bad manifests through the real CLI: one clear located message each, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.validate import validate_manifest


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialhouse", *args], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})


def edit(path: Path, fn) -> Path:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))
    return path


def assert_bad(path: Path, *needles: str) -> str:
    proc = cli("validate", "--manifest", str(path))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out
    for n in needles:
        assert n in out, out
    return out


def test_valid_manifest_exits_zero(corpus_root, kit):
    m = kit.make_corpus(corpus_root)
    proc = cli("validate", "--manifest", str(m))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "valid (1 cases, 2 variants)" in proc.stdout


def test_malformed_json_names_line_and_column(corpus_root):
    m = corpus_root / "manifest.json"
    m.write_text('{\n  "schema_version": 1,\n  "id": "x"\n  "cases": []\n}\n')
    assert_bad(m, "line 4 column 3: malformed JSON")


def test_wrong_schema_version(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d.update(schema_version=2))
    assert_bad(m, "schema_version: must be 1")


def test_out_of_range_repetitions(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d.update(repetitions=11))
    assert_bad(m, "repetitions: ", "10")


def test_duplicate_ids(corpus_root, kit):
    def dup(d):
        d["variants"].append(dict(d["variants"][0]))
        d["cases"][0]["criteria"].append(dict(d["cases"][0]["criteria"][0]))
    m = edit(kit.make_corpus(corpus_root), dup)
    out = assert_bad(m, "duplicate variant ids: noop", "cases[0]: duplicate criterion ids: mul_works")
    assert out.count("duplicate") >= 2


def test_criterion_without_command_or_judge(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d["cases"][0]["criteria"][1].pop("command"))
    assert_bad(m, "cases[0].criteria[1]: needs exactly one of command")


def test_empty_command_is_located(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d["cases"][0]["criteria"][0].update(command=[]))
    assert_bad(m, "cases[0].criteria[0].command: must be a non-empty list of strings")


def test_absolute_and_dotdot_paths(corpus_root, kit):
    def bad(d):
        d["cases"][0]["reference_patch"] = "/etc/passwd"
        d["cases"][0]["criteria"][0]["files"] = ["../outside.py", "graders/./target_mul.py"]
    m = edit(kit.make_corpus(corpus_root), bad)
    assert_bad(m, "cases[0].reference_patch: must be relative", "cases[0].criteria[0].files[0]: must not contain '..'",
               "cases[0].criteria[0].files[1]: must be normalised")


def test_symlink_escaping_the_manifest_dir(corpus_root, tmp_path, kit):
    secret = tmp_path / "secret.py"
    secret.write_text("print('hi')\n")
    m = kit.make_corpus(corpus_root)
    (corpus_root / "graders" / "escape.py").symlink_to(secret)
    edit(m, lambda d: d["cases"][0]["criteria"][0].update(files=["graders/escape.py"]))
    assert_bad(m, "cases[0].criteria[0].files[0]: resolves outside the manifest directory")


def test_oversized_and_missing_inputs(corpus_root, kit):
    m = kit.make_corpus(corpus_root)
    (corpus_root / "graders" / "big.bin").write_bytes(b"0" * (1024 * 1024 + 1))
    edit(m, lambda d: d["cases"][0]["criteria"][0].update(files=["graders/big.bin", "graders/nope.py"]))
    assert_bad(m, "files[0]: is larger than", "files[1]: file not found")


def test_missing_commit_and_short_sha(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d.update(initial_commit="a" * 40))
    assert_bad(m, "initial_commit: commit aaaa", "does not exist")
    edit(m, lambda d: d.update(initial_commit="abc123"))
    assert_bad(m, "initial_commit: must be a full 40-character")


def test_reference_patch_that_does_not_apply(corpus_root, kit):
    m = kit.make_corpus(corpus_root)
    p = corpus_root / "patches" / "mul.patch"
    p.write_text(p.read_text().replace("return a + b", "return a - b"))
    before = subprocess.run(["git", "status", "--porcelain"], cwd=corpus_root / "repo",
                            capture_output=True, text=True).stdout
    assert_bad(m, "cases[0].reference_patch: does not apply cleanly")
    after = subprocess.run(["git", "status", "--porcelain"], cwd=corpus_root / "repo",
                           capture_output=True, text=True).stdout
    assert before == after  # the source repository is never touched


def test_every_problem_reported_at_once(corpus_root, kit):
    def many(d):
        d["repetitions"] = 0
        d["cases"][0]["reference_patch"] = "../x.patch"
        d["variants"][0]["agent"] = {"kind": "command"}
        d["bogus"] = 1
    m = edit(kit.make_corpus(corpus_root), many)
    report = validate_manifest(m)
    locs = {p.location for p in report.problems}
    assert {"repetitions", "cases[0].reference_patch", "variants[0].agent", "bogus"} <= locs
    assert report.manifest is None and not report.ok


def test_missing_manifest_file(tmp_path):
    proc = cli("validate", "--manifest", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "file not found" in proc.stdout and "Traceback" not in proc.stderr


def test_run_refuses_existing_output_dir_and_invalid_manifest(corpus_root, tmp_path, kit):
    m = kit.make_corpus(corpus_root)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    proc = cli("run", "--manifest", str(m), "--output", str(out), "--no-progress")
    assert proc.returncode == 2, proc.stderr
    assert "exists and is not empty" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    edit(m, lambda d: d.update(repetitions=0))
    proc = cli("run", "--manifest", str(m), "--output", str(tmp_path / "new"), "--no-progress")
    assert proc.returncode == 2 and "repetitions" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------ values no run could use


PATH_FIELDS = [
    ("repository", lambda d, v: d.update(repository=v)),
    ("cases[0].reference_patch", lambda d, v: d["cases"][0].update(reference_patch=v)),
    ("cases[0].repository", lambda d, v: d["cases"][0].update(repository=v)),
    ("cases[0].criteria[0].files[0]", lambda d, v: d["cases"][0]["criteria"][0].update(files=[v])),
    ("variants[0].stage_instructions.build[0]", lambda d, v: d["variants"][0].update(stage_instructions={"build": [v]})),
]


@pytest.mark.parametrize(("where", "set_"), PATH_FIELDS, ids=[w for w, _ in PATH_FIELDS])
@pytest.mark.parametrize(("value", "why"), [
    ("a\x00b", "contains a NUL byte"),
    ("\udc80x", "not valid Unicode"),
    ("r" * 10_000, "bytes long; a path may have at most 4096"),
    ("d/" + "n" * 300, "component over 255 bytes"),
])
def test_a_path_no_system_can_open_is_refused_where_it_is(corpus_root, kit, where, set_, value, why):
    """Was: a traceback (NUL or surrogate in open(), ENAMETOOLONG from is_dir())."""
    m = kit.make_corpus(corpus_root)
    d = json.loads(m.read_text())
    set_(d, value)
    m.write_text(json.dumps(d))  # a lone surrogate is written as its JSON escape (\\udc80)
    out = assert_bad(m, f"{where}: ", why)
    assert "Traceback" not in out


def test_nul_and_surrogates_anywhere_are_located(corpus_root, kit):
    def bad(d):
        d["cases"][0]["prompt"] = "fix \x00 it"
        d["variants"][0]["agent"]["argv"][0] = "py\udc80thon"
        d["variants"][0]["settings"] = {"k\x00": 1}
    m = edit(kit.make_corpus(corpus_root), bad)
    assert_bad(m, "cases[0].prompt: contains a NUL byte", "variants[0].agent.argv[0]: is not valid Unicode",
               "variants[0].settings: contains a NUL byte")


@pytest.mark.parametrize("depth", [40, 1_000, 100_000])
def test_deep_nesting_is_refused(corpus_root, kit, depth):
    """Was: RecursionError (~1,000 levels) from json.loads or the models."""
    m = kit.make_corpus(corpus_root)
    text = m.read_text().rstrip().rstrip("}") + ', "bogus": ' + "[" * depth + "]" * depth + "}"
    m.write_text(text)
    assert_bad(m, "nested")


@pytest.mark.parametrize(("field", "raw"), [
    ("timeout_seconds", "Infinity"), ("timeout_seconds", "NaN"), ("timeout_seconds", "1e999"),
    ("max_cost_usd", "Infinity"),
])
def test_non_finite_numbers_are_refused(corpus_root, kit, field, raw):
    """Was: timeout_seconds Infinity validated, then the runner wrote null into its events and crashed."""
    m = kit.make_corpus(corpus_root)
    d = json.loads(m.read_text())
    d[field] = "@@"
    m.write_text(json.dumps(d).replace('"@@"', raw))
    assert_bad(m, f"{field}: ", "finite")


def test_numbers_in_settings_must_be_finite_and_64_bit(corpus_root, kit):
    m = kit.make_corpus(corpus_root)
    d = json.loads(m.read_text())
    d["variants"][0]["settings"] = {"a": "@inf@", "b": 2**64}
    m.write_text(json.dumps(d).replace('"@inf@"', "-Infinity"))
    assert_bad(m, "variants[0].settings.a: must be a finite number", "variants[0].settings.b: integer out of range")


def test_a_timeout_beyond_a_day_is_refused(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d.update(timeout_seconds=86_401))
    assert_bad(m, "timeout_seconds: ", "86400")


def test_case_and_variant_ids_leave_room_for_the_trial_directory_name(corpus_root, kit):
    """Was: 128-character ids validated, then a 262-byte trial directory made every trial infra_error."""
    def long_ids(d):
        d["cases"][0]["id"] = "c" * 101
        d["variants"][0]["id"] = "v" * 128
    m = edit(kit.make_corpus(corpus_root), long_ids)
    assert_bad(m, "cases[0].id: must be at most 100 characters", "variants[0].id: must be at most 100",
               "<case>__<variant>__r<rep>")


def test_environment_names_must_be_names(corpus_root, kit):
    m = edit(kit.make_corpus(corpus_root), lambda d: d["variants"][0]["agent"].update(pass_env=["A=B"]))
    assert_bad(m, "variants[0].agent.pass_env[0]: ")


@pytest.mark.slow
def test_what_validate_accepts_at_the_limits_runs(corpus_root, kit, tmp_path):
    """Ids of the longest allowed length, a timeout of a day, Unicode text and settings at the deepest
    allowed nesting with the largest ints: validate accepts them, the run runs every trial, and its
    events ingest without a quarantined line."""
    from ingest.api import ingest_paths
    from runner.run import run_trials
    from runner.validate import validate_manifest

    case_id, var_a, var_b = "c" * 100, "a" * 100, "b" * 99 + "9"
    nested: object = 2**63 - 1
    for _ in range(27):  # manifest → variants → variant → settings → 28 more levels = 32
        nested = [nested]

    def limits(d):
        d["cases"][0]["id"] = case_id
        d["cases"][0]["prompt"] = "Ajoute calc.mul(a, b) 😀 — « produit »"
        d["cases"][0]["criteria"][0]["description"] = "ünïcödé " * 100
        d["variants"][0]["id"], d["variants"][1]["id"] = var_a, var_b
        d["variants"][0]["settings"] = {"deep": nested, "tiny": 5e-324, "big": -(2**63)}
        d["timeout_seconds"] = 86_400
        d["max_cost_usd"] = 1e300
    m = edit(kit.make_corpus(corpus_root), limits)
    report = validate_manifest(m)
    assert report.ok, report.problems
    res = run_trials(m, tmp_path / "out", progress=False)
    names = sorted(p.name for p in (tmp_path / "out" / "trials").iterdir())
    assert names == [f"{case_id}__{var_a}__r1", f"{case_id}__{var_b}__r1"]
    outcomes = json.loads(res.report_path.read_text())["outcomes"]
    assert outcomes["infra_error"] == 0 and outcomes["accepted"] + outcomes["target_failed"] == 2, outcomes
    result = ingest_paths([res.events_path.parent], tmp_path / "wh" / "w.duckdb")
    assert result.quarantined == 0 and result.rows["trials"] == 2
