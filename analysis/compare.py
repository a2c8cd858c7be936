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
from analysis.data import config_dict, config_table, resolve_config
from analysis.errors import AnalysisError
from analysis.filters import Filters, check_by

if TYPE_CHECKING:
    import duckdb
    import polars as pl

# Per-trial columns a comparison reads (names come from the configuration table).
_COLS = ["config_id", "case_id", "outcome", "complete", "holdout", "duration_s", "cost_usd"]


_DIRECTION_SCHEMA = {"case_id": "String", "baseline_solved": "Int64", "baseline_n": "Int64",
                     "candidate_solved": "Int64", "candidate_n": "Int64",
                     "direction": "String"}


@dataclass
class Comparison:
    """One candidate against the baseline; ``as_dict`` keys are documented in docs/analysis.md.

    ``direction_rows`` holds the per-task directions as plain records (the CLI prints them
    without loading polars); ``directions`` is the same as a DataFrame. The holdout
    block's ``directions`` are records too.
    """

    baseline: dict
    candidate: dict
    main: dict
    direction_rows: list[dict]
    holdout: dict | None = None
    warnings: list[str] = field(default_factory=list)
    slice: dict | None = None  # {column: value} when compared within one slice (``by``)

    @property
    def sign_test(self) -> dict:
        return self.main["sign_test"]

    @property
    def directions(self) -> pl.DataFrame:
        import polars as pl

        return pl.DataFrame(self.direction_rows,
                            schema={k: getattr(pl, v) for k, v in _DIRECTION_SCHEMA.items()})

    def as_dict(self) -> dict:
        from analysis.jsonout import clean

        out = {"baseline": self.baseline, "candidate": self.candidate}
        if self.slice is not None:
            out["slice"] = self.slice
        out.update({k: v for k, v in self.main.items() if k != "directions"})
        out["directions"] = None
        hd = None
        if self.holdout is not None:
            hd = clean({k: v for k, v in self.holdout.items() if k != "directions"})
            hd["directions"] = [dict(r) for r in self.holdout["directions"]]
        out["holdout"] = None
        out["warnings"] = self.warnings
        out = clean(out)  # directions hold only strings and counts: no cleaning needed
        out["directions"] = [dict(r) for r in self.direction_rows]
        out["holdout"] = hd
        return out


# One comparison block over the trial relation ``{rel}`` (config_id, case_id, rep, outcome,
# complete, holdout, duration_s, cost_usd): baseline ? vs candidate ?, holdout filter.
# Only per-task and per-pair aggregates leave DuckDB.
_SIDES = """
WITH s AS (
  SELECT config_id = ? AS is_c, case_id, rep, complete, duration_s, cost_usd,
         complete AND coalesce(outcome NOT IN ('infra_error', 'invalid'), FALSE) AS valid,
         coalesce(outcome = 'accepted', FALSE) AS accepted
  FROM {rel}
  WHERE config_id IN (?, ?) AND coalesce(holdout, FALSE) IN (SELECT unnest(?::BOOLEAN[])){sl}
)
"""

_PAIRS_SQL = _SIDES + """,
p AS (
  SELECT b.valid AND c.valid AS both_valid, b.accepted AS a_b, c.accepted AS a_c,
         c.duration_s - b.duration_s AS d_dur, c.cost_usd - b.cost_usd AS d_cost
  FROM s b JOIN s c ON b.case_id = c.case_id AND b.rep = c.rep
  WHERE NOT b.is_c AND c.is_c AND b.complete AND c.complete
)
SELECT
  count(*) FILTER (WHERE both_valid) AS pairs,
  count(*) FILTER (WHERE both_valid AND a_c AND NOT a_b) AS candidate_only,
  count(*) FILTER (WHERE both_valid AND a_b AND NOT a_c) AS baseline_only,
  count(*) FILTER (WHERE both_valid AND a_b AND a_c) AS both,
  count(*) FILTER (WHERE both_valid AND NOT a_b AND NOT a_c) AS neither,
  count(*) FILTER (WHERE NOT both_valid) AS excluded,
  (SELECT count(*) FILTER (WHERE NOT complete) FROM s) AS incomplete,
  count(*) FILTER (WHERE both_valid AND a_b AND a_c) AS acc_pairs,
  list(d_dur) FILTER (WHERE both_valid AND a_b AND a_c AND d_dur IS NOT NULL) AS dur,
  list(d_cost) FILTER (WHERE both_valid AND a_b AND a_c) AS cost
FROM p
"""  # noqa: S608 -- {rel} is an internal relation name

_TASKS_SQL = _SIDES + """,
t AS (
  SELECT is_c, case_id, count(*) AS n, count(*) FILTER (WHERE accepted) AS c
  FROM s WHERE valid GROUP BY ALL
),
common AS (
  SELECT b.case_id, b.c AS c_b, b.n AS n_b, c.c AS c_c, c.n AS n_c
  FROM t b JOIN t c ON b.case_id = c.case_id WHERE NOT b.is_c AND c.is_c
),
cov AS (
  SELECT is_c, count(cost_usd) / count(*) AS coverage
  FROM s SEMI JOIN common USING (case_id) WHERE complete GROUP BY is_c
)
SELECT 'task' AS kind, case_id, c_b, n_b, c_c, n_c, NULL AS coverage FROM common
UNION ALL
SELECT 'excluded', case_id, NULL, NULL, NULL, NULL, NULL
FROM (SELECT DISTINCT case_id FROM s) ANTI JOIN common USING (case_id)
UNION ALL
SELECT CASE WHEN is_c THEN 'cov_c' ELSE 'cov_b' END, NULL, NULL, NULL, NULL, NULL, coverage
FROM cov
ORDER BY kind, case_id
"""  # noqa: S608 -- {rel} is an internal relation name


def _slice_pred(slice_: dict | None) -> tuple[str, list]:
    """``AND col IS NOT DISTINCT FROM ?`` per slice column (names from SLICE_COLUMNS)."""
    if not slice_:
        return "", []
    return ("".join(f"\n    AND {col} IS NOT DISTINCT FROM ?" for col in slice_),
            list(slice_.values()))


def _block(con: duckdb.DuckDBPyConnection, rel: str, base: str, cand: str,
           holdout: list[bool], slice_: dict | None = None) -> dict:
    """Every statistic of one comparison over one set of tasks (main or holdout)."""

    sl, sl_params = _slice_pred(slice_)
    params = [cand, base, cand, holdout, *sl_params]
    pr = con.execute(_PAIRS_SQL.format(rel=rel, sl=sl), params).fetchall()[0]
    (n_pairs, cand_only, base_only, both, neither, excluded, incomplete, acc_pairs,
     dur, cost_d) = pr
    pair_block = {"pairs": n_pairs, "candidate_only": cand_only, "baseline_only": base_only,
                  "both": both, "neither": neither, "excluded": excluded,
                  "incomplete": incomplete}
    rows = con.execute(_TASKS_SQL.format(rel=rel, sl=sl), params).fetchall()
    tasks = [r for r in rows if r[0] == "task"]
    excluded_tasks = [r[1] for r in rows if r[0] == "excluded"]
    cov = {"baseline": next((r[6] for r in rows if r[0] == "cov_b"), None),
           "candidate": next((r[6] for r in rows if r[0] == "cov_c"), None)}
    dirs = [stats.direction(cc_, nc, cb, nb) for _, _, cb, nb, cc_, nc, _ in tasks]
    directions = [{"case_id": r[1], "baseline_solved": r[2], "baseline_n": r[3],
                   "candidate_solved": r[4], "candidate_n": r[5], "direction": d}
                  for r, d in zip(tasks, dirs, strict=True)]
    w, l_ = dirs.count("improvement"), dirs.count("regression")
    sign = stats.sign_test(w, l_)
    sign = {"improvements": w, "regressions": l_, "ties": dirs.count("tie"), "n": sign["n"],
            "p": sign["p"], "mid_p": sign["mid_p"], "p_reachable": sign["p_reachable"],
            "p_holm": None}
    pb = [r[2] / r[3] for r in tasks]
    pc = [r[4] / r[5] for r in tasks]
    diff = stats.paired_difference(pc, pb)

    def cons(c_i: int, n_i: int) -> dict:
        ns = [r[n_i] for r in tasks]
        return {"tasks": len(tasks), "consistent": sum(r[c_i] == r[n_i] for r in tasks),
                "min_n": min(ns) if ns else None, "max_n": max(ns) if ns else None}

    cb_, cc__ = cons(2, 3), cons(4, 5)
    comparable = (cb_["min_n"] is not None and cb_["min_n"] == cb_["max_n"]
                  == cc__["min_n"] == cc__["max_n"])
    note = None if comparable else (
        "repetition counts differ between or within the sides: consistency counts are not "
        "comparable")
    dur = dur or []
    full = cov["baseline"] == 1.0 and cov["candidate"] == 1.0
    cost = {"pairs_both_accepted": acc_pairs,
            "status": "ok" if full else "cost coverage incomplete",
            "mean_diff_usd": None, "total_diff_usd": None,
            "baseline_coverage": cov["baseline"], "candidate_coverage": cov["candidate"]}
    if full and acc_pairs:
        cost["mean_diff_usd"] = sum(cost_d) / len(cost_d)
        cost["total_diff_usd"] = sum(cost_d)
    return {
        "tasks": {"common": len(tasks), "excluded": excluded_tasks},
        "pairs": pair_block,
        "sign_test": sign,
        "paired_difference": diff,
        "consistency": {"baseline": cb_, "candidate": cc__, "comparable": comparable,
                        "note": note},
        "duration": {"pairs_both_accepted": acc_pairs,
                     "mean_diff_s": sum(dur) / len(dur) if dur else None,
                     "median_diff_s": statistics.median(dur) if dur else None},
        "cost": cost,
        "directions": directions,
    }


def _default_baseline(rows: list[dict], configs: list[dict]) -> dict:
    """The configuration with variant order 0 in the earliest run, else the first one."""
    first = [r for r in rows if r.get("variant_order") == 0]
    if first:
        first.sort(key=lambda r: (r.get("run_started_at") is None,
                                  r.get("run_started_at") or 0, r.get("run_id") is None,
                                  r.get("run_id") or ""))
        return resolve_config(configs, first[0]["config_id"])
    return config_dict(configs[0])


def _compare_rel(con: duckdb.DuckDBPyConnection, rel: str, base: dict, cands: list[dict],
                 holdout_mode: str, slice_: dict | None = None) -> list[Comparison]:
    """Run every comparison over the trial relation ``rel`` (see ``_SIDES``), optionally
    restricted to one slice; Holm adjusts over the candidates of that call."""
    sl, sl_params = _slice_pred(slice_)
    out = []
    for cand in cands:
        ids = (base["config_id"], cand["config_id"])
        hold = None
        if holdout_mode == "only":
            main = _block(con, rel, *ids, [False, True], slice_)
        else:
            main = _block(con, rel, *ids, [False], slice_)
            n_hold = con.execute(
                f"SELECT count(*) FROM {rel} WHERE config_id IN (?, ?) "  # noqa: S608
                f"AND coalesce(holdout, FALSE){sl}", [*ids, *sl_params]).fetchall()[0][0]
            if n_hold:
                h = _block(con, rel, *ids, [True], slice_)
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
                              direction_rows=main["directions"], holdout=hold,
                              warnings=warnings,
                              slice=dict(slice_) if slice_ is not None else None))
    adj = stats.holm([c.main["sign_test"]["p"] for c in out])
    for c, p in zip(out, adj, strict=True):
        c.main["sign_test"]["p_holm"] = p
    return out


def _sides(configs: list[dict], baseline: str | None, candidates: list[str] | None,
           default: dict | None) -> tuple[dict, list[dict]]:
    """Resolve the baseline and candidate configurations (names, ids or prefixes)."""
    if len(configs) < 2:
        raise AnalysisError("only one configuration in the selected trials: nothing to compare")
    base = resolve_config(configs, baseline) if baseline else default
    if base is None:
        raise AnalysisError("no baseline configuration; name one with --baseline")
    if candidates:
        cands = [resolve_config(configs, name) for name in candidates]
    else:
        cands = [config_dict(r) for r in configs if r["config_id"] != base["config_id"]]
    cands = [c for c in cands if c["config_id"] != base["config_id"]]
    if not cands:
        raise AnalysisError("the candidate is the baseline; name a different --candidate")
    return base, cands


def compare_frame(df: pl.DataFrame, baseline: str | None = None,
                  candidates: list[str] | None = None, holdout_mode: str = "include"
                  ) -> list[Comparison]:
    """Compare on a trial frame (columns as ``load_trials`` plus ``rep``).

    The frame is handed to an in-memory DuckDB, so this runs the same SQL as ``compare``.
    """
    import duckdb

    if df.height == 0:
        raise AnalysisError("no trials to compare; check the filters or the report")
    import polars as pl

    configs = config_table(df).to_dicts()
    firsts = []
    if not baseline and "variant_order" in df.columns:
        keep = [c for c in ("config_id", "variant_order", "run_started_at", "run_id")
                if c in df.columns]
        firsts = df.filter(pl.col("variant_order") == 0).select(keep).unique().to_dicts()
    base, cands = _sides(configs, baseline, candidates,
                         None if baseline else _default_baseline(firsts, configs))
    con = duckdb.connect()
    try:
        con.register("cmp_trials", df.select(["config_id", "case_id", "rep", "outcome",
                                              "complete", "holdout", "duration_s",
                                              "cost_usd"]))
        return _compare_rel(con, "cmp_trials", base, cands, holdout_mode)
    finally:
        con.close()


def compare(con: duckdb.DuckDBPyConnection, filters: Filters | None = None,
            baseline: str | None = None, candidates: list[str] | None = None,
            by: list[str] | str | None = None) -> list[Comparison]:
    """Candidates against a baseline over the warehouse (default: first variant of the run).

    The compared configurations' trials (with ``rep``) are staged once in a temporary
    table; every block is then aggregated in DuckDB and only per-task rows reach Python.
    With ``by``, each slice value (task class, repository, …) gets its own comparisons
    (``Comparison.slice``), each equal to an unsliced comparison of that slice's trials;
    slices where the baseline or a candidate has no trial are skipped.
    """
    import uuid

    from analysis.data import config_list, config_rows, trials_sql

    filters = filters or Filters()
    cfg_rows = config_rows(con, filters)
    if not cfg_rows:
        raise AnalysisError(f"no trials match the filters {filters.as_dict()}")
    table = config_list(cfg_rows)
    base, cands = _sides(table, baseline, candidates,
                         None if baseline else _default_baseline(cfg_rows, table))
    by_cols = check_by(by)
    ids = [base["config_id"], *[c["config_id"] for c in cands]]
    sql, params = trials_sql(filters, columns=[*_COLS, *by_cols], with_rep=True,
                             config_ids=ids)
    rel = f"cmp_trials_{uuid.uuid4().hex}"  # internal name, no user input
    con.execute(f"CREATE TEMP TABLE {rel} AS {sql}", params)
    try:
        if not by_cols:
            return _compare_rel(con, rel, base, cands, filters.holdout)
        return _compare_slices(con, rel, base, cands, filters.holdout, by_cols)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {rel}")


def _compare_slices(con: duckdb.DuckDBPyConnection, rel: str, base: dict, cands: list[dict],
                    holdout_mode: str, by_cols: list[str]) -> list[Comparison]:
    cols = ", ".join(by_cols)  # from SLICE_COLUMNS (check_by)
    present: dict[tuple, set[str]] = {}
    for *values, cid in con.execute(
            f"SELECT DISTINCT {cols}, config_id FROM {rel} "  # noqa: S608
            f"ORDER BY {cols} NULLS LAST").fetchall():
        present.setdefault(tuple(values), set()).add(cid)
    out = []
    for values, cids in present.items():
        if base["config_id"] not in cids:
            continue
        here = [c for c in cands if c["config_id"] in cids]
        if here:
            out.extend(_compare_rel(con, rel, base, here, holdout_mode,
                                    dict(zip(by_cols, values, strict=True))))
    if not out:
        raise AnalysisError(f"no {' × '.join(by_cols)} slice holds trials of both the baseline "
                            "and a candidate")
    return out


def compare_report(report_json_path: str | Path, baseline: str | None = None,
                   candidates: list[str] | None = None) -> list[Comparison]:
    """The same comparison straight from a runner ``report.json`` (no warehouse)."""
    import polars as pl

    path = Path(report_json_path)
    if path.is_dir() and (path / "report.json").is_file():
        path = path / "report.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisError(f"{path}: no such report; give RUN_DIR/report.json") from None
    except IsADirectoryError:
        raise AnalysisError(f"{path}: is a directory without report.json; give RUN_DIR/report.json") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{path}: cannot read report ({exc})") from None
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
