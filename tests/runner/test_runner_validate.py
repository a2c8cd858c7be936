"""Bad manifests through the real CLI: one clear located message each, exit 2, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
