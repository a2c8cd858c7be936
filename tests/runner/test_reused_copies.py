"""What the runner reuses within a run is exactly what it would have written afresh.

Grading copies are reused while provably untouched (``runner.pristine``); captures name
trees and commits computed in Python and skip git calls whose answer is known
(``runner.capture``). Each shortcut is checked here against git itself or attacked.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from contract.run_events import ControlResult
from contract.trial_events import Grading
from runner.blobs import EMPTY_TREE, commit_sha, tree_sha
from runner.capture import TrialGit, _has_untracked
from runner.eventlog import read_events
from runner.git import git, git_out
from runner.pristine import Pristine, remove_tree, stat_key
from runner.run import run_trials
from runner.run_store import RunStore

PY = sys.executable

VANDAL = """import os, sys
ws = os.environ["TRIALHOUSE_WORKSPACE"]
calc = os.path.join(ws, "calc.py")
st = os.stat(calc)
text = open(calc).read()
try:  # in bubblewrap the workspace is read-only to graders: every write below is refused
    open(calc, "w").write(text.replace("a + b", "a - b"))  # same size, add() broken
    os.utime(calc, ns=(st.st_atime_ns, st.st_mtime_ns))   # and the old mtime back
    open(os.path.join(ws, "planted.py"), "w").write("x = 1\\n")
    os.makedirs(os.path.join(ws, "pkg"))
    print("vandalised the workspace")
except OSError as exc:
    print("workspace refused:", exc.strerror)
open(os.path.join(os.environ["HOME"], "planted"), "w").write("from the vandal\\n")
open(os.environ["TRIALHOUSE_RESULT_FILE"], "w").write("not my token")
sys.exit(0)
"""

CHECKER = """import os, sys
ws = os.environ["TRIALHOUSE_WORKSPACE"]
sys.path.insert(0, ws)
import calc
problems = []
if calc.add(2, 3) != 5:
    problems.append("calc.py is the vandal's")
if sorted(os.listdir(ws)) != [".gitignore", "calc.py"]:
    problems.append(f"workspace holds {sorted(os.listdir(ws))}")
if os.listdir(os.environ["HOME"]):
    problems.append(f"HOME holds {os.listdir(os.environ['HOME'])}")
if os.path.exists(os.environ["TRIALHOUSE_RESULT_FILE"]):
    problems.append("a result file is already there")
print("; ".join(problems) or "pristine")
sys.exit(1 if problems else 0)
"""


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_a_grader_that_vandalises_its_copy_leaves_the_next_criterion_a_pristine_one(
        kit, corpus_root, tmp_path, backend):
    patch = str(corpus_root / "patches" / "mul.patch")
    m = kit.make_corpus(corpus_root, variants=[{"id": "fixer", "agent": kit.agent("patch", patch)}],
                        max_attempts=2, isolation={"backend": backend})
    (corpus_root / "graders" / "vandal.py").write_text(VANDAL)
    (corpus_root / "graders" / "checker.py").write_text(CHECKER)
    data = json.loads(m.read_text())
    crits = data["cases"][0]["criteria"]
    crits.insert(1, {"id": "vandal", "layer": "regression", "command": [PY, "{inputs}/graders/vandal.py"]})
    crits.append({"id": "checker", "layer": "regression", "command": [PY, "{inputs}/graders/checker.py"]})
    m.write_text(json.dumps(data))
    res = run_trials(m, tmp_path / "o", progress=False)
    events = read_events(res.events_path)
    controls = [e for e in events if isinstance(e, ControlResult) and e.criterion_id == "checker"]
    assert [c.verdict for c in controls] == ["passed", "passed"], "a control saw a vandalised copy"
    grades = {e.criterion_id: e.verdict for e in events if isinstance(e, Grading)}
    assert grades == {"mul_works": "passed", "vandal": "passed", "add_works": "passed",
                      "checker": "passed"}
    out = tmp_path / "o" / "trials" / "mul__fixer__r1" / "grading" / "a1" / "checker.out"
    assert out.read_text().strip() == "pristine"
    said = (out.parent / "vandal.out").read_text()
    assert ("Read-only file system" in said) if backend == "bubblewrap" else ("vandalised" in said), said
    assert res.outcomes == {"accepted": 1}


def _entries(repo: Path, files: dict[str, tuple[str, bytes]]) -> list[tuple[str, str, str]]:
    rows = []
    for rel, (mode, data) in files.items():
        sha = git(repo, "hash-object", "-w", "--stdin", input_bytes=data).stdout.decode().strip()
        rows.append((mode, sha, rel))
    return rows


TRICKY = {
    "a": ("100644", b"file a\n"),
    "a.b": ("100644", b"dot\n"),
    "a-b": ("100755", b"#!/bin/sh\n"),
    "b/a": ("100644", b"in b\n"),
    "b/a.b/c": ("100644", b"deep\n"),
    "b/a-": ("120000", b"../a"),
    "b0": ("100644", b""),
    "sp ace/ü.txt": ("100644", b"unicode\n"),
    "z/mod": ("160000", b""),
}


def test_tree_and_commit_names_are_the_ones_git_gives(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    rows = _entries(repo, {k: v for k, v in TRICKY.items() if v[0] != "160000"})
    rows.append(("160000", "1" * 40, "z/mod"))  # a gitlink names a commit that need not exist
    info = b"".join(f"{m} {s}\t{r}".encode() + b"\0" for m, s, r in rows)
    idx = {"GIT_INDEX_FILE": str(tmp_path / "index")}
    git(repo, "update-index", "--add", "-z", "--index-info", input_bytes=info, env=idx)
    tree = git_out(repo, "write-tree", env=idx)
    assert tree_sha(reversed(rows)) == tree  # order of the rows does not matter
    assert tree_sha([]) == EMPTY_TREE
    assert tree_sha([("100644", rows[0][1], "x"), ("100644", rows[0][1], "x/y")]) is None
    first = git_out(repo, "commit-tree", tree, "-m", "trialhouse checkpoint: build (attempt 1)")
    assert commit_sha(tree, None, "trialhouse checkpoint: build (attempt 1)") == first
    second = git_out(repo, "commit-tree", tree, "-p", first, "-m", "qa\n")
    assert commit_sha(tree, first, "qa\n") == second


def test_changed_names_are_the_ones_diff_tree_lists(tmp_path):
    store = RunStore(tmp_path / "store.git")
    tg = TrialGit(tmp_path / "private", store)
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    before = dict(TRICKY)
    del before["z/mod"]
    after = dict(before)
    after.pop("a")
    after["a/now-a-dir"] = ("100644", b"d/f\n")          # file → directory
    after["b/a"] = ("100755", b"in b\n")                 # mode only
    after["b/a-"] = ("100644", b"../a")                  # symlink → file, same bytes
    after["b0"] = ("100644", b"changed\n")
    after["new"] = ("100644", b"new\n")
    trees = []
    for files in (before, after):
        rows = _entries(repo, files)
        info = b"".join(f"{m} {s}\t{r}".encode() + b"\0" for m, s, r in rows)
        idx = {"GIT_INDEX_FILE": str(tmp_path / f"index{len(trees)}")}
        git(repo, "update-index", "--add", "-z", "--index-info", input_bytes=info, env=idx)
        trees.append(git_out(repo, "write-tree", env=idx))
    (tg.path / "objects" / "info" / "alternates").write_text(str(repo / ".git" / "objects") + "\n")
    old, new = trees
    listed = git(repo, "diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new).stdout
    expected = [p.decode() for p in listed.split(b"\0") if p]
    assert tg.changed_names(old, new) == expected
    assert tg.changed_names(new, old) == expected
    assert tg.changed_names(old, old) == []


def _ls_others(ws: Path, tmp: Path) -> list[str]:
    env = {"GIT_INDEX_FILE": str(tmp / "index")}
    git(ws, "read-tree", "HEAD", env=env)
    out = git(ws, "ls-files", "-z", "--others", env=env).stdout
    return [p for p in out.decode().split("\0") if p]


@pytest.mark.parametrize("change", ["none", "deleted", "edited", "untracked", "nested-repo",
                                    "dir-for-file", "symlinked-dir", "deep-git-file"])
def test_the_untracked_shortcut_never_hides_what_ls_files_lists(tmp_path, change):
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    git(ws, "init", "-q")
    (ws / "top.txt").write_text("top\n")
    (ws / "pkg" / "mod.py").write_text("x = 1\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    tracked = {"top.txt", "pkg/mod.py"}
    if change == "deleted":
        (ws / "top.txt").unlink()
    elif change == "edited":
        (ws / "pkg" / "mod.py").write_text("x = 2\n")
    elif change == "untracked":
        (ws / "pkg" / "new.py").write_text("y = 1\n")
    elif change == "nested-repo":
        git(ws / "pkg", "init", "-q")
    elif change == "dir-for-file":
        (ws / "top.txt").unlink()
        (ws / "top.txt").mkdir()
        (ws / "top.txt" / "inner").write_text("i\n")
    elif change == "symlinked-dir":
        (ws / "pkg" / "mod.py").unlink()
        (ws / "pkg").rmdir()
        (ws / "pkg").symlink_to(tmp_path)
    elif change == "deep-git-file":
        (ws / "pkg" / ".git").write_text("gitdir: /nowhere\n")
    shortcut = _has_untracked(ws, tracked)
    others = _ls_others(ws, tmp_path)
    if others:
        assert shortcut, f"ls-files lists {others} but the shortcut says there is nothing"
    assert shortcut == (change not in ("none", "deleted", "edited"))


def _copy(root: Path) -> None:
    if root.exists():
        remove_tree(root)
    (root / "d").mkdir(parents=True)
    (root / "d" / "f").write_text("abc\n")
    os.symlink("d/f", root / "link")


@pytest.mark.parametrize("damage", [
    lambda root: (root / "d" / "extra").write_text(""),
    lambda root: (root / "d" / "f").write_text("xyz\n"),
    lambda root: os.chmod(root / "d", 0o700),
    lambda root: (os.unlink(root / "link"), os.symlink("d", root / "link")),
    lambda root: (os.unlink(root / "d" / "f"), (root / "d" / "f").write_text("abc\n")),
    lambda root: os.unlink(root / "d" / "f"),
    lambda root: (remove_tree(root / "d"), os.symlink("/etc", root / "d")),
], ids=["added", "same-size-edit", "chmod-dir", "relinked", "recreated", "removed", "dir-to-symlink"])
def test_any_change_to_a_recorded_copy_is_seen(tmp_path, damage):
    root = tmp_path / "copy"
    _copy(root)
    os.chmod(root / "d", 0o755)
    record = Pristine(root, lambda _rel, _path: True)
    assert record.record() and record.intact()
    damage(root)
    assert not record.intact()


def test_a_racy_file_is_checked_by_content(tmp_path):
    root = tmp_path / "copy"
    _copy(root)
    record = Pristine(root, lambda rel, path: rel != "d/f" or path.read_bytes() == b"abc\n")
    assert record.record()
    # A change inside one filesystem clock tick could keep the whole stat key: simulate it
    # by taking the key after the change. Handed out just now, the file is racy and its
    # content decides; handed out long after the file was written, the key is trusted.
    (root / "d" / "f").write_text("abd\n")
    record.files["d/f"] = stat_key(os.lstat(root / "d" / "f"))
    record.expose()
    assert not record.intact()
    record.exposed_ns = time.time_ns() + 10**9
    assert record.intact()
