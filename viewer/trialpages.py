"""The trial page, two trials side by side, and an evidence file as text (server only)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from viewer import evidence, review, site
from viewer import trial as trials
from viewer.diff import Diff
from viewer.pages import Options, not_found
from viewer.render import page

if TYPE_CHECKING:
    import duckdb

FILE_BYTES = 1024 * 1024
"""What the server shows of one evidence file (head and tail beyond it)."""


def trial_page(con: duckdb.DuckDBPyConnection, opts: Options, run: str, trial_id: str,
               form: dict[str, Any] | None = None, message: str | None = None,
               status: int = 200) -> tuple[int, str]:
    """The trial page; ``form``/``message``: a submitted review to show again with its problem
    (or the confirmation)."""
    view = trials.load(con, run, trial_id, opts.runs_roots, opts.limits)
    if view is None:
        return not_found(opts, site.trial_page(run, trial_id), f"trial {trial_id!r} in run {run!r}")
    return status, render_trial(opts, view, form=form, message=message)


def render_trial(opts: Options, view: trials.TrialView, form: dict[str, Any] | None = None,
                 message: str | None = None, pairs: set[tuple[str, str]] | None = None) -> str:
    """The trial page of a loaded view; ``pairs``: the compare pages a bundle holds for it."""
    run, trial_id = view.row["run_id"], view.row["trial_id"]
    siblings = view.siblings if pairs is None else [s for s in view.siblings if (s["run_id"], s["trial_id"]) in pairs]
    setup = opts.review
    return page("trial.html.j2", site.trial_page(run, trial_id), opts.ctx, title=f"Trial {trial_id}", v=view,
                t=view.row, run=run, siblings=siblings, review=setup, form=form or {}, message=message,
                pending=review.pending(setup.file if setup else None, run, trial_id),
                files=opts.ctx.mode == "server" and view.evidence_dir is not None)


def compare_page(con: duckdb.DuckDBPyConnection, opts: Options, run: str, trial_id: str,
                 other_run: str, other: str) -> tuple[int, str]:
    """Two trials of the same task side by side: facts, criteria and the two diffs."""
    path = site.compare_page(run, trial_id, other_run, other)
    a = trials.load(con, run, trial_id, opts.runs_roots, opts.limits)
    b = trials.load(con, other_run, other, opts.runs_roots, opts.limits)
    if a is None or b is None:
        return not_found(opts, path, f"trial {trial_id!r} or {other!r}")
    if a.row["case_id"] != b.row["case_id"]:
        return not_found(opts, path, f"two trials of one task ({a.row['case_id']!r} and {b.row['case_id']!r} differ)")
    return 200, render_compare(opts, a, b)


def render_compare(opts: Options, a: trials.TrialView, b: trials.TrialView) -> str:
    path = site.compare_page(a.row["run_id"], a.row["trial_id"], b.row["run_id"], b.row["trial_id"])
    right = replace(b, diff=_reprefixed(b.diff))
    criteria = sorted({c["criterion_id"] for v in (a, b) for _layer, cs in v.layers for c in cs})
    return page("compare.html.j2", path, opts.ctx, title=f"{a.row['trial_id']} vs {b.row['trial_id']}", a=a,
                b=right, criteria=criteria, final={"a": _final(a), "b": _final(b)})


def _reprefixed(diff: Diff | None) -> Diff | None:
    """A copy of the right-hand diff whose anchors cannot collide with the left's."""
    if diff is None:
        return None
    diff = copy.deepcopy(diff)
    diff.prefix = "e"
    for fd in diff.files:
        for hunk in fd.hunks:
            for line in hunk:
                if line.anchor:
                    line.anchor = "e" + line.anchor[1:]
    return diff


def _final(view: trials.TrialView) -> dict[str, str]:
    """Criterion → the verdict of its final grading (or its last one)."""
    out: dict[str, str] = {}
    for _layer, cs in view.layers:
        for c in cs:
            graded = sorted(c["gradings"], key=lambda g: (bool(g.get("final")), g["attempt"] or 0))
            if graded:
                out[c["criterion_id"]] = graded[-1]["verdict"]
    return out


def file_text(con: duckdb.DuckDBPyConnection, opts: Options, run: str, trial_id: str,
              rel: str) -> tuple[int, str]:
    """An evidence file as plain text, bounded (the server serves it as text/plain)."""
    from viewer import queries

    found = queries.rows(con, "trial", run=run, trial=trial_id)
    if not found:
        return 404, f"no trial {trial_id!r} in run {run!r}\n"
    base = evidence.locate(found[0].get("source_path"), trial_id, opts.runs_roots)
    text = evidence.read(base, rel, FILE_BYTES)
    if text.text is None:
        return 404, f"{rel}: {text.note or 'missing'} (trial {trial_id}, evidence {base or 'not found'})\n"
    head = f"# {base}/{rel}: {text.size:,} bytes" + (" (head and tail shown)" if text.truncated else "") + "\n\n"
    return 200, head + text.text
