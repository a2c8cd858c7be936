"""The no-agent and oracle baselines are reference points on the Pareto plot, not contenders."""

from __future__ import annotations

from analysis.pareto import front_rows


def _pt(cid: str, x: float | None, rate: float) -> dict:
    return {"config_id": cid, "x": x, "rate": rate, "ci_low": rate - 0.1, "ci_high": rate + 0.1}


def test_baselines_do_not_dominate_agents() -> None:
    points = [_pt("oracle", 0.0, 1.0), _pt("none", float("inf"), 0.0),
              _pt("a", 0.2, 0.9), _pt("b", 0.1, 0.8), _pt("c", 0.3, 0.7)]
    rows = {r["config_id"]: r for r in front_rows(points, baselines={"oracle", "none"})}
    assert rows["oracle"]["role"] == rows["none"]["role"] == "baseline"
    assert rows["oracle"]["on_front"] is None and rows["oracle"]["dominated_by"] == []
    assert rows["a"]["on_front"] and rows["b"]["on_front"]
    assert rows["c"]["on_front"] is False and set(rows["c"]["dominated_by"]) == {"a", "b"}


def test_without_baselines_the_oracle_would_dominate_everything() -> None:
    points = [_pt("oracle", 0.0, 1.0), _pt("a", 0.2, 0.9), _pt("b", 0.1, 0.8)]
    rows = {r["config_id"]: r for r in front_rows(points)}
    assert rows["oracle"]["on_front"] and not rows["a"]["on_front"] and not rows["b"]["on_front"]


def test_only_baselines_are_ranked_among_themselves() -> None:
    points = [_pt("oracle", 0.0, 1.0), _pt("none", 0.0, 0.0)]
    rows = {r["config_id"]: r for r in front_rows(points, baselines={"oracle", "none"})}
    assert rows["oracle"]["on_front"] and rows["none"]["on_front"] is False
