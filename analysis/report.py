"""The comparison report: one offline HTML page, the same findings as Markdown, every number as JSON.

``build_report`` asks the analysis functions their questions (it computes no statistic
of its own), turns the answers into sections of paragraphs, tables and charts, and
writes ``report.html`` (Vega/Vega-Lite inlined: opens without a network),
``report.md``, ``report.json`` and each chart as PNG and SVG into one directory.

Periods: ``since``/``until`` select a window of trials; ``previous_period`` compares it
with the window of the same length just before ``since``, per configuration, paired
by task where the two windows share tasks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analysis.errors import AnalysisError

SCHEMA = "trialhouse.report/1"
SMALL_TASKS = 10  # fewer tasks than this: results are a descriptive sample
TEMPLATES = Path(__file__).with_name("templates")


@dataclass
class ReportPaths:
    """Where a report was written."""

    directory: Path
    html: Path
    markdown: Path
    json: Path
    charts: dict[str, dict[str, Path]] = field(default_factory=dict)  # name -> {"png", "svg"}


@dataclass
class Table:
    caption: str
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.numeric:
            self.numeric = [False] * len(self.columns)


@dataclass
class Section:
    id: str
    title: str
    paragraphs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    oks: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)
    absent: str | None = None


# --------------------------------------------------------------------------- formatting


def pct(k: int | None, n: int | None) -> str:
    """'3/4 (75%)': a count always stands beside its percentage."""
    if n is None or k is None:
        return "—"
    if n == 0:
        return f"{k}/0 (—)"
    return f"{k}/{n} ({100 * k / n:.0f}%)"


def rate(r: Any) -> str:
    return "—" if r is None else f"{100 * float(r):.1f}%"


def interval(lo: Any, hi: Any, *, percent: bool = True) -> str:
    if lo is None or hi is None:
        return "—"
    lo, hi = max(float(lo), 0.0), min(float(hi), 1.0)  # a rate lies in [0, 1]
    if percent:
        return f"{100 * float(lo):.1f}–{100 * float(hi):.1f}%"
    return f"{float(lo):.3f}–{float(hi):.3f}"


def usd(v: Any, coverage: Any = None) -> str:
    if v == "inf" or (isinstance(v, float) and v == float("inf")):
        return "∞ (none accepted)"
    if v is None:
        if coverage is not None:
            return f"unknown (cost known for {100 * float(coverage):.0f}% of trials)"
        return "unknown"
    return f"${float(v):.4f}"


def secs(v: Any) -> str:
    return "—" if v is None else f"{float(v):.1f}s"


def pval(p: Any) -> str:
    return "—" if p is None else (f"{float(p):.3f}" if float(p) >= 0.001 else "<0.001")


def label_of(row: dict, simulated: set[str]) -> str:
    from analysis.charts import config_label

    return config_label(
        row.get("variant"),
        row.get("model"),
        row.get("harness"),
        row.get("harness_version"),
        row.get("config_id"),
        row.get("config_id") in simulated,
    )


# --------------------------------------------------------------------------- periods


def _as_time(value: Any, name: str) -> datetime | None:
    from analysis.filters import _parse_time

    return _parse_time(value, name)


def previous_window(since: datetime, until: datetime) -> tuple[datetime, datetime]:
    """The window of the same length that ends where ``since`` begins."""
    if until <= since:
        raise AnalysisError(
            f"--until {until.date()} is not after --since {since.date()}; give a non-empty window"
        )
    return since - (until - since), since


# --------------------------------------------------------------------------- gathering


def _run_controls(con: Any, run_ids: list[str]) -> list[dict]:
    sql = """
SELECT run_id, source_format, source_path, manifest_id, manifest_sha256, started_at,
       finished_at, status, engine_version, os, python, git_version, repository,
       initial_commit, repetitions, max_attempts, timeout_seconds, max_cost_usd,
       simulated, prices_as_of, run_cost_usd
FROM runs
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
ORDER BY started_at NULLS LAST, run_id
"""
    return con.sql(sql, params=[run_ids]).pl().to_dicts()


def _config_rows(con: Any, run_ids: list[str]) -> list[dict]:
    sql = """
SELECT config_id, any_value(variant) AS variant, any_value(model) AS model,
       any_value(harness) AS harness, any_value(harness_version) AS harness_version,
       any_value(reasoning_effort) AS reasoning_effort, bool_or(simulated) AS simulated,
       string_agg(DISTINCT source_format, ', ') AS source_format, min(variant_order) AS variant_order
FROM configs
WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
GROUP BY config_id
ORDER BY min(variant_order) NULLS LAST, config_id
"""
    return con.sql(sql, params=[run_ids]).pl().to_dicts()


def _period_changes(con: Any, current: Any, previous: Any, simulated: set[str]) -> dict:
    """Per configuration: rate in each window and per-task directions where tasks overlap."""
    import polars as pl

    from analysis import stats
    from analysis.data import INVALID, load_trials

    cols = [
        "config_id",
        "variant",
        "model",
        "harness",
        "harness_version",
        "case_id",
        "outcome",
        "complete",
    ]

    def counts(filters: Any) -> pl.DataFrame:
        df = load_trials(con, filters, columns=cols)
        valid = df.filter(pl.col("complete") & ~pl.col("outcome").is_in(list(INVALID)))
        return valid.group_by(["config_id", "case_id"]).agg(
            pl.len().alias("n"),
            (pl.col("outcome") == "accepted").sum().alias("c"),
            pl.col("variant").first(),
            pl.col("model").first(),
            pl.col("harness").first(),
            pl.col("harness_version").first(),
        )

    cur, prev = counts(current), counts(previous)
    rows = []
    for cid in sorted(set(cur["config_id"].to_list()) | set(prev["config_id"].to_list())):
        a = prev.filter(pl.col("config_id") == cid)
        b = cur.filter(pl.col("config_id") == cid)
        meta = (b if b.height else a).row(0, named=True)
        row: dict[str, Any] = {
            k: meta.get(k) for k in ("config_id", "variant", "model", "harness", "harness_version")
        }
        row["previous_valid"], row["previous_solved"] = int(a["n"].sum()), int(a["c"].sum())
        row["current_valid"], row["current_solved"] = int(b["n"].sum()), int(b["c"].sum())
        row["previous_rate"] = (
            row["previous_solved"] / row["previous_valid"] if row["previous_valid"] else None
        )
        row["current_rate"] = (
            row["current_solved"] / row["current_valid"] if row["current_valid"] else None
        )
        pairs = a.join(b, on="case_id", suffix="_cur")
        dirs = [
            stats.direction(int(r["c_cur"]), int(r["n_cur"]), int(r["c"]), int(r["n"]))
            for r in pairs.to_dicts()
        ]
        st = {
            **stats.sign_test(dirs.count("improvement"), dirs.count("regression")),
            "ties": dirs.count("tie"),
        }
        row["common_tasks"] = pairs.height
        row["sign_test"] = st
        if not a.height:
            verdict = "new this period"
        elif not b.height:
            verdict = "not run this period"
        elif pairs.height == 0:
            verdict = "no tasks in common: not comparable"
        elif st["p"] < 0.05 and st["improvements"] > st["regressions"]:
            verdict = "improved"
        elif st["p"] < 0.05 and st["regressions"] > st["improvements"]:
            verdict = "regressed"
        else:
            verdict = "no clear change"
        row["verdict"] = verdict
        row["label"] = label_of(row, simulated)
        rows.append(row)
    return {"rows": rows}


def _gather(con: Any, filters: Any, baseline: str | None, previous: Any | None) -> dict:
    """Ask every analysis its question; an analysis that cannot answer says why."""
    from analysis import (
        compare,
        consistency,
        failures,
        familiarity,
        latency,
        matrix,
        pareto,
        summary,
    )
    from analysis.data import load_trials, require_trials

    trials = load_trials(
        con,
        filters,
        columns=[
            "run_id",
            "config_id",
            "variant",
            "model",
            "harness",
            "harness_version",
            "outcome",
            "complete",
            "cost_usd",
            "duration_s",
            "simulated",
        ],
    )
    require_trials(trials, filters)
    run_ids = sorted(set(trials["run_id"].to_list()))
    out: dict[str, Any] = {"trials": trials, "run_ids": run_ids}
    out["runs"] = _run_controls(con, run_ids)
    out["configs"] = _config_rows(con, run_ids)
    out["summary"] = summary.summarize(con, filters)
    try:
        out["comparisons"] = compare.compare(con, filters, baseline=baseline)
        out["compare_error"] = None
    except AnalysisError as exc:
        if baseline is not None:
            raise
        out["comparisons"], out["compare_error"] = [], str(exc)
    out["consistency"] = consistency.consistency(con, filters)
    out["pareto"] = pareto.pareto(con, filters, x="cost_per_accepted")
    out["pareto_trial"] = pareto.pareto(con, filters, x="cost_per_trial")
    try:
        out["matrix"], out["matrix_error"] = matrix.matrix(con, filters), None
    except AnalysisError as exc:
        out["matrix"], out["matrix_error"] = None, str(exc)
    out["failures"] = failures.failures(con, filters)
    try:
        out["familiarity"] = familiarity.familiarity(con, filters)
    except AnalysisError:
        # Foreign runs rarely label repositories known/unknown: the section says so.
        import polars as pl

        out["familiarity"] = pl.DataFrame()
    out["latency"] = latency.latency(con, filters)
    return out


# --------------------------------------------------------------------------- sections


def _small_sample_warning(tasks: int | None, what: str) -> list[str]:
    if tasks is not None and tasks < SMALL_TASKS:
        return [
            f"Descriptive sample: {what} rests on {tasks} task(s) (< {SMALL_TASKS}); "
            "read the numbers as a description of these tasks, not as an estimate."
        ]
    return []


def _controls_section(g: dict, simulated: set[str]) -> Section:
    s = Section("controls", "Controls: what was run, on what")
    runs, configs = g["runs"], g["configs"]
    s.paragraphs.append(
        f"{len(runs)} run(s), {len(configs)} configuration(s), {g['trials'].height} trial(s) selected. "
        "A configuration is model + harness + harness version + settings, never the model alone."
    )
    s.tables.append(
        Table(
            "Runs (manifest hashes, pinned commits, engine and OS versions, price table date)",
            [
                "run",
                "source",
                "manifest",
                "manifest sha256",
                "initial commit",
                "started",
                "engine",
                "OS",
                "python / git",
                "prices as of",
                "status",
            ],
            [
                [
                    r["run_id"] + (" SIMULATED" if r.get("simulated") else ""),
                    r.get("source_format") or "—",
                    r.get("manifest_id") or "—",
                    (r.get("manifest_sha256") or "—")[:16],
                    (r.get("initial_commit") or "—")[:12],
                    r["started_at"].strftime("%Y-%m-%d %H:%M UTC") if r.get("started_at") else "—",
                    r.get("engine_version") or "—",
                    r.get("os") or "—",
                    f"{r.get('python') or '—'} / {r.get('git_version') or '—'}",
                    r.get("prices_as_of") or "none (cost from the agent, or unknown)",
                    r.get("status") or "—",
                ]
                for r in runs
            ],
        )
    )
    s.tables.append(
        Table(
            "Configurations",
            [
                "configuration",
                "config_id",
                "model",
                "harness",
                "version",
                "effort",
                "source",
                "simulated",
            ],
            [
                [
                    label_of(c, simulated),
                    c["config_id"][:12],
                    c.get("model") or "—",
                    c.get("harness") or "—",
                    c.get("harness_version") or "—",
                    c.get("reasoning_effort") or "—",
                    c.get("source_format") or "—",
                    "SIMULATED" if c.get("simulated") else "no",
                ]
                for c in configs
            ],
        )
    )
    sim_runs = [r["run_id"] for r in runs if r.get("simulated")]
    if simulated or sim_runs:
        names = (
            ", ".join(label_of(c, set()) for c in configs if c["config_id"] in simulated) or "none"
        )
        s.warnings.append(
            f"SIMULATED: configurations {names}; runs flagged simulated: {', '.join(sim_runs) or 'none'}. "
            "Simulated agents are seeded stand-ins; their numbers describe the pipeline, not a model."
        )
    return s


def _summary_section(g: dict, simulated: set[str]) -> Section:
    summ = g["summary"]
    s = Section("summary", "Per-configuration summary")
    rows = summ.table.to_dicts()
    s.paragraphs.append(
        "Accepted / valid trials with a Wilson 95% interval (per trial: too narrow when tasks repeat), "
        "then the mean of per-task rates with a task-clustered interval (tasks as a sample). "
        "Infrastructure errors and invalid trials are excluded from rates and counted apart. "
        "Only tasks every configuration attempted are used; no single weighted score is given."
    )
    s.charts += ["rate", "outcomes"]
    s.tables.append(
        Table(
            "Quality",
            [
                "configuration",
                "accepted / valid",
                "95% CI (per trial)",
                "tasks",
                "task mean (95% CI, tasks as a sample)",
                "infra",
                "invalid",
                "incomplete",
                "median steps",
                "median tokens",
                "median wall time",
            ],
            [
                [
                    label_of(r, simulated),
                    pct(r["solved"], r["valid"]),
                    interval(r["ci_low"], r["ci_high"]),
                    str(r["tasks"]),
                    f"{rate(r['task_mean'])} ({interval(r['task_ci_low'], r['task_ci_high'])})",
                    str(r["infra"]),
                    str(r["invalid"]),
                    str(r["incomplete"]),
                    _num(r["med_steps"]),
                    _num(r["med_tokens"]),
                    secs(r["med_duration_s"]),
                ]
                for r in rows
            ],
            [False] + [True] * 10,
        )
    )
    s.tables.append(
        Table(
            "Cost (failed trials' spend included in cost per accepted result)",
            [
                "configuration",
                "total cost",
                "cost known for",
                "cost per accepted",
                "cost p50 / p90 / p95 per trial",
            ],
            [
                [
                    label_of(r, simulated),
                    usd(r["cost_usd"], r["cost_coverage"]),
                    pct(r.get("cost_known"), r["trials"]),
                    usd(r["cost_per_solved"], r["cost_coverage"]),
                    " / ".join(usd(r[k]) for k in ("cost_p50", "cost_p90", "cost_p95")),
                ]
                for r in rows
            ],
            [False, True, True, True, True],
        )
    )
    tasks = min((r["tasks"] for r in rows), default=0)
    s.warnings += _small_sample_warning(tasks, "the summary")
    s.warnings += list(summ.warnings)
    for ex in summ.excluded_cases:
        if ex.get("case_ids"):
            s.warnings.append(
                f"Left out for {label_of(ex, simulated)} (not attempted by every configuration): "
                + ", ".join(ex["case_ids"])
            )
    return s


def _num(v: Any) -> str:
    if v is None:
        return "—"
    return f"{float(v):g}"


def _comparison_section(g: dict, simulated: set[str]) -> Section:
    s = Section("comparison", "Paired comparison against the baseline")
    comps = g["comparisons"]
    if not comps:
        s.absent = (
            f"No paired comparison: {g['compare_error'] or 'only one configuration was selected'}."
        )
        return s
    base = comps[0].as_dict()["baseline"]
    s.paragraphs.append(
        f"Baseline: {label_of(base, simulated)}. Pairs are (task, repetition) with both sides complete; "
        "each unique task gets one direction (improvement, regression or tie, compared as exact fractions), "
        "and the exact two-sided sign test runs on those directions. p-values are Holm-adjusted across candidates."
    )
    s.charts.append("directions")
    rows_pairs, rows_test, rows_cost = [], [], []
    for comp in comps:
        d = comp.as_dict()
        lab = label_of(d["candidate"], simulated)
        p, st, pdiff = d["pairs"], d["sign_test"], d["paired_difference"]
        rows_pairs.append(
            [
                lab,
                str(p["pairs"]),
                str(p["candidate_only"]),
                str(p["baseline_only"]),
                str(p["both"]),
                str(p["neither"]),
                str(p["excluded"]),
                str(d["tasks"]["common"]),
            ]
        )
        reach = "" if st.get("p_reachable", True) else " (p < 0.05 unreachable with N < 6)"
        rows_test.append(
            [
                lab,
                str(st["improvements"]),
                str(st["regressions"]),
                str(st.get("ties", "—")),
                pval(st["p"]) + reach,
                pval(st["mid_p"]),
                pval(st.get("p_holm")),
                diff_ci(pdiff.get("mean_diff"), pdiff.get("ci_low"), pdiff.get("ci_high")),
            ]
        )
        cost = d["cost"]
        cost_txt = (
            f"{_signed(cost['mean_diff_usd'], money=True)} per pair"
            if cost.get("status") == "ok"
            else cost.get("status") or "—"
        )
        rows_cost.append(
            [
                lab,
                str(d["duration"]["pairs_both_accepted"]),
                _signed(d["duration"].get("mean_diff_s"), unit="s"),
                cost_txt,
            ]
        )
        s.warnings += [f"{lab}: {w}" for w in d.get("warnings", [])]
        s.warnings += _small_sample_warning(d["tasks"]["common"], f"the comparison of {lab}")
        if d.get("holdout"):
            h = d["holdout"]
            hs = h["sign_test"]
            tasks = h["tasks"]["common"] if isinstance(h["tasks"], dict) else h["tasks"]
            pairs = h["pairs"]["pairs"] if isinstance(h["pairs"], dict) else h["pairs"]
            s.paragraphs.append(
                f"Holdout block for {lab} (reported apart, not in the sign test above): {tasks} task(s), "
                f"{pairs} pair(s); "
                f"{hs['improvements']} improved, {hs['regressions']} regressed, p = {pval(hs['p'])}."
            )
    s.tables.append(
        Table(
            "Pairs (task × repetition)",
            [
                "candidate",
                "pairs",
                "candidate only",
                "baseline only",
                "both",
                "neither",
                "excluded (infra/invalid)",
                "common tasks",
            ],
            rows_pairs,
            [False] + [True] * 7,
        )
    )
    s.tables.append(
        Table(
            "Per-task directions and sign test",
            [
                "candidate",
                "improved tasks",
                "regressed tasks",
                "ties",
                "p",
                "mid-p",
                "p (Holm)",
                "mean difference of task rates (95% CI)",
            ],
            rows_test,
            [False] + [True] * 7,
        )
    )
    s.tables.append(
        Table(
            "Time and cost on pairs both accepted",
            ["candidate", "pairs both accepted", "mean wall-time difference", "cost difference"],
            rows_cost,
            [False, True, True, True],
        )
    )
    return s


def diff_ci(v: Any, lo: Any, hi: Any) -> str:
    """A difference of rates in percentage points with its interval: '+3.0 pp (-20.4 to +26.4)'."""
    if v is None:
        return "—"
    if lo is None or hi is None:
        return _signed(v)
    # A difference of rates lies in [-1, 1]; t intervals can cross that, so the table
    # shows the possible part (report.json keeps the exact interval).
    lo, hi = max(float(lo), -1.0), min(float(hi), 1.0)
    return f"{_signed(v)} ({100 * lo:+.1f} to {100 * hi:+.1f})"


def _signed(v: Any, *, unit: str = "", money: bool = False) -> str:
    if v is None:
        return "—"
    v = float(v)
    if money:
        return f"{'+' if v >= 0 else '−'}${abs(v):.4f}"
    if unit:
        return f"{v:+.1f}{unit}"
    return f"{100 * v:+.1f} pp"


def _consistency_section(g: dict, simulated: set[str]) -> Section:
    s = Section("consistency", "Consistency and pass^k")
    rows = g["consistency"].to_dicts()
    s.paragraphs.append(
        "Consistent tasks passed every repetition (Wilson interval over tasks). pass^k: the chance that k "
        "repetitions all succeed; pass@k: that at least one does (unbiased estimators, k up to the fewest "
        "repetitions of any task). Consistency counts are only comparable between equal repetition counts."
    )
    s.charts.append("passk")
    kmax = max((len(r.get("pass_hat_k") or []) for r in rows), default=0)
    s.tables.append(
        Table(
            "Consistency",
            ["configuration", "consistent tasks", "95% CI", "repetitions (min–max)"]
            + [f"pass^{k}" for k in range(1, kmax + 1)]
            + [f"pass@{k}" for k in range(1, kmax + 1)],
            [
                [
                    label_of(r, simulated),
                    pct(r["consistent"], r["tasks"]),
                    interval(r["ci_low"], r["ci_high"]),
                    f"{r['min_n']}–{r['max_n']}",
                ]
                + [_prob(_at(r.get("pass_hat_k"), k)) for k in range(kmax)]
                + [_prob(_at(r.get("pass_at_k"), k)) for k in range(kmax)]
                for r in rows
            ],
            [False] + [True] * (3 + 2 * kmax),
        )
    )
    if len({r["min_n"] for r in rows}) > 1 or any(not r.get("equal_n", True) for r in rows):
        s.warnings.append(
            "Repetition counts differ between configurations or tasks: compare pass^k at the same k, "
            "not the consistency counts."
        )
    return s


def _prob(v: Any) -> str:
    """An estimated probability (not a count ratio), so written as a number, not a percentage."""
    return "—" if v is None else f"{float(v):.3f}"


def _at(xs: list | None, i: int) -> Any:
    return xs[i] if xs and i < len(xs) else None


def _pareto_section(g: dict, simulated: set[str]) -> Section:
    s = Section("pareto", "Cost and quality: the Pareto front")
    rows = g["pareto"].to_dicts()
    names = {r["config_id"]: label_of(r, simulated) for r in rows}
    s.paragraphs.append(
        "One point per configuration: cost per accepted result (all spend, failed trials included, divided by "
        "accepted results) against acceptance rate. A configuration is dominated when another is at least as "
        "cheap and at least as good, and strictly better on one."
    )
    s.charts += ["pareto", "pareto_trial"]
    s.tables.append(
        Table(
            "Front and dominated configurations",
            [
                "configuration",
                "cost per accepted",
                "accepted / valid",
                "status",
                "dominated by",
                "interval overlap",
            ],
            [
                [
                    names[r["config_id"]],
                    usd(r["x"]),
                    pct(r["solved"], r["valid"]),
                    "baseline (reference point, not ranked)"
                    if r.get("role") == "baseline"
                    else "not placed (cost unknown)"
                    if r["on_front"] is None
                    else ("on the front" if r["on_front"] else "dominated"),
                    ", ".join(names.get(c, c[:12]) for c in (r.get("dominated_by") or [])) or "—",
                    "yes: the difference may be noise" if r.get("overlap") else "no",
                ]
                for r in rows
            ],
            [False, True, True, False, False, False],
        )
    )
    unplaced = [names[r["config_id"]] for r in rows
                if r.get("role") != "baseline" and (r["on_front"] is None or r["x"] == "inf")]
    if any(r.get("role") == "baseline" for r in rows):
        s.paragraphs.append(
            "The no-agent (null) and oracle (reference) configurations are drawn as reference "
            "points but not ranked: one spends nothing, the other applies the known answer."
        )
    if unplaced:
        s.warnings.append("Not drawn (cost unknown or nothing accepted): " + ", ".join(unplaced))
    return s


def _matrix_section(g: dict, simulated: set[str]) -> Section:
    s = Section("matrix", "Model × harness")
    m = g["matrix"]
    if m is None:
        s.absent = f"No model × harness grid: {g['matrix_error']}"
        return s
    d = m.as_dict()
    s.paragraphs.append(d["verdict"])
    s.charts.append("matrix")
    it = d["interaction"]
    s.paragraphs.append(
        f"Interaction (does the harness change the model effect?): {it.get('method')}, "
        f"χ² = {_num(it.get('chi2'))} on {it.get('df')} df, p = {pval(it.get('p'))}"
        + (f" — {it['note']}" if it.get("note") else "")
        + f". Common tasks: {d['common_tasks']}."
    )
    s.tables.append(
        Table(
            "Model effect within each harness (paired by task)",
            [
                "harness",
                "model A",
                "model B",
                "mean difference B − A (95% CI)",
                "sign test (improved/regressed, p)",
            ],
            [
                [
                    e["harness"],
                    e["model_a"],
                    e["model_b"],
                    diff_ci(e["mean_diff"], e["ci_low"], e["ci_high"]),
                    f"{e['sign_test']['improvements']}/{e['sign_test']['regressions']}, p = {pval(e['sign_test']['p'])}",
                ]
                for e in d["model_effects"]
            ],
        )
    )
    s.tables.append(
        Table(
            "Harness effect within each model (paired by task)",
            [
                "model",
                "harness A",
                "harness B",
                "mean difference B − A (95% CI)",
                "sign test (improved/regressed, p)",
            ],
            [
                [
                    e["model"],
                    e["harness_a"],
                    e["harness_b"],
                    diff_ci(e["mean_diff"], e["ci_low"], e["ci_high"]),
                    f"{e['sign_test']['improvements']}/{e['sign_test']['regressions']}, p = {pval(e['sign_test']['p'])}",
                ]
                for e in d["harness_effects"]
            ],
        )
    )
    s.warnings += list(d.get("warnings", []))
    s.warnings += _small_sample_warning(d["common_tasks"], "the model × harness grid")
    return s


def _failures_section(g: dict, simulated: set[str]) -> Section:
    import polars as pl

    s = Section("failures", "Failure categories and lost spend")
    df = g["failures"]
    s.paragraphs.append(
        "Outcome classes per configuration, then the first decisive wrong choice where a human or judge "
        "annotated it (latest annotation per trial and annotator). Lost spend = cost of the trials in the class."
    )
    s.charts.append("failures")
    rows = df.to_dicts()
    s.tables.append(
        Table(
            "Outcomes and categories",
            [
                "configuration",
                "dimension",
                "class / category",
                "annotator",
                "trials (share)",
                "lost spend",
            ],
            [
                [
                    label_of(r, simulated),
                    r["dimension"],
                    r["value"],
                    r.get("annotator") or "—",
                    pct(r["count"], r["total"]),
                    usd(r["lost_spend_usd"], r.get("cost_coverage"))
                    if r["value"] != "accepted"
                    else "—",
                ]
                for r in rows
            ],
            [False, False, False, False, True, True],
        )
    )
    if df.filter(pl.col("dimension") == "category").height == 0:
        s.warnings.append(
            "No failure-category annotations in the selected trials: only outcome classes are shown "
            "(record categories with `trialhouse annotate`)."
        )
    return s


def _familiarity_section(g: dict, simulated: set[str]) -> Section:
    s = Section("familiarity", "Known versus unknown repositories")
    rows = g["familiarity"].to_dicts()
    if not rows:
        s.absent = (
            "No task carries a known/unknown repository label, so the gap cannot be measured."
        )
        return s
    s.paragraphs.append(
        "Rate on tasks from repositories the configuration is likely to know minus the rate on unknown "
        "ones, with an interval clustered by repository. A gap that differs between configurations is the finding."
    )
    s.charts.append("familiarity")
    s.tables.append(
        Table(
            "Familiarity gap",
            [
                "configuration",
                "known: accepted / valid",
                "unknown: accepted / valid",
                "gap (95% CI)",
                "repositories",
            ],
            [
                [
                    label_of(r, simulated),
                    pct(r["known_solved"], r["known_valid"]),
                    pct(r["unknown_solved"], r["unknown_valid"]),
                    diff_ci(r["gap"], r["ci_low"], r["ci_high"]),
                    f"{r['g_known']} known, {r['g_unknown']} unknown",
                ]
                for r in rows
            ],
            [False, True, True, True, True],
        )
    )
    if any(r.get("small_g") for r in rows):
        s.warnings.append(
            "Few repositories (G < 10): the clustered intervals are rough; treat the gap as descriptive."
        )
    return s


def _distribution_section(g: dict, simulated: set[str]) -> Section:
    s = Section("distributions", "Cost and latency distributions")
    s.paragraphs.append(
        "Per-trial cost and wall time; unknown costs are left out of the cost plot and counted "
        "in the coverage column of the summary, never read as zero."
    )
    s.charts += ["cost", "latency"]
    rows = g["latency"].to_dicts()
    phases = ["setup", "agent", "verification", "total", "first_edit"]
    s.tables.append(
        Table(
            "Latency by phase, p50 / p90 / p95 (trials with the phase reported)",
            ["configuration", *phases],
            [
                [label_of(r, simulated)]
                + [
                    f"{secs(r.get(f'{p}_p50'))} / {secs(r.get(f'{p}_p90'))} / {secs(r.get(f'{p}_p95'))} (n={r.get(f'{p}_n') or 0})"
                    for p in phases
                ]
                for r in rows
            ],
            [False] + [True] * len(phases),
        )
    )
    summ = g["summary"].table.to_dicts()
    s.tables.append(
        Table(
            "Wall time per trial, p50 / p90 / p95",
            ["configuration", "latency p50", "p90", "p95"],
            [
                [
                    label_of(r, simulated),
                    secs(r["latency_p50"]),
                    secs(r["latency_p90"]),
                    secs(r["latency_p95"]),
                ]
                for r in summ
            ],
            [False, True, True, True],
        )
    )
    return s


def _blockers(g: dict, simulated: set[str], period: dict | None) -> tuple[Section, list[dict]]:
    """Eligibility blockers: any invalid trial; any severe regression (documented in docs/reports.md)."""
    import polars as pl

    s = Section("blockers", "Eligibility blockers")
    found: list[dict] = []
    inv = g["trials"].filter(pl.col("outcome") == "invalid")
    for row in (
        inv.group_by("config_id")
        .agg(
            pl.len().alias("n"),
            pl.col("variant").first(),
            pl.col("model").first(),
            pl.col("harness").first(),
            pl.col("harness_version").first(),
        )
        .to_dicts()
    ):
        found.append(
            {
                "kind": "invalid_trials",
                "config_id": row["config_id"],
                "count": row["n"],
                "message": f"{label_of(row, simulated)}: {row['n']} invalid trial(s) — the grading inputs or "
                "the checkout's integrity were violated; these results cannot be trusted until rerun.",
            }
        )
    for comp in g["comparisons"]:
        d = comp.as_dict()
        st = d["sign_test"]
        p = st.get("p_holm") if st.get("p_holm") is not None else st["p"]
        if st["regressions"] > st["improvements"] and p < 0.05:
            found.append(
                {
                    "kind": "severe_regression",
                    "config_id": d["candidate"]["config_id"],
                    "against": d["baseline"]["config_id"],
                    "regressions": st["regressions"],
                    "improvements": st["improvements"],
                    "p": p,
                    "message": f"{label_of(d['candidate'], simulated)} regressed on {st['regressions']} task(s) and "
                    f"improved on {st['improvements']} against the baseline (sign test p = {pval(p)}).",
                }
            )
    for row in (period or {}).get("rows", []):
        if row["verdict"] == "regressed":
            st = row["sign_test"]
            found.append(
                {
                    "kind": "severe_regression",
                    "config_id": row["config_id"],
                    "against": "previous_period",
                    "regressions": st["regressions"],
                    "improvements": st["improvements"],
                    "p": st["p"],
                    "message": f"{row['label']} regressed since the previous period on {st['regressions']} task(s), "
                    f"improved on {st['improvements']} (sign test p = {pval(st['p'])}).",
                }
            )
    s.blockers = [f["message"] for f in found]
    if not found:
        s.oks.append(
            "No invalid trial and no significant regression (sign test p < 0.05, regressions > improvements)."
        )
    return s, found


def _when(iso: str | None) -> str:
    """'2026-11-23' for a UTC midnight, else the full time."""
    if not iso:
        return "—"
    return iso[:10] if iso[10:19] in ("T00:00:00", "") and iso.endswith("+00:00") else iso


def _period_section(period: dict | None, window: dict, simulated: set[str]) -> Section:
    s = Section("period", "What changed since the previous period")
    if period is None:
        s.absent = (
            "Not requested: give --since/--until and --previous-period to compare this window with the one "
            "of the same length before it."
        )
        return s
    s.paragraphs.append(
        f"This period: {_when(window['since'])} to {_when(window['until'])} (exclusive); previous: "
        f"{_when(window['previous_since'])} to {_when(window['previous_until'])}. Each configuration is compared with itself, task by task where both "
        "periods ran the same task (one direction per task, exact sign test)."
    )
    rows = sorted(period["rows"], key=lambda r: r["label"])
    sentences = []
    for r in rows:
        st = r["sign_test"]
        if r["verdict"] in ("improved", "regressed", "no clear change"):
            sentences.append(
                f"{r['label']} {r['verdict'] if r['verdict'] != 'no clear change' else 'shows no clear change'}: "
                f"{pct(r['previous_solved'], r['previous_valid'])} → {pct(r['current_solved'], r['current_valid'])}; "
                f"on {r['common_tasks']} shared task(s) {st['improvements']} improved, {st['regressions']} regressed "
                f"(p = {pval(st['p'])}{'' if st.get('p_reachable', True) else ', p < 0.05 unreachable with N < 6'})."
            )
        else:
            sentences.append(f"{r['label']}: {r['verdict']}.")
    s.paragraphs += sentences
    s.charts.append("period")
    s.tables.append(
        Table(
            "Per configuration",
            [
                "configuration",
                "previous",
                "current",
                "shared tasks",
                "improved",
                "regressed",
                "ties",
                "p",
                "verdict",
            ],
            [
                [
                    r["label"],
                    pct(r["previous_solved"], r["previous_valid"]),
                    pct(r["current_solved"], r["current_valid"]),
                    str(r["common_tasks"]),
                    str(r["sign_test"]["improvements"]),
                    str(r["sign_test"]["regressions"]),
                    str(r["sign_test"]["ties"]),
                    pval(r["sign_test"]["p"]),
                    r["verdict"],
                ]
                for r in rows
            ],
            [False] + [True] * 7 + [False],
        )
    )
    return s


# --------------------------------------------------------------------------- charts


def _charts(g: dict, simulated: set[str], period: dict | None) -> dict[str, Any]:
    """Every chart the sections name, built from the analysis frames (empty data → no chart)."""
    import polars as pl

    from analysis import charts as ch

    def lab(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(
            pl.Series("label", [label_of(r, simulated) for r in df.to_dicts()], dtype=pl.String)
        )

    out: dict[str, Any] = {}
    summ = lab(g["summary"].table)
    if summ.height:
        out["rate"] = ch.rate_chart(summ)
    trials = lab(g["trials"].filter(pl.col("complete")))
    if trials.height:
        counts = trials.group_by(["label", "outcome"]).agg(pl.len().alias("n"))
        out["outcomes"] = ch.outcomes_chart(counts)
        out["cost"] = ch.distribution_chart(
            trials, value="cost_usd", title="Cost per trial", x_title="USD per trial"
        )
        out["latency"] = ch.distribution_chart(
            trials, value="duration_s", title="Wall time per trial", x_title="seconds per trial"
        )
    dir_rows = []
    for comp in g["comparisons"]:
        d = comp.as_dict()
        st = d["sign_test"]
        name = label_of(d["candidate"], simulated)
        dir_rows += [
            {"label": name, "direction": k, "tasks": st[v]}
            for k, v in (
                ("improvement", "improvements"),
                ("regression", "regressions"),
                ("tie", "ties"),
            )
        ]
    if dir_rows:
        out["directions"] = ch.directions_chart(pl.DataFrame(dir_rows))
    cons = g["consistency"].to_dicts()
    pk = [
        {"label": label_of(r, simulated), "k": i + 1, "metric": metric, "value": v}
        for r in cons
        for metric, key in (("pass^k", "pass_hat_k"), ("pass@k", "pass_at_k"))
        for i, v in enumerate(r.get(key) or [])
    ]
    if pk:
        out["passk"] = ch.pass_k_chart(pl.DataFrame(pk))
    for name, key, title in (
        ("pareto", "pareto", "cost per accepted result (USD)"),
        ("pareto_trial", "pareto_trial", "cost per trial (USD)"),
    ):
        df = lab(g[key]).with_columns(pl.col("x").cast(pl.Float64, strict=False))
        if df.filter(pl.col("x").is_finite() & (pl.col("on_front").is_not_null()
                                                 | (pl.col("role") == "baseline"))).height:
            out[name] = ch.pareto_chart(df, x_title=title, title="Pareto front: " + title)
    if g["matrix"] is not None:
        grid = pl.DataFrame(g["matrix"].as_dict()["grid"])
        if "harness_label" in grid.columns:
            grid = grid.with_columns(pl.col("harness_label").alias("harness"))
        out["matrix"] = ch.matrix_chart(grid)
    fail = g["failures"].filter(pl.col("value") != "accepted")
    if fail.height:
        fail = lab(fail).rename({"value": "category"})
        out["failures"] = ch.failures_chart(fail)
    fam = g["familiarity"]
    if fam.height and fam.filter(pl.col("gap").is_not_null()).height:
        out["familiarity"] = ch.gap_chart(lab(fam))
    if period and period["rows"]:
        out["period"] = ch.period_chart(
            pl.DataFrame(
                [
                    {k: r[k] for k in ("label", "previous_rate", "current_rate")}
                    for r in period["rows"]
                ],
                schema={
                    "label": pl.String,
                    "previous_rate": pl.Float64,
                    "current_rate": pl.Float64,
                },
            )
        )
    return out


# --------------------------------------------------------------------------- rendering


def _env() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(["j2"]),
        trim_blocks=False,
        lstrip_blocks=False,
        undefined=jinja2.StrictUndefined,
    )


def _vega_bundle() -> tuple[str, str]:
    import vl_convert as vlc
    from altair.utils.html import vl_version_for_vl_convert

    version = vl_version_for_vl_convert()
    return vlc.javascript_bundle(vl_version=version), version


def render_html(context: dict, specs: dict[str, dict]) -> str:
    """The self-contained page: template + inlined Vega bundle + chart specs as JSON."""
    bundle, version = _vega_bundle()
    specs_json = json.dumps(specs, allow_nan=False).replace("</", "<\\/")
    return (
        _env()
        .get_template("report.html.j2")
        .render(**context, vega_bundle=bundle, vegalite_version=version, specs_json=specs_json)
    )


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(context: dict) -> str:
    """The same findings as text tables, for a pull request or a chat message."""
    lines = [
        f"# {context['title']}",
        "",
        f"_{context['scope']} · generated {context['generated_at']} · "
        f"trialhouse {context['version']}_",
        "",
    ]
    if context["simulated"]:
        lines += [
            "> **SIMULATED** — some or all results come from simulated agents; they say nothing about a real model.",
            "",
        ]
    for s in context["sections"]:
        lines += [f"## {s.title}", ""]
        for b in s.blockers:
            lines += [f"- **BLOCKER:** {b}"]
        for o in s.oks:
            lines += [f"- {o}"]
        if s.blockers or s.oks:
            lines.append("")
        for p in s.paragraphs:
            lines += [p, ""]
        for w in s.warnings:
            lines += [f"> ⚠ {w}", ""]
        if s.absent:
            lines += [f"_{s.absent}_", ""]
        for c in s.charts:
            if c in context["chart_files"]:
                lines += [f"![{c}]({context['chart_files'][c]})", ""]
        for t in s.tables:
            lines += [
                f"**{t.caption}**",
                "",
                "| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
                "|" + "|".join("---:" if n else "---" for n in t.numeric) + "|",
            ]
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in t.rows]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _save_chart(spec: dict, base: Path) -> dict[str, Path]:
    import vl_convert as vlc

    png, svg = base.with_suffix(".png"), base.with_suffix(".svg")
    png.write_bytes(vlc.vegalite_to_png(spec, scale=2))
    svg.write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    return {"png": png, "svg": svg}


# --------------------------------------------------------------------------- entry point


def build_report(
    warehouse: Path | str,
    output: Path | str,
    *,
    runs: list[str] | tuple[str, ...] | None = None,
    since: Any = None,
    until: Any = None,
    baseline: str | None = None,
    previous_period: bool = False,
    title: str | None = None,
) -> ReportPaths:
    """Write report.html, report.md, report.json and charts/*.png|svg into ``output``."""
    from importlib.metadata import version

    from analysis.filters import Filters
    from analysis.jsonout import clean, frame_records
    from warehouse import db as wdb

    __version__ = version("trialhouse")

    warehouse, output = Path(warehouse), Path(output)
    since_t, until_t = _as_time(since, "since"), _as_time(until, "until")
    if previous_period and since_t is None:
        raise AnalysisError(
            "--previous-period needs --since (and --until, default now): it compares the window "
            "with the one of the same length before it"
        )
    if since_t is not None and until_t is None and previous_period:
        until_t = datetime.now(UTC)
    if since_t is not None and until_t is not None:
        previous_window(since_t, until_t)  # rejects an empty or inverted window early
    filters = Filters(runs=tuple(runs or ()), since=since_t, until=until_t)
    window: dict[str, Any] = {
        "since": since_t.isoformat() if since_t else None,
        "until": until_t.isoformat() if until_t else None,
        "previous_since": None,
        "previous_until": None,
    }
    if output.exists() and not output.is_dir():
        raise AnalysisError(f"{output}: exists and is not a directory; choose another --output")
    con = wdb.open(warehouse, read_only=True)
    try:
        g = _gather(con, filters, baseline, None)
        simulated = {c["config_id"] for c in g["configs"] if c.get("simulated")}
        simulated |= set(
            g["trials"].filter(g["trials"]["simulated"].fill_null(False))["config_id"].to_list()
        )
        period = None
        if previous_period:
            assert since_t is not None and until_t is not None
            p_since, p_until = previous_window(since_t, until_t)
            window["previous_since"], window["previous_until"] = (
                p_since.isoformat(),
                p_until.isoformat(),
            )
            prev_filters = Filters(runs=tuple(runs or ()), since=p_since, until=p_until)
            period = _period_changes(con, filters, prev_filters, simulated)
    finally:
        con.close()

    blockers_section, blockers = _blockers(g, simulated, period)
    sections = [
        _controls_section(g, simulated),
        blockers_section,
        _summary_section(g, simulated),
        _comparison_section(g, simulated),
        _consistency_section(g, simulated),
        _pareto_section(g, simulated),
        _matrix_section(g, simulated),
        _failures_section(g, simulated),
        _familiarity_section(g, simulated),
        _distribution_section(g, simulated),
        _period_section(period, window, simulated),
    ]
    charts = _charts(g, simulated, period)
    for s in sections:  # a chart with no data is not drawn; the section says so
        missing = [c for c in s.charts if c not in charts]
        s.charts = [c for c in s.charts if c in charts]
        if missing and not s.absent:
            s.warnings.append("Not drawn for lack of data: " + ", ".join(missing) + ".")

    output.mkdir(parents=True, exist_ok=True)
    chart_dir = output / "charts"
    chart_dir.mkdir(exist_ok=True)
    specs = {name: chart.to_dict() for name, chart in charts.items()}
    chart_paths = {name: _save_chart(spec, chart_dir / name) for name, spec in specs.items()}

    scope = _scope(filters, g["run_ids"])
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    context = {
        "title": title or "trialhouse comparison report",
        "scope": scope,
        "generated_at": generated,
        "version": __version__,
        "simulated": bool(simulated),
        "sections": sections,
        "chart_files": {n: f"charts/{n}.png" for n in chart_paths},
    }
    html_path, md_path, json_path = (
        output / "report.html",
        output / "report.md",
        output / "report.json",
    )
    html_path.write_text(render_html(context, specs), encoding="utf-8")
    md_path.write_text(render_markdown(context), encoding="utf-8")
    m = g["matrix"]
    doc = {
        "schema": SCHEMA,
        "title": context["title"],
        "generated_at": datetime.now(UTC).isoformat(),
        "trialhouse_version": __version__,
        "warehouse": str(warehouse),
        "filters": filters.as_dict(),
        "window": window,
        "baseline_requested": baseline,
        "simulated_configs": sorted(simulated),
        "controls": {"runs": g["runs"], "configs": g["configs"]},
        "blockers": blockers,
        "summary": g["summary"].as_dict(),
        "comparisons": [c.as_dict() for c in g["comparisons"]],
        "comparison_absent": g["compare_error"],
        "consistency": frame_records(g["consistency"]),
        "pareto": {
            "cost_per_accepted": frame_records(g["pareto"]),
            "cost_per_trial": frame_records(g["pareto_trial"]),
        },
        "matrix": m.as_dict() if m is not None else None,
        "matrix_absent": g["matrix_error"],
        "failures": frame_records(g["failures"]),
        "familiarity": frame_records(g["familiarity"]),
        "latency": frame_records(g["latency"]),
        "previous_period": period,
        "charts": {
            n: {k: str(v.relative_to(output)) for k, v in p.items()} for n, p in chart_paths.items()
        },
    }
    json_path.write_text(
        json.dumps(clean(doc), indent=2, allow_nan=False, default=str) + "\n", encoding="utf-8"
    )
    return ReportPaths(output, html_path, md_path, json_path, chart_paths)


def _scope(filters: Any, run_ids: list[str]) -> str:
    parts = []
    if filters.since or filters.until:
        a = filters.since.date().isoformat() if filters.since else "the beginning"
        b = filters.until.isoformat(timespec="minutes") if filters.until else "now"
        parts.append(f"trials started from {a} until {b} (exclusive)")
    parts.append(f"runs: {', '.join(run_ids)}" if len(run_ids) <= 4 else f"{len(run_ids)} runs")
    return "; ".join(parts)
