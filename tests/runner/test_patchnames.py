"""Names in a patch and in events, exactly (``runner.patchnames``): every awkward name git
can write is read back from a real ``git diff`` as the bytes it is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from runner.flags import inspect_patch
from runner.patchnames import quote, unquote

NAMES = [b"x b/y", b"tab\there", b"new\nline", b'q"uote', b"back\\slash", b"bad\xffname",
         "caf\u00e9.py".encode(), b"plain.py", b"sp ace/a b c.txt", b"-- dashes", b"a b/ b/c"]


def _git(cwd: Path, *args: str) -> bytes:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True).stdout


def test_quote_is_exact_and_reversible():
    for raw in NAMES:
        text = quote(raw.decode("utf-8", "surrogateescape"))
        text.encode("utf-8")  # valid UTF-8 whatever the name: an event can hold it
        assert unquote(text) == raw
    assert quote("caf\u00e9.py") == "caf\u00e9.py" and quote("x b/y") == "x b/y"
    assert quote(b"bad\xffname".decode("utf-8", "surrogateescape")) == '"bad\\377name"'


def test_every_awkward_name_in_a_real_patch_is_read_back_exactly(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "keep").write_text("k\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    for raw in NAMES:
        path = os.path.join(os.fsencode(tmp_path), raw)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(b"-- a line that looks like a header\n")
    _git(tmp_path, "add", "-A")
    text = _git(tmp_path, "diff", "--cached", "--binary", "--no-renames").decode("utf-8", "replace")
    found = {f.path for f in inspect_patch(text, ["nowhere"])}
    assert {unquote(p) for p in found} == set(NAMES)
    removed = _git(tmp_path, "diff", "--cached", "-R", "--binary", "--no-renames").decode("utf-8", "replace")
    assert {unquote(p) for p in (f.path for f in inspect_patch(removed, ["nowhere"]))} == set(NAMES)


def test_a_quoted_name_is_matched_against_allowed_paths_as_the_name_it_is(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "keep").write_text("k\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "init")
    os.makedirs(tmp_path / "shop")
    with open(os.path.join(os.fsencode(tmp_path / "shop"), b"bad\xffname.py"), "wb") as fh:
        fh.write(b"x = 1\n")
    with open(os.path.join(os.fsencode(tmp_path), b"out\xfeside.py"), "wb") as fh:
        fh.write(b"x = 1\n")
    _git(tmp_path, "add", "-A")
    text = _git(tmp_path, "diff", "--cached", "--binary").decode("utf-8", "replace")
    assert [(f.kind, f.path) for f in inspect_patch(text, ["shop"])] == [
        ("outside_allowed_paths", '"out\\376side.py"')]
