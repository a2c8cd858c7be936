"""File output: the report directory, chart images, and links made relative to it."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from analysis.document import Cell, Link
from analysis.errors import AnalysisError
from analysis.report.document import Section


@dataclass
class ReportPaths:
    """Where a report was written."""

    directory: Path
    html: Path
    markdown: Path
    json: Path
    charts: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> {"png", "svg"}
    blocked: str | None = None  # why the period's verdicts are withheld (canary drift), if they are


def check(output: Path) -> None:
    """Refuse an output path that is a file (before any work is done)."""
    if output.exists() and not output.is_dir():
        raise AnalysisError(f"{output}: exists and is not a directory; choose another --output")


def prepare(output: Path) -> Path:
    """The output directory with its charts/ directory, created."""
    check(output)
    (output / "charts").mkdir(parents=True, exist_ok=True)
    return output


def save_chart(spec: dict[str, Any], base: Path) -> dict[str, Path]:
    import vl_convert as vlc

    png, svg = base.with_suffix(".png"), base.with_suffix(".svg")
    png.write_bytes(vlc.vegalite_to_png(spec, scale=2))
    svg.write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    return {"png": png, "svg": svg}


def _href(path: str | None, output: Path) -> str | None:
    """A recorded evidence path as a link relative to the report (None when it is not here:
    a warehouse moved away from its runs, or a foreign source)."""
    if not path:
        return None
    p = Path(path)
    p = p if p.is_absolute() else Path.cwd() / p
    if not p.exists():
        return None
    target = p / "changes.patch" if (p / "changes.patch").is_file() else p
    return Path(os.path.relpath(target, output.resolve())).as_posix()


TrialPages = Callable[[str, str], str]
"""(run id, trial id) → the href of the trial's page in a trial viewer, as seen from the
report directory (``viewer.site.trial_href`` builds one for ``--viewer-url``/``--bundle``)."""


def _localize(link: Link, output: Path, pages: TrialPages | None) -> Link:
    if pages is not None and link.trial is not None:
        return replace(link, href=pages(*link.trial))
    return replace(link, href=_href(link.href, output))


def _cell(cell: Cell, output: Path, pages: TrialPages | None) -> Cell:
    if isinstance(cell, Link):
        return _localize(cell, output, pages)
    if isinstance(cell, tuple):
        return tuple(_localize(c, output, pages) for c in cell)
    return cell


def localize_links(sections: list[Section], output: Path, pages: TrialPages | None = None
                   ) -> None:
    """Point every link at the evidence as seen from the report directory, or each trial's
    link at its page in a trial viewer when ``pages`` is given."""
    for s in sections:
        for t in [*s.tables, *s.folded]:
            t.rows = [[_cell(c, output, pages) for c in row] for row in t.rows]
