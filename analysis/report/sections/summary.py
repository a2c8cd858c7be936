"""Per-configuration summary: quality with both intervals, then cost with its coverage."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, small_sample

_QUALITY = ["configuration", "accepted / valid", "95% CI (per trial)", "tasks",
            "task mean (95% CI, tasks as a sample)", "infra", "invalid", "incomplete",
            "median steps", "median tokens", "median wall time", "flags (trials)"]


def _flags(r: dict[str, Any]) -> str:
    if r.get("flags") is None:
        return "unknown"
    return f"{fmt.count(r['flags'])} ({fmt.count(r['flagged_trials'])})"


def _quality(d: ReportData, r: dict[str, Any]) -> list[Any]:
    return [name(d, r), fmt.pct(r["solved"], r["valid"]), fmt.interval(r["ci_low"], r["ci_high"]),
            fmt.count(r["tasks"]),
            f"{fmt.rate(r['task_mean'])} ({fmt.interval(r['task_ci_low'], r['task_ci_high'])})",
            fmt.count(r["infra"]), fmt.count(r["invalid"]), fmt.count(r["incomplete"]),
            fmt.number(r["med_steps"]), fmt.number(r["med_tokens"]),
            fmt.secs(r["med_duration_s"]), _flags(r)]


def _cost(d: ReportData, r: dict[str, Any]) -> list[Any]:
    return [name(d, r), fmt.usd(r["cost_usd"], r["cost_coverage"]),
            fmt.pct(r.get("cost_known"), r["trials"]),
            fmt.usd(r["cost_per_accepted"], r["cost_coverage"]),
            " / ".join(fmt.usd(r[k]) for k in ("cost_p50", "cost_p90", "cost_p95"))]


def section(d: ReportData) -> Section:
    summ = d.summary
    s = Section("summary", "Per-configuration summary")
    s.paragraphs.append(
        "Accepted / valid trials with a Wilson 95% interval (per trial: too narrow when tasks "
        "repeat), then the mean of per-task rates with a task-clustered interval (tasks as a "
        "sample). Infrastructure errors and invalid trials are excluded from rates and counted "
        "apart. Only tasks every configuration of a benchmark attempted are used; no single "
        "weighted score is given. Flags are patch-inspection findings for review, not failures.")
    s.charts += ["rate", "outcomes"]
    s.tables.append(Table("Quality", columns(_QUALITY, [False] + [True] * (len(_QUALITY) - 1)),
                          [_quality(d, r) for r in summ.rows]))
    s.tables.append(Table(
        "Cost (failed trials' spend included in cost per accepted result)",
        columns(["configuration", "total cost", "cost known for", "cost per accepted",
                 "cost p50 / p90 / p95 per trial"], [False, True, True, True, True]),
        [_cost(d, r) for r in summ.rows]))
    s.warnings += small_sample(min((r["tasks"] for r in summ.rows), default=0), "the summary")
    s.warnings += list(summ.warnings)
    for ex in summ.excluded_cases:
        if ex.get("case_ids"):
            s.warnings.append(f"Left out for {name(d, ex)} (not attempted by every "
                              f"configuration): {fmt.listing(ex['case_ids'], limit=10)}")
    return s
