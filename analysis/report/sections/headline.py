"""The headline: who won, one sentence per candidate (``analysis.headline``)."""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData


def section(d: ReportData) -> Section:
    from analysis.report.sections.controls import run_warnings

    s = Section("headline", "Headline")
    s.warnings += run_warnings(d)
    if d.headline is None:
        s.absent = f"No comparison: {d.compare_absent or 'nothing to compare'}."
        return s
    s.paragraphs.append(d.headline.intro)
    s.bullets = [ln.sentence for ln in d.headline.lines]
    if d.blockers.found:
        s.warnings.append(f"{len(d.blockers.found)} eligibility blocker(s): see below.")
    return s
