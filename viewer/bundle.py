"""``trialhouse view --bundle DIR``: the viewer's pages as a static site.

The same page functions as the server, written to files with relative links (so the
bundle opens from disk, file://, or from any static web server) and the trial list
filtered in the browser. Bounded: every page has the bundle's limits (smaller than the
server's), and once the bundle reaches most of its byte budget the remaining trial pages
are summarised (the diff's file list, no logs), then reduced to their facts; the output
says how many. Side-by-side pages are written for the first repetition of each
configuration against every other, per task (docs/viewer.md).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from viewer import pages, queries, render, site, trialpages
from viewer import trial as trials
from viewer.errors import ViewerError

if TYPE_CHECKING:
    import duckdb

MARKER = ".trialhouse-bundle"
BUNDLE_LIMITS = trials.Limits(patch_bytes=512 * 1024, diff_lines=1500, checkpoint_bytes=64 * 1024,
                              grader_bytes=8 * 1024, log_bytes=8 * 1024, steps=1000, calls=500)
SUMMARY_LIMITS = trials.Limits(patch_bytes=32 * 1024, diff_lines=0, checkpoint_bytes=4 * 1024,
                               grader_bytes=1024, log_bytes=0, steps=100, calls=50)
FACTS_LIMITS = trials.Limits(patch_bytes=0, diff_lines=0, checkpoint_bytes=0, grader_bytes=0, log_bytes=0,
                             steps=0, calls=0)
LIST_ROWS = 20_000


@dataclass
class BundleResult:
    directory: Path
    pages: int = 0
    bytes: int = 0
    trial_pages: int = 0
    summarised: int = 0
    facts_only: int = 0
    compare_pages: int = 0
    largest: list[tuple[int, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"index": str(self.directory / site.RUNS), "pages": self.pages, "bytes": self.bytes,
                "trial_pages": self.trial_pages, "summarised": self.summarised, "facts_only": self.facts_only,
                "compare_pages": self.compare_pages,
                "largest_evidence": [{"trial": t, "patch_bytes": b} for b, t in self.largest]}


class _Writer:
    def __init__(self, out: Path, budget: int) -> None:
        self.out, self.budget = out, budget
        self.result = BundleResult(out)

    def write(self, path: str, text: str) -> None:
        data = text.encode("utf-8")
        target = self.out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.result.pages += path.endswith(".html")
        self.result.bytes += len(data)

    def limits(self) -> trials.Limits:
        if self.result.bytes < 0.8 * self.budget:
            return BUNDLE_LIMITS
        return SUMMARY_LIMITS if self.result.bytes < self.budget else FACTS_LIMITS


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ViewerError(f"--bundle {out}: a file is in the way; name a directory")
    if out.is_dir() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise ViewerError(f"--bundle {out}: the directory is not empty and holds no earlier bundle; "
                              "name a new or empty directory")
        shutil.rmtree(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ViewerError(f"--bundle {out}: cannot create it ({exc.strerror})") from None
    (out / MARKER).write_text('{"complete": false}\n', encoding="utf-8")  # a failed bundle can be rewritten


def write_bundle(con: duckdb.DuckDBPyConnection, opts: pages.Options, out: Path, max_bytes: int) -> BundleResult:
    """Write every page under ``out`` within about ``max_bytes``; what was written."""
    _prepare(out)
    w = _Writer(out, max_bytes)
    w.write(site.CSS, render.stylesheet())
    w.write(site.JS, render.script())
    w.write(site.RUNS, pages.runs_page(con, opts)[1])
    w.write(site.TRIALS, pages.trials_page(con, replace(opts, list_rows=LIST_ROWS), queries.TrialFilter())[1])
    w.write(site.QUEUES, pages.queues_page(con, opts)[1])
    for run in queries.runs(opts.db_path, con):
        rid = run["run_id"]
        w.write(site.run_page(rid), pages.run_page(con, opts, rid)[1])
        configs, _note = queries.run_configs(con, rid)
        for c in configs:
            w.write(site.config_page(rid, c["config_id"]), pages.config_page(con, opts, rid, c["config_id"])[1])
        scope = queries.RunScope(con, rid)
        for case in queries.rows(con, "run_case_ids", run=rid):
            _task(con, opts, w, scope, case["case_id"])
    (out / MARKER).write_text(json.dumps(w.result.as_dict(), indent=1), encoding="utf-8")
    w.result.largest = sorted(w.result.largest, reverse=True)[:5]
    return w.result


def _task(con: duckdb.DuckDBPyConnection, opts: pages.Options, w: _Writer, scope: queries.RunScope,
          case: str) -> None:
    """A task page, its trials' pages and its side-by-side pages (each trial loaded once)."""
    run = scope.run
    _status, html = pages.task_page(con, opts, run, case)
    w.write(site.task_page(run, case), html)
    trial_rows = queries.rows(con, "task_trials", run=run, case=case)
    heads = [p for pair in pages.pairs(trial_rows) for p in pair]
    pairs = [(a["trial_id"], b["trial_id"]) for a, b in pages.pairs(trial_rows)]
    views: dict[str, trials.TrialView] = {}
    for t in trial_rows:
        limits = w.limits()
        view = trials.load(con, run, t["trial_id"], opts.runs_roots, limits, scope)
        if view is None:
            continue
        w.result.trial_pages += 1
        w.result.summarised += limits is SUMMARY_LIMITS
        w.result.facts_only += limits is FACTS_LIMITS
        if view.patch.size:
            w.result.largest.append((view.patch.size, t["trial_id"]))
            w.result.largest = sorted(w.result.largest, reverse=True)[:5]
        linked = {(run, b) for a, b in pairs if a == t["trial_id"]}
        bopts = replace(opts, limits=limits)
        w.write(site.trial_page(run, t["trial_id"]), trialpages.render_trial(bopts, view, pairs=linked))
        if t in heads:
            views[t["trial_id"]] = view
    for a, b in pairs:
        if a in views and b in views:
            w.write(site.compare_page(run, a, run, b), trialpages.render_compare(opts, views[a], views[b]))
            w.result.compare_pages += 1
