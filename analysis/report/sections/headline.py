"""The headline: the decision first, then who is ineligible, who is compared with whom, and
one sentence per candidate (``analysis.headline``: the same sentences ``compare`` prints)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData


def section(d: ReportData) -> Section:
    from analysis.report.sections.controls import run_warnings

    s = Section("headline", "Headline")
    s.warnings += run_warnings(d)
    if d.period is not None and d.period.blocked and d.period.canaries is not None:
        s.warnings.insert(0, d.period.canaries.headline())
    if d.headline is None:
        s.absent = f"No comparison: {d.compare_absent or 'nothing to compare'}."
        return s
    decision = d.headline.decision
    s.lead = decision.sentence
    if decision.ineligible_sentence:
        s.ineligible.append(decision.ineligible_sentence)
    s.paragraphs.append(d.headline.context)
    s.bullets = [ln.sentence for ln in d.headline.lines]
    return s
