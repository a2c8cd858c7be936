"""File output: the report directory, chart images, and links made relative to it."""

from __future__ import annotations

import os
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


def _localize(cell: Cell, output: Path) -> Cell:
    if isinstance(cell, Link):
        return replace(cell, href=_href(cell.href, output))
    if isinstance(cell, tuple):
        return tuple(replace(c, href=_href(c.href, output)) for c in cell)
    return cell


def localize_links(sections: list[Section], output: Path) -> None:
    """Point every link at the evidence as seen from the report directory."""
    for s in sections:
        for t in s.tables:
            t.rows = [[_localize(c, output) for c in row] for row in t.rows]
