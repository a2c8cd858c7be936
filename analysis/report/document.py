"""The report as a document: sections of paragraphs, notes, tables and named charts.

Sections build these from analysis results (``analysis.report.sections``); renderers turn
them into HTML and Markdown (``analysis.report.render``). Tables are the renderer-neutral
ones the terminal prints too (``analysis.document``); what is the report's own is the
section around them: its lead sentence and headline bullets, the ineligible configurations,
charts, tables folded away, glossary entries and why it may be absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis.document import Table


@dataclass(frozen=True)
class Term:
    """A glossary entry: an anchor id, the term, the words it is found by in the page's prose
    (a regular expression, case-insensitive), and what it means."""

    id: str
    term: str
    pattern: str
    definition: str


@dataclass
class Section:
    id: str
    title: str
    lead: str | None = None  # the first sentence, set apart (the headline's decision)
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)  # the headline's sentences
    warnings: list[str] = field(default_factory=list)
    ineligible: list[str] = field(default_factory=list)  # configurations that cannot be picked
    oks: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    folded: list[Table] = field(default_factory=list)  # shown only when opened (no data)
    charts: list[str] = field(default_factory=list)
    terms: list[Term] = field(default_factory=list)  # the glossary's entries
    absent: str | None = None
