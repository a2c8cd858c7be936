"""Comparisons straight from a runner ``report.json`` (no warehouse): its trials become a
trial frame and go through ``compare_frame``, the same engine as ``compare``
(``analysis.paired.compare_relation``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analysis.comparison import ComparisonSet
from analysis.errors import AnalysisError

if TYPE_CHECKING:
    import polars as pl


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
            "simulated": bool(t.get("simulated") or (info.get(variant) or {}).get("simulated")),
        })
    return rows


def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: Sequence[str] | None = None) -> ComparisonSet:
    """The same comparison straight from a runner ``report.json`` (no warehouse); a trial
    or variant the runner marked simulated keeps its SIMULATED label."""
    import polars as pl

    path = Path(report_json_path)
    data = _read_report(path)
    schema: dict[str, Any] = {"config_id": pl.String, "variant": pl.String, "model": pl.String,
              "harness": pl.String, "harness_version": pl.String, "agent_kind": pl.String,
              "variant_order": pl.Int64, "run_started_at": pl.Datetime("us", "UTC"),
              "run_id": pl.String, "case_id": pl.String, "rep": pl.Int64, "outcome": pl.String,
              "complete": pl.Boolean, "holdout": pl.Boolean, "duration_s": pl.Float64,
              "cost_usd": pl.Float64, "simulated": pl.Boolean}
    return compare_frame(pl.DataFrame(_report_rows(path, data), schema=schema), baseline,
                         candidates)



_FRAME_COLS = ["config_id", "case_id", "rep", "outcome", "complete", "holdout", "duration_s",
               "cost_usd", "input_tokens", "output_tokens", "steps"]
_FRAME_OPTIONAL = {"input_tokens": "Int64", "output_tokens": "Int64", "steps": "Int64"}
"""Columns a frame may lack (a runner report.json has no steps): unknown, never 0."""


def compare_frame(df: pl.DataFrame, baseline: str | None = None,
                  candidates: Sequence[str] | None = None, holdout_mode: str = "include"
                  ) -> ComparisonSet:
    """Compare on a trial frame (columns as ``load_trials`` plus ``rep``; ``agent_kind``
    and ``variant_order`` when known). Runs the same SQL as ``compare`` in an in-memory
    DuckDB, through the same valid-trial rule."""
    import duckdb
    import polars as pl

    from analysis.data import config_table
    from analysis.eligibility import default_baseline, eligibility_from_kinds
    from analysis.paired import compare_relation
    from analysis.sides import sides
    from warehouse.rules import trial_status

    if df.height == 0:
        raise AnalysisError("no trials to compare; check the filters or the report")
    df = df.with_columns([pl.lit(None, getattr(pl, t)).alias(c)
                          for c, t in _FRAME_OPTIONAL.items() if c not in df.columns])
    configs = config_table(df).to_dicts()
    kinds: dict[str, str | None] = dict.fromkeys(df["config_id"].unique().to_list())
    if "agent_kind" in df.columns:
        kinds.update(dict(df.select("config_id", "agent_kind").unique("config_id").iter_rows()))
    roles = eligibility_from_kinds(kinds)
    firsts: list[dict] = []
    if not baseline and "variant_order" in df.columns:
        keep = [c for c in ("config_id", "variant_order", "run_started_at", "run_id")
                if c in df.columns]
        firsts = df.filter(pl.col("variant_order").is_not_null()).select(keep).unique().to_dicts()
    base, cands, excluded = sides(configs, roles, baseline, candidates,
                                   None if baseline else default_baseline(firsts, roles))
    con = duckdb.connect()
    try:
        # The columns trial_status reads besides the comparison's (a frame has no flags).
        con.register("cmp_source", df.select(_FRAME_COLS).with_columns(
            pl.lit(None, pl.String).alias("source_format"), pl.lit(None, pl.Int32).alias("flags")))
        con.execute(f"CREATE TEMP TABLE cmp_trials AS SELECT * FROM {trial_status('cmp_source')}")  # noqa: S608
        comps = compare_relation(con, "cmp_trials", base, cands, holdout_mode)
    finally:
        con.close()
    simulated = frozenset(df.filter(pl.col("simulated").fill_null(False))["config_id"].to_list()
                          if "simulated" in df.columns else [])
    return ComparisonSet(base, cands, comps, "requested" if baseline else "default", excluded,
                         simulated=simulated)
