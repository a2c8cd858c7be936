"""The one altair theme every trialhouse chart uses (registered once, on import).

Kept separate from the chart functions so notebooks can ``enable()`` it without
importing anything else, and so every chart and the HTML report look the same.
"""

from __future__ import annotations

import altair as alt

NAME = "trialhouse"

# Colour-blind-safe categorical palette (Okabe–Ito), then neutral greys.
PALETTE = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#D55E00",
    "#CC79A7",
    "#56B4E9",
    "#F0E442",
    "#000000",
]
# Fixed colours for meanings that recur across charts.
GOOD = "#009E73"
BAD = "#D55E00"
NEUTRAL = "#999999"
ACCENT = "#0072B2"
OUTCOME_COLORS = {
    "accepted": GOOD,
    "target_failed": "#E69F00",
    "regression": BAD,
    "budget_exhausted": "#CC79A7",
    "infra_error": NEUTRAL,
    "invalid": "#000000",
    "incomplete": "#DDDDDD",
}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"


def _config() -> alt.theme.ThemeConfig:
    return {
        "config": {
            "font": FONT,
            "background": "white",
            "view": {"continuousWidth": 460, "continuousHeight": 260, "stroke": None},
            "range": {"category": PALETTE},
            "axis": {
                "labelFontSize": 11,
                "titleFontSize": 12,
                "titleFontWeight": "normal",
                "gridColor": "#EEEEEE",
                "domainColor": "#888888",
                "tickColor": "#888888",
            },
            "legend": {"labelFontSize": 11, "titleFontSize": 12, "orient": "right"},
            "title": {"fontSize": 14, "anchor": "start", "subtitleColor": "#555555"},
            "header": {"labelFontSize": 11, "titleFontSize": 12},
            "text": {"fontSize": 11},
            "point": {"size": 60, "filled": True},
            "bar": {"discreteBandSize": {"band": 0.8}},
        }
    }


_registered = False


def enable() -> None:
    """Register (once) and enable the trialhouse theme for the current process."""
    global _registered
    if not _registered:
        alt.theme.register(NAME, enable=False)(_config)
        _registered = True
    alt.theme.enable(NAME)


enable()
