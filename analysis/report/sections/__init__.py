"""Report sections: one module per section, each ``section(data) -> Section``, a pure
function of the gathered analysis results (``analysis.report.gather.ReportData``).

``ORDER`` is the page order; a new section is a new module added here. A section with
nothing to say for this warehouse returns None and is left out (``trajectory`` without steps).
"""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections import (
    budget,
    check_tiers,
    cohorts,
    comparison,
    consistency,
    controls,
    dashboard,
    distributions,
    eligibility,
    failures,
    familiarity,
    flags,
    glossary,
    headline,
    judgments,
    matrix,
    pareto,
    period,
    stop_rules,
    summary,
    trajectory,
    visibility,
)

ORDER = (stop_rules, headline, controls, eligibility, summary, dashboard, cohorts, comparison, consistency, pareto, budget,
         matrix, failures, flags, visibility, check_tiers, judgments, familiarity, trajectory, distributions, period, glossary)


def build(data: ReportData) -> list[Section]:
    """Every section, in page order; a section that returns None is left out (nothing to show)."""
    return [s for module in ORDER if (s := module.section(data)) is not None]
