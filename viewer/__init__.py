"""The trial viewer: every run, configuration, task and trial of a warehouse as pages, with
the trial's evidence (diff, grader output, checkpoints, trajectory, judgments, reviews),
served on the loopback (``serve``) or written as a static site (``bundle``).

Reads the warehouse (``warehouse``, ``analysis``) and the evidence files it points to;
records reviews into a JSONL file that ``trialhouse review import`` ingests, checked by the
same rule (``ingest.judges.check_review``). docs/viewer.md describes the pages.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from viewer.errors import ViewerError

__all__ = ["ViewerError", "bundle", "serve", "trial_links"]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trialhouse")
    except PackageNotFoundError:
        return "unknown"


def _options(warehouse: Path, mode: str, runs_roots: tuple[Path, ...], reviews: Path | None,
             rubric: Path | None, token: str | None = None):
    from viewer import review
    from viewer.pages import Options
    from viewer.render import Context
    from warehouse import db

    db.open(warehouse, read_only=True).close()  # one clear line when there is no warehouse here
    for root in runs_roots:
        if not root.is_dir():
            raise ViewerError(f"--runs-root {root}: no such directory (give a run directory or a directory of runs)")
    setup = review.setup(reviews if mode == "server" else None, rubric)
    ctx = Context(mode=mode, warehouse=str(warehouse), version=_version(),
                  review_file=str(reviews) if reviews else None, token=token)
    return Options(db_path=warehouse, ctx=ctx, runs_roots=runs_roots, review=setup)


def serve(warehouse: Path, *, host: str = "127.0.0.1", port: int = 0, allow_remote: bool = False,
          runs_roots: tuple[Path, ...] = (), reviews: Path | None = None, rubric: Path | None = None,
          started: Callable[[str], None], warn: Callable[[str], None]) -> None:
    """Serve the viewer until interrupted; ``started(url)`` once it listens."""
    from viewer import server

    note = server.check_host(host, allow_remote)
    opts = _options(warehouse, "server", runs_roots, reviews, rubric, token=server.new_token())
    if note:
        warn(note)
    server.serve(opts, host, port, allow_remote, started)


def bundle(warehouse: Path, out: Path, *, runs_roots: tuple[Path, ...] = (), rubric: Path | None = None,
           max_bytes: int = 200 * 1024 * 1024):
    """Write the viewer's pages under ``out`` as a static site (``viewer.bundle``)."""
    from viewer.bundle import write_bundle
    from warehouse import db

    opts = _options(warehouse, "bundle", runs_roots, None, rubric)
    con = db.open(warehouse, read_only=True)
    try:
        return write_bundle(con, opts, out, max_bytes)
    finally:
        con.close()


def trial_links(*, viewer_url: str | None = None, bundle: Path | None = None,
                report_dir: Path | None = None) -> Callable[[str, str], str]:
    """(run id, trial id) → the href of the trial's page under a running viewer's URL or in
    a bundle (relative to ``report_dir``): how ``trialhouse report`` links trial ids
    (``viewer.site.trial_href``)."""
    from viewer.site import trial_href

    return trial_href(viewer_url=viewer_url, bundle=bundle, from_dir=report_dir)
