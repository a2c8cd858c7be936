"""The report as a document: sections of paragraphs, notes, tables and named charts.

Sections build these from analysis results (``analysis.report.sections``); renderers turn
them into HTML, Markdown or text (``analysis.report.render``). Cells are plain text,
a :class:`Link`, or a tuple of links; renderers escape every text they place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Link:
    """A cell or part of one that points somewhere (a trial's evidence directory)."""

    text: str
    href: str | None = None


Cell = str | Link | tuple[Link, ...]


@dataclass
class Table:
    caption: str
    columns: list[str]
    rows: Sequence[Sequence[Cell]]
    numeric: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.numeric:
            self.numeric = [False] * len(self.columns)
        if len(self.numeric) != len(self.columns):
            raise ValueError(f"table {self.caption!r}: {len(self.columns)} columns, "
                             f"{len(self.numeric)} alignment flags")


@dataclass
class Section:
    id: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)  # the headline's sentences
    warnings: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    oks: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    absent: str | None = None


def cell_text(cell: Cell) -> str:
    """A cell as plain text (Markdown escapes it further, the terminal prints it)."""
    if isinstance(cell, Link):
        return cell.text
    if isinstance(cell, tuple):
        return ", ".join(link.text for link in cell)
    return cell
