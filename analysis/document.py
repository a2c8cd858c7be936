"""Renderer-neutral tables: a result laid out once as rows and columns, rendered to many targets.

A question's result becomes a :class:`Table` in one place (``trialhouse.views`` for the
terminal, ``analysis.report.sections`` for the report, ``analysis.layouts`` for a table
both show alike); each renderer (Rich in the terminal, the report's HTML and Markdown)
turns the same table into its target and escapes every text it places. A column says
what a renderer needs without reading the cells: whether it holds numbers (right-aligned,
never wrapped) and whether it names the row (a renderer short of width keeps it). The
shape follows HELM's ``presentation/table.py``: one table per result, with column metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Link:
    """A cell or part of one that points somewhere (a trial's evidence directory)."""

    text: str
    href: str | None = None
    trial: tuple[str, str] | None = None
    """(run id, trial id) when the link names a trial: a report written with a trial viewer
    (``--viewer-url``/``--bundle``) points it at the trial's page instead of ``href``."""


Cell = str | Link | tuple[Link, ...]
"""Plain text, a link, or several links (the trials behind a number)."""


@dataclass(frozen=True)
class Column:
    """One column's header and what a renderer needs to place its cells."""

    name: str
    numeric: bool = False
    """Numbers: right-aligned, never wrapped (a renderer may align them on the digits)."""
    identifying: bool = False
    """Names the row (configuration, slice, metric): kept when a target must drop columns."""

    @property
    def align(self) -> Literal["left", "right"]:
        return "right" if self.numeric else "left"


def columns(names: Sequence[str], numeric: Sequence[bool] | None = None,
            identifying: int = 1) -> list[Column]:
    """Columns from their names and numeric flags; the first ``identifying`` name the row."""
    flags = list(numeric) if numeric is not None else [False] * len(names)
    if len(flags) != len(names):
        raise ValueError(f"{len(names)} columns, {len(flags)} numeric flags")
    return [Column(n, num, i < identifying) for i, (n, num) in enumerate(zip(names, flags,
                                                                             strict=True))]


@dataclass
class Table:
    """A captioned table: columns with their metadata and rows of cells, one per column."""

    caption: str
    columns: list[Column]
    rows: Sequence[Sequence[Cell]]

    def __post_init__(self) -> None:
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.caption!r}: row {i} has {len(row)} cells for "
                                 f"{len(self.columns)} columns")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


def cell_text(cell: Cell) -> str:
    """A cell as plain text (Markdown escapes it further, the terminal prints it)."""
    if isinstance(cell, Link):
        return cell.text
    if isinstance(cell, tuple):
        return ", ".join(link.text for link in cell)
    return cell
