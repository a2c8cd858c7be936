"""The one altair theme every trialhouse chart uses (registered once, on import).

Kept separate from the chart functions so notebooks can ``enable()`` it without
importing anything else, and so every chart and the HTML report look the same.
"""

from __future__ import annotations

import functools

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
# Past eight series the palette would repeat: twenty distinct colours (Okabe–Ito first,
# then Tableau 20's that differ from them), so fifteen configurations get fifteen colours.
EXTENDED = [
    *PALETTE,
    "#1F77B4", "#AEC7E8", "#FF7F0E", "#FFBB78", "#2CA02C", "#98DF8A",
    "#D62728", "#FF9896", "#9467BD", "#C5B0D5", "#8C564B", "#C49C94",
]


def series_colors(n: int) -> list[str]:
    """``n`` colours for ``n`` series: the colour-blind-safe palette up to eight, twenty
    distinct ones up to twenty (past that they repeat; a chart with that many series names
    each on an axis or in a tooltip)."""
    colors = PALETTE if n <= len(PALETTE) else EXTENDED
    return [colors[i % len(colors)] for i in range(n)]


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
    "agent_output_error": "#56B4E9",
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
                # Configuration names are long ("minimal-shell@1.2.0 / model-a SIMULATED"):
                # never cut a label (Vega's defaults truncate at 160-180 px).
                "labelLimit": 0,
            },
            "legend": {"labelFontSize": 11, "titleFontSize": 12, "orient": "right",
                       "labelLimit": 0, "symbolLimit": 0},
            "title": {"fontSize": 14, "anchor": "start", "subtitleColor": "#555555"},
            "header": {"labelFontSize": 11, "titleFontSize": 12},
            "text": {"fontSize": 11},
            "point": {"size": 60, "filled": True},
            # altair's TypedDict says float; Vega-Lite also takes {"band": fraction}.
            "bar": {"discreteBandSize": {"band": 0.8}},  # type: ignore[typeddict-item]
        }
    }


_registered = False


def _finite_data(data, **kwargs):
    """Altair data transformer: non-finite floats become null before embedding.

    JSON (and so Vega-Lite) cannot carry inf/NaN; +∞ cost per accepted and unknown
    values are shown in tables, and a chart leaves them out instead of failing.
    """
    import polars as pl

    if isinstance(data, pl.DataFrame):
        floats = [c for c, t in data.schema.items() if t.is_float()]
        if floats:
            data = data.with_columns(
                pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c)
                for c in floats
            )
    from altair.vegalite.data import default_data_transformer

    return default_data_transformer(data, **kwargs)


@functools.cache
def vega_bundle() -> str:
    """vega, vega-lite and vega-embed as one script (vl-convert's bundle for altair's
    Vega-Lite version): what the report and the notebooks inline instead of a CDN."""
    import vl_convert as vlc
    from altair.utils.html import vl_version_for_vl_convert

    return vlc.javascript_bundle(None, vl_version=vl_version_for_vl_convert())  # type: ignore[arg-type]


def offline_renderer(spec: dict, **metadata: object) -> dict[str, str]:
    """Altair renderer for notebooks: the chart as HTML that draws without a network.

    The output carries the Vega bundle inline, guarded so that a page with many charts
    (an exported notebook) defines it once: the bundle's top-level ``const``s live in the
    guard's block and only ``window.vegaEmbed`` escapes it. JupyterLab (trusted outputs,
    i.e. any notebook you run) and ``jupyter nbconvert --to html`` both execute it; no
    ``cdn.jsdelivr.net`` request is ever made (tests/reports/test_reports_notebooks.py
    loads an exported notebook in Chromium with the network blocked).
    """
    import json
    import uuid

    div = f"trialhouse-chart-{uuid.uuid4().hex}"
    spec_json = json.dumps(spec, allow_nan=False).replace("</", "<\\/")
    html = (f'<div id="{div}" class="trialhouse-chart"></div>\n'
            '<script type="text/javascript">\n'
            f'if (typeof window.vegaEmbed === "undefined") {{\n{vega_bundle()}\n}}\n'
            f'window.vegaEmbed("#{div}", {spec_json}, {{"renderer": "svg", "actions": false}})'
            '.catch(console.error);\n</script>')
    return {"text/html": html, "text/plain": "<trialhouse chart>"}


def enable() -> None:
    """Register (once) and enable the trialhouse theme, data transformer and the offline
    notebook renderer."""
    global _registered
    if not _registered:
        alt.theme.register(NAME, enable=False)(_config)
        alt.data_transformers.register(NAME, _finite_data)
        alt.renderers.register(NAME, offline_renderer)
        _registered = True
    alt.theme.enable(NAME)
    alt.data_transformers.enable(NAME, max_rows=None)
    alt.renderers.enable(NAME)


enable()
