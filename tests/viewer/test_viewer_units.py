"""The viewer's parts without a browser: ids as path segments, evidence read within bounds,
the highlighted diff escaped, the review rule shared with ``review import``, and evidence
that moved (found with --runs-root, else shown as missing, never a crash)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from viewer import diff, evidence, site

from .conftest import MARKUP, th


@pytest.mark.parametrize("value", ["mul__chat__r1", MARKUP, "..", ".", "a/b", "~x", "ü" * 40, "x" * 300, "a b"])
def test_every_id_is_one_safe_path_segment_that_names_it(value: str) -> None:
    seg = site.slug(value)
    assert "/" not in seg and seg not in (".", "..") and len(seg.encode()) <= 120
    assert set(seg) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+@=-~")
    back, hashed = site.unslug(seg)
    assert back == value if hashed is None else site.matches(seg, ["other", value]) == value
    assert site.route(site.trial_page("r1", value)) == site.Route("trial", {"run": "r1", "trial": seg})


def test_evidence_is_read_within_its_bound_and_never_through_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "big.stdout").write_bytes(b"A" * 5000 + b"B" * 5000)
    text = evidence.read(tmp_path, "logs/big.stdout", 1000)
    assert text.truncated and text.size == 10_000 and text.text is not None
    assert text.text.startswith("A" * 500) and text.text.endswith("B" * 500) and "9,000 bytes not shown" in text.text
    outside = tmp_path.parent / "secret.txt"
    outside.write_text("secret")
    os.symlink(outside, tmp_path / "logs" / "link.stdout")
    assert evidence.read(tmp_path, "logs/link.stdout", 1000).missing
    assert evidence.read(tmp_path, "../secret.txt", 1000).missing
    assert evidence.read(tmp_path, "logs/none.stdout", 1000).note == "missing"
    assert evidence.read(None, "changes.patch", 1000).note == "no evidence directory"


def test_the_highlighted_diff_escapes_what_the_patch_says_and_marks_flagged_lines() -> None:
    patch = ("diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,1 +1,6 @@\n x = 1\n"
             "+s = '<script>alert(1)</script>'\n+try:\n+    pass\n+except Exception:\n+    raise\n")
    d = diff.parse(patch, prefix="d")
    html = "".join(str(line.html) for h in d.files[0].hunks for line in h)
    assert "<script>" not in html and "&lt;script&gt;" in html
    flags = diff.attach_flags(d, [{"kind": "broad_exception", "path": "app.py",
                                   "detail": "broad handler added: except Exception:"}])
    (line,) = [ln for h in d.files[0].hunks for ln in h if ln.flags]
    assert line.text == "except Exception:" and flags[0]["target"] == line.anchor == "df0-n5"


def test_the_review_rule_is_the_one_review_import_applies(viewer_run, tmp_path: Path) -> None:
    """A line the viewer accepts imports cleanly; one it refuses is quarantined with the same reason."""
    from ingest.judges import review_rubric
    from viewer import review
    from warehouse import db

    grid = review_rubric(Path(viewer_run["grid"]))
    lines = [{"trial_id": "mul__noop__r1", "reviewer": "a", "decision": "reject", "minutes": "2"},
             {"trial_id": "mul__noop__r1", "reviewer": "b", "decision": "accept"},
             {"trial_id": "mul__chat__r1", "reviewer": "c", "decision": "reject", "reason_code": "nope"},
             {"trial_id": "mul__chat__r1", "reviewer": "d", "decision": "accept", "grid": {"pattern": "other"}},
             {"trial_id": "no-such-trial", "reviewer": "e", "decision": "accept"}]
    con = db.open(Path(viewer_run["wh"]), read_only=True)
    try:
        said = [review.validate(con, {**rec, "run_id": viewer_run["run_id"]}, grid) for rec in lines]
    finally:
        con.close()
    assert said[0] is None and all(said[1:]), said
    path = tmp_path / "reviews.jsonl"
    for rec in lines:
        review.append(path, {**rec, "run_id": viewer_run["run_id"]})
    proc = th("review", "import", str(path), "--rubric", str(viewer_run["grid"]), "--warehouse",
              str(viewer_run["wh"]), "--allow-quarantine", "--json")
    out = json.loads(proc.stdout)
    assert out["totals"]["quarantined"] == 4 and out["totals"]["rows"]["reviews"] == 1, out
    reasons = th("sql", "-w", str(viewer_run["wh"]), "--json",
                 "SELECT line, reason FROM quarantine WHERE source_file LIKE '%reviews.jsonl' ORDER BY line").stdout
    assert [r["reason"] for r in json.loads(reasons)] == said[1:]


def test_evidence_that_moved_is_found_with_runs_root_or_shown_missing(viewer_run, tmp_path: Path) -> None:
    from viewer import pages, review, trialpages
    from viewer.render import Context
    from warehouse import db

    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(Path(viewer_run["run"]), moved)
    shutil.move(Path(viewer_run["run"]), tmp_path / "gone")
    try:
        opts = pages.Options(db_path=Path(viewer_run["wh"]), ctx=Context("server", "w", "0"),
                             review=review.setup(None, None))
        con = db.open(Path(viewer_run["wh"]), read_only=True)
        try:
            status, html = trialpages.trial_page(con, opts, str(viewer_run["run_id"]), "mul__chat__r1")
            assert status == 200 and "changes.patch missing" in html and "not found" in html
            found = pages.Options(db_path=opts.db_path, ctx=opts.ctx, review=opts.review,
                                  runs_roots=(moved.parent,))
            status, html = trialpages.trial_page(con, found, str(viewer_run["run_id"]), "mul__chat__r1")
            assert status == 200 and "changes.patch missing" not in html and "def</span>" in html
        finally:
            con.close()
    finally:
        shutil.move(tmp_path / "gone", Path(viewer_run["run"]))
