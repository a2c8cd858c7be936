"""The report as a document: sections of paragraphs, notes, tables and named charts.

Sections build these from analysis results (``analysis.report.sections``); renderers turn
them into HTML and Markdown (``analysis.report.render``). Tables are the renderer-neutral
ones the terminal prints too (``analysis.document``); what is the report's own is the
section around them: its headline bullets, blockers, charts and why it may be absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis.document import Table


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
