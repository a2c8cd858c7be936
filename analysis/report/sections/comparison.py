"""Paired comparison against the baseline: the ``compare`` command's numbers, laid out."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.comparison import Comparison
from analysis.document import Table, columns
from analysis.report.document import Section
from analysis.report.gather import ReportData
from analysis.report.sections.common import name, small_sample

_PAIRS = ["candidate", "pairs", "candidate only", "baseline only", "both", "neither",
          "excluded (infra/invalid)", "common tasks"]
_TEST = ["candidate", "improved tasks", "regressed tasks", "ties", "p", "mid-p", "p (Holm)",
         "mean difference of task rates (95% CI)"]
_COST = ["candidate", "pairs both accepted", "mean wall-time difference",
         "cost difference per pair", "cost per accepted (baseline → candidate)"]


def _pairs(lab: str, c: Comparison) -> list[Any]:
    p = c.main.pairs
    return [lab, *map(fmt.count, (p.pairs, p.candidate_only, p.baseline_only, p.both,
                                  p.neither, p.excluded, c.tasks.common))]


def _test(lab: str, c: Comparison) -> list[Any]:
    st, diff = c.sign_test, c.paired_difference
    reach = "" if st.p_reachable else " (p < 0.05 unreachable with N < 6)"
    return [lab, fmt.count(st.improvements), fmt.count(st.regressions), fmt.count(st.ties),
            fmt.pval(st.p) + reach, fmt.pval(st.mid_p), fmt.pval(st.p_holm),
            fmt.diff_ci(diff.mean_diff, diff.ci_low, diff.ci_high)]


def _cost(lab: str, c: Comparison) -> list[Any]:
    cost, dur = c.cost, c.main.duration
    per = (f"{fmt.usd(cost.baseline_per_accepted, cost.baseline_coverage)} → "
           f"{fmt.usd(cost.candidate_per_accepted, cost.candidate_coverage)}")
    return [lab, fmt.count(dur.pairs_both_accepted), fmt.signed(dur.mean_diff_s, unit="s"),
            fmt.signed(cost.mean_diff_usd, money=True) if cost.status == "ok" else cost.status,
            per]


def _holdout(lab: str, c: Comparison) -> str | None:
    h = c.holdout
    if h is None:
        return None
    hs = h.sign_test
    return (f"Holdout block for {lab} (reported apart, not in the sign test above): "
            f"{h.tasks.common} task(s), {h.pairs.pairs} pair(s); {hs.improvements} improved, "
            f"{hs.regressions} regressed, p = {fmt.pval(hs.p)}.")


def section(d: ReportData) -> Section:
    s = Section("comparison", "Paired comparison against the baseline")
    comps = d.comparisons
    if comps is None or not len(comps):
        s.absent = f"No paired comparison: {d.compare_absent or 'nothing to compare'}."
        return s
    s.paragraphs.append(
        f"Baseline: {name(d, comps.baseline.as_dict())}. Pairs are (task, repetition) with "
        "both sides complete; each unique task gets one direction (improvement, regression or "
        "tie, compared as exact fractions), and the exact two-sided sign test runs on those "
        "directions. p-values are Holm-adjusted across the candidates; baselines (null, "
        "reference) are never candidates. These are the numbers `trialhouse compare` prints.")
    s.charts.append("directions")
    s.warnings += [n for n in comps.notes if "named conditions" in n or n.startswith("MIXED CONDITIONS")]
    pairs, tests, costs = [], [], []
    for c in comps:
        lab = name(d, c.candidate.as_dict())
        pairs.append(_pairs(lab, c))
        tests.append(_test(lab, c))
        costs.append(_cost(lab, c))
        s.warnings += [f"{lab}: {w}" for w in c.warnings]
        s.warnings += small_sample(c.tasks.common, f"the comparison of {lab}")
        if (text := _holdout(lab, c)) is not None:
            s.paragraphs.append(text)
    s.tables.append(Table("Pairs (task × repetition)", columns(_PAIRS, [False] + [True] * 7),
                          pairs))
    s.tables.append(Table("Per-task directions and sign test",
                          columns(_TEST, [False] + [True] * 7), tests))
    s.tables.append(Table("Time and cost", columns(_COST, [False, True, True, True, True]), costs))
    if comps.excluded_baselines:
        s.tables.append(_reference_points(d, {b.config_id for b in comps.excluded_baselines}))
    return s


def _reference_points(d: ReportData, ids: set[str]) -> Table:
    """The null and reference runs beside the comparison (docs/design.md, "Baselines are
    reference points, never candidates"), as the floor and the ceiling, never as candidates."""
    rows = [[name(d, r), f"baseline ({d.roles[r['config_id']].agent_kind})",
             fmt.pct(r["solved"], r["valid"]), fmt.rate(r["task_mean"])]
            for r in d.summary.rows if r["config_id"] in ids and r["config_id"] in d.roles]
    return Table("Reference points (not candidates, not in the Holm family)",
                 columns(["configuration", "role", "accepted / valid", "task mean"],
                         [False, False, True, True]), rows)
