"""Chart functions: valid Vega-Lite (altair validates on to_dict), the one theme, honest data."""

from __future__ import annotations

import altair as alt
import polars as pl
import pytest

from analysis import charts, theme

SUMMARY = pl.DataFrame({
    "label": ["base", "cand SIMULATED"], "rate": [0.5, 0.8], "ci_low": [0.3, 0.6], "ci_high": [0.7, 0.9],
    "solved": [5, 8], "valid": [10, 10],
})
PARETO = pl.DataFrame({
    "label": ["cheap", "good", "worse", "never", "unknown"],
    "x": [1.0, 2.0, 3.0, float("inf"), None],
    "rate": [0.5, 0.8, 0.4, 0.0, 0.6],
    "on_front": [True, True, False, False, None],
    "ci_low": [0.3, 0.6, 0.2, 0.0, 0.4], "ci_high": [0.7, 0.9, 0.6, 0.2, 0.8],
})


def _rows(spec: dict) -> list[dict]:
    rows: list[dict] = []
    for data in spec.get("datasets", {}).values():
        rows += data
    return rows


def all_charts() -> dict[str, alt.TopLevelMixin]:
    return {
        "rate": charts.rate_chart(SUMMARY),
        "outcomes": charts.outcomes_chart(pl.DataFrame({"label": ["a", "a", "b"], "outcome": ["accepted", None, "regression"],
                                                        "n": [3, 1, 2]})),
        "directions": charts.directions_chart(pl.DataFrame({"label": ["b"] * 3, "direction": ["improvement", "tie", "regression"],
                                                            "tasks": [3, 4, 1]})),
        "passk": charts.pass_k_chart(pl.DataFrame({"label": ["a", "a"], "k": [1, 2], "metric": ["pass^k", "pass@k"],
                                                   "value": [0.5, 0.7]})),
        "pareto": charts.pareto_chart(PARETO),
        "matrix": charts.matrix_chart(pl.DataFrame({"model": ["m1", "m1", "m2", "m2"], "harness": ["h1", "h2", "h1", "h2"],
                                                    "rate": [0.1, 0.5, 0.6, 0.9], "solved": [1, 5, 6, 9], "valid": [10] * 4})),
        "failures": charts.failures_chart(pl.DataFrame({"label": ["a", "b"], "category": ["implementation", "verification"],
                                                        "count": [2, 3], "share": [0.2, 0.3], "lost_spend_usd": [0.1, None]})),
        "gap": charts.gap_chart(pl.DataFrame({"label": ["a"], "gap": [0.1], "ci_low": [-0.2], "ci_high": [0.4]})),
        "cost": charts.distribution_chart(pl.DataFrame({"label": ["a", "a", "b"], "cost_usd": [0.1, None, 0.3]}),
                                          value="cost_usd", title="Cost", x_title="USD"),
        "period": charts.period_chart(pl.DataFrame({"label": ["a"], "previous_rate": [0.3], "current_rate": [0.5]})),
    }


@pytest.fixture(scope="module")
def specs() -> dict[str, dict]:
    return {name: chart.to_dict() for name, chart in all_charts().items()}  # to_dict validates the schema


def test_every_chart_is_valid_vega_lite_with_the_theme(specs: dict[str, dict]) -> None:
    assert len(specs) == 10
    for name, spec in specs.items():
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v"), name
        assert spec["config"]["font"] == theme.FONT, name
        assert spec["config"]["range"]["category"] == theme.PALETTE, name
        assert _rows(spec), f"{name}: the chart carries its data inline"


def test_an_invalid_encoding_is_rejected() -> None:
    with pytest.raises(Exception, match="mark_nonsense|not valid|Additional properties|invalid"):
        alt.Chart(SUMMARY).mark_point().encode(x="rate:Q").properties(mark_nonsense=1).to_dict()


def test_theme_is_registered_once_and_active() -> None:
    theme.enable()
    theme.enable()
    assert alt.theme.active == theme.NAME
    assert theme.NAME in alt.theme.names()


def test_pareto_leaves_out_points_it_cannot_place() -> None:
    rows = _rows(charts.pareto_chart(PARETO).to_dict())
    labels = {r["label"] for r in rows}
    assert labels == {"cheap", "good", "worse"}, "inf and unknown cost are not plotted"
    status = {r["label"]: r["status"] for r in rows}
    assert status == {"cheap": "on the front", "good": "on the front", "worse": "dominated"}


def test_pareto_labels_points_and_joins_only_the_front() -> None:
    spec = charts.pareto_chart(PARETO).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert "text" in marks and "line" in marks
    line = next(layer for layer in spec["layer"] if (layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]) == "line")
    assert line["transform"] == [{"filter": "datum.status == 'on the front'"}]


def test_rate_chart_writes_counts_beside_rates() -> None:
    rows = _rows(charts.rate_chart(SUMMARY).to_dict())
    assert {r["count"] for r in rows} == {"5/10 (50%)", "8/10 (80%)"}


def test_outcomes_chart_names_incomplete_trials() -> None:
    rows = _rows(charts.outcomes_chart(
        pl.DataFrame({"label": ["a", "a"], "outcome": ["accepted", None], "n": [3, 1]})).to_dict())
    assert {r["outcome"] for r in rows} == {"accepted", "incomplete"}


def test_distribution_drops_unknown_values_instead_of_zeroing_them() -> None:
    df = pl.DataFrame({"label": ["a", "a", "b"], "cost_usd": [0.1, None, 0.3]})
    rows = _rows(charts.distribution_chart(df, value="cost_usd", title="t", x_title="x").to_dict())
    assert sorted(r["cost_usd"] for r in rows) == [0.1, 0.3]


def test_config_label_and_with_labels() -> None:
    assert charts.config_label("fast", "m", "h", "1", "abc") == "fast"
    assert charts.config_label(None, "m", "h", "1.2", "abc") == "m / h@1.2"
    assert charts.config_label(None, None, None, None, "abcdef0123456789") == "abcdef012345"
    assert charts.config_label("sim", "m", "h", "1", "x", simulated=True) == "sim SIMULATED"
    frame = pl.DataFrame({"config_id": ["c1", "c2"], "rate": [0.1, 0.2]})
    configs = pl.DataFrame({"config_id": ["c1", "c2"], "variant": [None, "v2"], "model": ["m1", "m2"],
                            "harness": ["h", "h"], "harness_version": ["1", "1"], "simulated": [False, True]})
    assert charts.with_labels(frame, configs)["label"].to_list() == ["m1 / h@1", "v2 SIMULATED"]


@pytest.mark.slow
def test_every_chart_renders_to_png_and_svg(specs: dict[str, dict]) -> None:
    import vl_convert as vlc

    for name, spec in specs.items():
        png = vlc.vegalite_to_png(spec)
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000, name
        svg = vlc.vegalite_to_svg(spec)
        assert svg.lstrip().startswith("<svg") and "<path" in svg, name


def test_non_finite_values_never_reach_the_spec() -> None:
    """+∞ cost per accepted (nothing accepted) and NaN must not break a chart's JSON."""
    import json

    import polars as pl

    from analysis import charts

    df = pl.DataFrame({
        "label": ["a", "b"], "rate": [0.5, 0.0], "ci_low": [0.2, 0.0], "ci_high": [0.8, 0.3],
        "solved": [1, 0], "valid": [2, 3], "cost_per_accepted": [1.0, float("inf")],
        "cost_p50": [float("nan"), 2.0],
    })
    spec = charts.rate_chart(df).to_dict()
    rows = next(iter(spec["datasets"].values()))
    assert [r["cost_per_accepted"] for r in rows] == [1.0, None]
    assert [r["cost_p50"] for r in rows] == [None, 2.0]
    json.dumps(spec, allow_nan=False)


PASSK = pl.DataFrame({"label": ["a"] * 4 + ["b"] * 4, "k": [1, 2, 1, 2] * 2,
                      "metric": ["pass@k", "pass@k", "pass^k", "pass^k"] * 2,
                      "value": [0.6, 0.8, 0.6, 0.4, 0.5, 0.7, 0.5, 0.3]})


def test_pass_k_chart_gives_each_metric_its_own_titled_panel() -> None:
    spec = charts.pass_k_chart(PASSK).to_dict()
    assert spec["facet"]["column"]["field"] == "panel", "one panel per metric"
    assert {r["panel"] for r in _rows(spec)} == set(charts.METRIC_TITLES.values())
    x = spec["spec"]["encoding"]["x"]
    assert x["type"] == "quantitative" and x["axis"]["values"] == [1, 2], "integer k ticks"
    assert spec["spec"]["width"] >= 200, "not squashed"


def test_long_configuration_names_are_never_cut() -> None:
    """Vega truncates legend labels at 160 px and axis labels at 180 px unless told not to."""
    import vl_convert as vlc

    long = "planner-editor@0.9.1 / claude-3-7-sonnet-20250219 SIMULATED"
    spec = charts.failures_chart(pl.DataFrame({"label": [long, "b"], "category": ["x", "y"],
                                               "count": [2, 3]})).to_dict()
    assert spec["config"]["legend"]["labelLimit"] == 0 and spec["config"]["axis"]["labelLimit"] == 0
    svg = vlc.vegalite_to_svg(spec)
    assert long in svg and "…" not in svg


def test_has_data_tells_an_empty_chart() -> None:
    df = pl.DataFrame({"label": ["a", "b"], "cost_usd": [None, float("inf")]}, schema={"label": pl.String, "cost_usd": pl.Float64})
    assert not charts.has_data(df, "cost_usd")
    assert charts.has_data(df.with_columns(pl.lit(1.0).alias("cost_usd")), "cost_usd")


FIFTEEN = [f"configuration-{i:02d} / model-{i % 3}" for i in range(15)]


def _svg_height(spec: dict) -> float:
    import re

    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(spec)
    return float(re.search(r'<svg[^>]*\bheight="([\d.]+)"', svg).group(1))


def test_failures_chart_is_one_row_per_configuration() -> None:
    """15 configurations × 6 classes, sparse: one row each (grouped bars drew 15 sub-bands
    per class, ~2,000 px mostly blank); a category is kept apart per assigner."""
    cats = ["target_failed", "regression", "infra_error", "implementation", "verification",
            "budget_exhausted"]
    rows = [{"label": lab, "category": cats[(i + j) % 6], "count": 1 + j}
            for i, lab in enumerate(FIFTEEN) for j in range(2)]
    spec = charts.failures_chart(pl.DataFrame(rows)).to_dict()
    height = _svg_height(spec)
    assert height < 15 * 22 + 260, height
    assignees = pl.DataFrame({"label": ["a", "a"], "category": ["verification"] * 2, "count": [1, 2],
                              "assigned_by": ["reviewer", "judge"], "annotator": ["bob", "builtin m"]})
    cells = {r["category"] for r in _rows(charts.failures_chart(assignees).to_dict())}
    assert cells == {"verification (reviewer: bob)", "verification (judge: builtin m)"}


@pytest.mark.parametrize("n", [3, 8, 15, 20])
def test_configurations_get_distinct_colours(n: int) -> None:
    """Fifteen configurations are fifteen colours (an 8-colour palette repeated before)."""
    labels = FIFTEEN[:n] if n <= 15 else [f"c{i}" for i in range(n)]
    df = pl.DataFrame({"label": labels, "cost_usd": [0.1 * (i + 1) for i in range(n)]})
    color = charts.distribution_chart(df, value="cost_usd", title="t", x_title="x").to_dict()[
        "encoding"]["color"]["scale"]
    assert color["domain"] == sorted(labels) and len(set(color["range"])) == n
    if n <= 8:
        assert color["range"] == theme.PALETTE[:n]  # the colour-blind-safe palette first
    passk = pl.DataFrame({"label": labels, "k": [1] * n, "metric": ["pass@k"] * n, "value": [0.5] * n})
    scale = charts.pass_k_chart(passk).to_dict()["spec"]["encoding"]["color"]["scale"]
    assert len(set(scale["range"])) == n


def test_pareto_names_are_spaced_apart_inside_the_plot_and_near_their_points() -> None:
    """``place_labels``: crowded points get names at least LABEL_GAP px apart, in the order of
    their points, inside the plot's height; a point with room keeps its name at its height."""
    from analysis.charts.cost import LABEL_GAP, place_labels

    rates, domain, height = [0.80, 0.801, 0.799, 0.802, 0.3, 0.999], (0.25, 1.0), 260.0
    placed = place_labels(rates, domain, height)
    px = [height * (domain[1] - y) / (domain[1] - domain[0]) for y in placed]
    order = sorted(range(len(rates)), key=lambda i: -rates[i])
    assert [px[i] for i in order] == sorted(px), "names keep their points' order"
    gaps = [b - a for a, b in zip(sorted(px), sorted(px)[1:], strict=False)]
    assert min(gaps) >= LABEL_GAP - 1e-9 and 0 <= min(px) and max(px) <= height
    assert placed[4] == pytest.approx(0.3), "an uncrowded point keeps its name at its height"
    spec = charts.pareto_chart(PARETO).to_dict()
    text = next(layer for layer in spec["layer"] if layer.get("name") == "pareto_labels")
    assert text["encoding"]["y"]["field"] == "label_rate" and "value" in text["encoding"]["x"]
