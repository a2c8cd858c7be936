"""Paired comparison of candidates against a baseline (STATISTICS.md, "Paired comparison").

Works on a trial frame, so the same code serves the warehouse and a runner report.json.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from analysis import stats
from analysis.data import CONFIG_KEYS, config_dict, config_table, load_trials, resolve_config
from analysis.errors import AnalysisError
from analysis.filters import Filters

if TYPE_CHECKING:
    import duckdb
    import polars as pl

_COLS = [*CONFIG_KEYS, "variant_order", "run_started_at", "run_id", "case_id", "outcome",
         "complete", "holdout", "duration_s", "cost_usd"]


@dataclass
class Comparison:
    """One candidate against the baseline; ``as_dict`` keys are documented in docs/analysis.md."""

    baseline: dict
    candidate: dict
    main: dict
    directions: pl.DataFrame
    holdout: dict | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def sign_test(self) -> dict:
        return self.main["sign_test"]

    def as_dict(self) -> dict:
        from analysis.jsonout import clean, frame_records

        out = {"baseline": self.baseline, "candidate": self.candidate}
        out.update({k: v for k, v in self.main.items() if k != "directions"})
        out["directions"] = frame_records(self.directions)
        if self.holdout is not None:
            hd = dict(self.holdout)
            hd["directions"] = frame_records(hd["directions"])
            out["holdout"] = hd
        else:
            out["holdout"] = None
        out["warnings"] = self.warnings
        return clean(out)


def _per_task(side: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    return (side.filter(pl.col("valid"))
            .group_by("case_id")
            .agg(n=pl.len(), c=pl.col("accepted").sum().cast(pl.Int64)))


def _block(b: pl.DataFrame, c: pl.DataFrame) -> dict:
    """Every statistic of one comparison over one set of tasks (main or holdout)."""
    import polars as pl

    bc, cc = b.filter(pl.col("complete")), c.filter(pl.col("complete"))
    incomplete = (b.height - bc.height) + (c.height - cc.height)
    pairs = bc.join(cc, on=["case_id", "rep"], suffix="_c")
    both_valid = pairs.filter(pl.col("valid") & pl.col("valid_c"))
    a_b, a_c = both_valid["accepted"], both_valid["accepted_c"]
    pair_block = {
        "pairs": both_valid.height,
        "candidate_only": int((a_c & ~a_b).sum()),
        "baseline_only": int((a_b & ~a_c).sum()),
        "both": int((a_b & a_c).sum()),
        "neither": int((~a_b & ~a_c).sum()),
        "excluded": pairs.height - both_valid.height,
        "incomplete": incomplete,
    }
    tb, tc = _per_task(bc), _per_task(cc)
    tasks = tb.join(tc, on="case_id", suffix="_c").sort("case_id")
    all_tasks = set(b["case_id"].to_list()) | set(c["case_id"].to_list())
    excluded_tasks = sorted(all_tasks - set(tasks["case_id"].to_list()))
    dirs = [stats.direction(cc_, nc, cb, nb) for cb, nb, cc_, nc in
            zip(tasks["c"], tasks["n"], tasks["c_c"], tasks["n_c"], strict=True)]
    directions = pl.DataFrame({
        "case_id": tasks["case_id"], "baseline_solved": tasks["c"], "baseline_n": tasks["n"],
        "candidate_solved": tasks["c_c"], "candidate_n": tasks["n_c"],
        "direction": pl.Series(dirs, dtype=pl.String),
    })
    w, l_ = dirs.count("improvement"), dirs.count("regression")
    sign = stats.sign_test(w, l_)
    sign = {"improvements": w, "regressions": l_, "ties": dirs.count("tie"), "n": sign["n"],
            "p": sign["p"], "mid_p": sign["mid_p"], "p_reachable": sign["p_reachable"],
            "p_holm": None}
    pb = [c_ / n for c_, n in zip(tasks["c"], tasks["n"], strict=True)]
    pc = [c_ / n for c_, n in zip(tasks["c_c"], tasks["n_c"], strict=True)]
    diff = stats.paired_difference(pc, pb)

    def cons(c_col: str, n_col: str) -> dict:
        ns = tasks[n_col].to_list()
        return {"tasks": tasks.height,
                "consistent": int((tasks[c_col] == tasks[n_col]).sum()),
                "min_n": min(ns) if ns else None, "max_n": max(ns) if ns else None}

    cb_, cc__ = cons("c", "n"), cons("c_c", "n_c")
    comparable = (cb_["min_n"] is not None and cb_["min_n"] == cb_["max_n"]
                  == cc__["min_n"] == cc__["max_n"])
    note = None if comparable else (
        "repetition counts differ between or within the sides: consistency counts are not "
        "comparable")

    acc = both_valid.filter(pl.col("accepted") & pl.col("accepted_c"))
    dur = [x - y for x, y in zip(acc["duration_s_c"], acc["duration_s"], strict=True)
           if x is not None and y is not None]
    in_tasks = set(tasks["case_id"].to_list())
    cov = {}
    for name, side in (("baseline", bc), ("candidate", cc)):
        s = side.filter(pl.col("case_id").is_in(list(in_tasks)))
        cov[name] = (s["cost_usd"].is_not_null().sum() / s.height) if s.height else None
    full = cov["baseline"] == 1.0 and cov["candidate"] == 1.0
    cost = {"pairs_both_accepted": acc.height,
            "status": "ok" if full else "cost coverage incomplete",
            "mean_diff_usd": None, "total_diff_usd": None,
            "baseline_coverage": cov["baseline"], "candidate_coverage": cov["candidate"]}
    if full and acc.height:
        d = (acc["cost_usd_c"] - acc["cost_usd"]).to_list()
        cost["mean_diff_usd"] = sum(d) / len(d)
        cost["total_diff_usd"] = sum(d)
    return {
        "tasks": {"common": tasks.height, "excluded": excluded_tasks},
        "pairs": pair_block,
        "sign_test": sign,
        "paired_difference": diff,
        "consistency": {"baseline": cb_, "candidate": cc__, "comparable": comparable,
                        "note": note},
        "duration": {"pairs_both_accepted": acc.height,
                     "mean_diff_s": sum(dur) / len(dur) if dur else None,
                     "median_diff_s": statistics.median(dur) if dur else None},
        "cost": cost,
        "directions": directions,
    }


def _prepare(df: pl.DataFrame) -> pl.DataFrame:
    import polars as pl

    return df.with_columns(
        valid=pl.col("complete") & ~pl.col("outcome").is_in(["infra_error", "invalid"])
        .fill_null(True),
        accepted=(pl.col("outcome") == "accepted").fill_null(False),
        holdout=pl.col("holdout").fill_null(False),
    )


def _default_baseline(df: pl.DataFrame, configs: pl.DataFrame) -> dict:
    import polars as pl

    if "variant_order" in df.columns:
        first = (df.filter(pl.col("variant_order") == 0)
                 .sort(["run_started_at", "run_id"], nulls_last=True).head(1))
        if first.height:
            return resolve_config(configs, first["config_id"][0])
    return config_dict(configs.row(0, named=True))


def compare_frame(df: pl.DataFrame, baseline: str | None = None,
                  candidates: list[str] | None = None, holdout_mode: str = "include"
                  ) -> list[Comparison]:
    """Compare on a trial frame (columns as ``load_trials`` plus ``rep``)."""
    import polars as pl

    if df.height == 0:
        raise AnalysisError("no trials to compare; check the filters or the report")
    df = _prepare(df)
    configs = config_table(df)
    if configs.height < 2:
        raise AnalysisError("only one configuration in the selected trials: nothing to compare")
    base = resolve_config(configs, baseline) if baseline else _default_baseline(df, configs)
    if candidates:
        cands = [resolve_config(configs, name) for name in candidates]
    else:
        cands = [config_dict(r) for r in configs.iter_rows(named=True)
                 if r["config_id"] != base["config_id"]]
    cands = [c for c in cands if c["config_id"] != base["config_id"]]
    if not cands:
        raise AnalysisError("the candidate is the baseline; name a different --candidate")
    b_all = df.filter(pl.col("config_id") == base["config_id"])
    out = []
    for cand in cands:
        c_all = df.filter(pl.col("config_id") == cand["config_id"])
        hold = None
        if holdout_mode == "only":
            main = _block(b_all, c_all)
        else:
            main = _block(b_all.filter(~pl.col("holdout")), c_all.filter(~pl.col("holdout")))
            hb, hc = b_all.filter(pl.col("holdout")), c_all.filter(pl.col("holdout"))
            if hb.height or hc.height:
                h = _block(hb, hc)
                hold = {"tasks": h["tasks"], "pairs": h["pairs"], "sign_test": h["sign_test"],
                        "paired_difference": h["paired_difference"],
                        "directions": h["directions"]}
        warnings = []
        n = main["sign_test"]["n"]
        if not main["sign_test"]["p_reachable"]:
            warnings.append(f"sign test on N = {n} untied task(s): p < 0.05 unreachable with "
                            "N < 6; descriptive only")
        if main["tasks"]["excluded"]:
            warnings.append(f"{len(main['tasks']['excluded'])} task(s) without a valid trial "
                            "on both sides excluded")
        if main["cost"]["status"] != "ok":
            warnings.append("cost coverage incomplete: no cost difference reported")
        out.append(Comparison(baseline=base, candidate=cand,
                              main={k: v for k, v in main.items() if k != "directions"},
                              directions=main["directions"], holdout=hold, warnings=warnings))
    adj = stats.holm([c.main["sign_test"]["p"] for c in out])
    for c, p in zip(out, adj, strict=True):
        c.main["sign_test"]["p_holm"] = p
    return out


def compare(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
            baseline: str | None = None, candidates: list[str] | None = None
            ) -> list[Comparison]:
    """Candidates against a baseline over the warehouse (default: first variant of the run)."""
    from analysis.data import configs as list_configs

    filters = filters or Filters()
    cfg_rows = list_configs(con, filters)
    if cfg_rows.height == 0:
        raise AnalysisError(f"no trials match the filters {filters.as_dict()}")
    table = config_table(cfg_rows)
    base = (resolve_config(table, baseline) if baseline
            else _default_baseline(cfg_rows, table))
    cands = [resolve_config(table, c) for c in candidates] if candidates else None
    ids = None if cands is None else [base["config_id"], *[c["config_id"] for c in cands]]
    df = load_trials(con, filters, columns=_COLS, with_rep=True, config_ids=ids)
    return compare_frame(df, base["config_id"],
                         [c["config_id"] for c in cands] if cands else None, filters.holdout)


def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: list[str] | None = None) -> list[Comparison]:
    """The same comparison straight from a runner ``report.json`` (no warehouse)."""
    import polars as pl

    path = Path(report_json_path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"{path}: no such report; give RUN_DIR/report.json") from None
    except json.JSONDecodeError as exc:
        raise AnalysisError(f"{path}: not valid JSON (line {exc.lineno}): {exc.msg}") from None
    trials = data.get("trials") if isinstance(data, dict) else None
    if not isinstance(trials, list):
        raise AnalysisError(f"{path}: no 'trials' list; is this a trialhouse report.json?")
    order: dict[str, int] = {}
    rows = []
    for i, t in enumerate(trials):
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
            "variant_order": None, "run_started_at": None, "run_id": data.get("run_id"),
            "case_id": t["case_id"], "rep": int(t.get("repetition") or 1),
            "outcome": t.get("outcome"), "complete": t.get("outcome") is not None,
            "holdout": bool(t.get("holdout")), "duration_s": t.get("duration_s"),
            "cost_usd": usage.get("cost_usd"),
        })
    variants = data.get("variants")
    if isinstance(variants, list) and variants:
        names = [v.get("name") if isinstance(v, dict) else v for v in variants]
        for row in rows:
            if row["variant"] in names:
                row["variant_order"] = names.index(row["variant"])
    else:
        for row in rows:
            row["variant_order"] = order[row["config_id"]]
    schema = {"config_id": pl.String, "variant": pl.String, "model": pl.String,
              "harness": pl.String, "harness_version": pl.String, "variant_order": pl.Int64,
              "run_started_at": pl.Datetime("us", "UTC"), "run_id": pl.String,
              "case_id": pl.String, "rep": pl.Int64, "outcome": pl.String,
              "complete": pl.Boolean, "holdout": pl.Boolean, "duration_s": pl.Float64,
              "cost_usd": pl.Float64}
    df = pl.DataFrame(rows, schema=schema)
    return compare_frame(df, baseline, candidates)
