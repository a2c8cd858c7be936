"""Comparisons straight from a runner ``report.json`` (no warehouse): its trials become a
trial frame and go through ``analysis.compare.compare_frame``, the same SQL as ``compare``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from analysis.comparison import ComparisonSet
from analysis.errors import AnalysisError


def _read_report(path: Path) -> dict:
    if path.is_dir() and (path / "report.json").is_file():
        path = path / "report.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"{path}: no such report; give RUN_DIR/report.json") from None
    except IsADirectoryError:
        raise AnalysisError(f"{path}: is a directory without report.json; give "
                            "RUN_DIR/report.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{path}: cannot read report ({exc})") from None
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("trials"), list):
        raise AnalysisError(f"{path}: no 'trials' list; is this a trialhouse report.json?")
    return data


def _report_rows(path: Path, data: dict) -> list[dict]:
    variants: list[Any] = data["variants"] if isinstance(data.get("variants"), list) else []
    info = {v.get("name") or v.get("variant"): v for v in variants if isinstance(v, dict)}
    names = [v.get("name") if isinstance(v, dict) else v for v in variants]
    order: dict[str, int] = {}
    rows = []
    for i, t in enumerate(data["trials"]):
        if not isinstance(t, dict) or "case_id" not in t:
            raise AnalysisError(f"{path}: trials[{i}] has no case_id")
        variant = t.get("variant")
        cid = t.get("config_id") or variant
        if cid is None:
            raise AnalysisError(f"{path}: trials[{i}] has neither config_id nor variant")
        order.setdefault(cid, len(order))
        usage = t.get("usage") or {}
        rows.append({
            "config_id": cid, "variant": variant, "model": t.get("model"),
            "harness": t.get("harness"), "harness_version": t.get("harness_version"),
            "agent_kind": (info.get(variant) or {}).get("agent_kind"),
            "variant_order": names.index(variant) if variant in names else (
                None if names else order[cid]),
            "run_started_at": None, "run_id": data.get("run_id"),
            "case_id": t["case_id"], "rep": int(t.get("repetition") or 1),
            "outcome": t.get("outcome"), "complete": t.get("outcome") is not None,
            "holdout": bool(t.get("holdout")), "duration_s": t.get("duration_s"),
            "cost_usd": usage.get("cost_usd"),
        })
    return rows


def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: Sequence[str] | None = None) -> ComparisonSet:
    """The same comparison straight from a runner ``report.json`` (no warehouse)."""
    import polars as pl

    path = Path(report_json_path)
    data = _read_report(path)
    schema: dict[str, Any] = {"config_id": pl.String, "variant": pl.String, "model": pl.String,
              "harness": pl.String, "harness_version": pl.String, "agent_kind": pl.String,
              "variant_order": pl.Int64, "run_started_at": pl.Datetime("us", "UTC"),
              "run_id": pl.String, "case_id": pl.String, "rep": pl.Int64, "outcome": pl.String,
              "complete": pl.Boolean, "holdout": pl.Boolean, "duration_s": pl.Float64,
              "cost_usd": pl.Float64}
    from analysis.compare import compare_frame

    return compare_frame(pl.DataFrame(_report_rows(path, data), schema=schema), baseline,
                         candidates)

