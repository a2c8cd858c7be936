"""Chart functions: one polars DataFrame in, one altair chart out, no I/O.

Every function takes the frame an analysis function returns (plus a ``label``
column naming the configuration for display; reports add it with
:func:`with_labels`) and returns a chart styled by :mod:`analysis.theme`.
Rates are drawn with their intervals and tooltips carry the counts, so a chart
never shows a percentage without the numbers behind it.

Modules: ``base`` (labels, finite data, the theme), ``quality``, ``cost``, ``grids``;
every chart function is importable from here (``from analysis import charts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis.charts.base import LABEL, has_data, with_labels
from analysis.charts.cost import distribution_chart, pareto_chart
from analysis.charts.grids import gap_chart, matrix_chart, period_chart
from analysis.charts.quality import (
    METRIC_TITLES,
    directions_chart,
    failures_chart,
    outcomes_chart,
    pass_k_chart,
    rate_chart,
)
from analysis.formatting import config_label

__all__: Sequence[str] = [
    "LABEL",
    "METRIC_TITLES",
    "config_label",
    "with_labels",
    "has_data",
    "rate_chart",
    "outcomes_chart",
    "directions_chart",
    "pass_k_chart",
    "pareto_chart",
    "matrix_chart",
    "failures_chart",
    "gap_chart",
    "distribution_chart",
    "period_chart",
]
