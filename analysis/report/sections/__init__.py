"""Report sections: one module per section, each ``section(data) -> Section``, a pure
function of the gathered analysis results (``analysis.report.gather.ReportData``).

``ORDER`` is the page order; a new section is a new module added here.
"""

from __future__ import annotations

from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections import (
    blockers,
    comparison,
    consistency,
    controls,
    distributions,
    failures,
    familiarity,
    flags,
    headline,
    judgments,
    matrix,
    pareto,
    period,
    summary,
)

ORDER = (headline, controls, blockers, summary, comparison, consistency, pareto, matrix,
         failures, flags, judgments, familiarity, distributions, period)


def build(data: ReportData) -> list[Section]:
    """Every section, in page order."""
    return [module.section(data) for module in ORDER]
