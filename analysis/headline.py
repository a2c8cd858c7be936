"""The headline: which configuration to pick, then one plain sentence per candidate (a pure
function of a ``ComparisonSet``, so ``compare`` and the report print the same words and
numbers).

The first sentence is the decision (``analysis.decision``: the best eligible configuration
with its acceptance, interval and cost per accepted, and the runner-up; or that none is
distinguishably better than the baseline). Ineligible configurations are named next. Each
candidate's sentence gives the effect (mean difference of per-task acceptance rates, in
percentage points) with its 95% interval, the per-task sign test (Holm-adjusted over the
candidates when there are several), whether the difference is distinguishable at this
sample size, and the change in cost per accepted result with its coverage. There is no
single weighted score: a reader weighs quality against cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis import formatting as fmt
from analysis.comparison import Comparison, ComparisonSet, ConfigRef
from analysis.decision import Decision, Names, decide

SIGNIFICANT = 0.05


@dataclass(frozen=True)
class HeadlineLine:
    """The verdict on one candidate against the baseline."""

    candidate: ConfigRef
    effect: float | None  # candidate − baseline, mean of per-task rates (a fraction)
    ci_low: float | None
    ci_high: float | None
    improved: int
    regressed: int
    p: float
    p_holm: float | None
    tasks: int
    distinguishable: bool
    reachable: bool
    cost_change: str | None  # "−8%", or None when unknown
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return clean({"candidate": self.candidate.as_dict(), "effect": self.effect,
                      "ci_low": self.ci_low, "ci_high": self.ci_high,
                      "improved": self.improved, "regressed": self.regressed, "p": self.p,
                      "p_holm": self.p_holm, "tasks": self.tasks,
                      "distinguishable": self.distinguishable, "reachable": self.reachable,
                      "cost_change": self.cost_change, "sentence": self.sentence})


@dataclass
class Headline:
    """The decision, who is ineligible, who is compared with whom, one line per candidate.

    ``intro`` is the text before the lines, one sentence group per line of text: what
    ``compare`` prints above its lines and report.json's ``headline.intro``.
    """

    baseline: ConfigRef
    decision: Decision
    context: str
    lines: list[HeadlineLine] = field(default_factory=list)

    @property
    def intro(self) -> str:
        d = self.decision
        return "\n".join(t for t in (d.sentence, d.ineligible_sentence, self.context) if t)

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.as_dict(), "intro": self.intro,
                "decision": self.decision.as_dict(), "context": self.context,
                "lines": [ln.as_dict() for ln in self.lines]}


def _effect(mean: float | None, base: str) -> str:
    if mean is None:
        return f"cannot be compared with {base} (no common task)"
    points = abs(100 * mean)
    if round(points, 1) == 0:
        return f"accepts as many tasks as {base}"
    return f"accepts {points:.1f} points {'more' if mean > 0 else 'fewer'} tasks than {base}"


def _cost(c: Comparison) -> tuple[str, str | None]:
    cost = c.cost
    new, old = cost.candidate_per_accepted, cost.baseline_per_accepted
    change = fmt.ratio_change(new, old)
    if change is not None:
        return f"cost per accepted {change}", change
    if new is None or old is None:
        cover = [v for v in (cost.baseline_coverage, cost.candidate_coverage) if v is not None]
        known = min(cover) if cover else None
        tail = "" if known is None else f" (cost known for {100 * known:.0f}% of trials)"
        return f"cost per accepted unknown{tail}", None
    return f"cost per accepted {fmt.usd(new)} against {fmt.usd(old)}", None


def line(c: Comparison, family: int, name: Callable[[ConfigRef], str],
         ineligible: Sequence[str] = ()) -> HeadlineLine:
    """One candidate's sentence; ``family`` is the size of its Holm family; ``name`` names
    configurations (``Names``: SIMULATED at the first mention); an ineligible candidate's
    sentence says so (whatever its rate, it is not a pick; the reasons are named above)."""
    st, diff = c.sign_test, c.paired_difference
    who, base = name(c.candidate), name(c.baseline)
    holm = st.p_holm if family > 1 else None
    p = st.p if holm is None else holm
    ptxt = f"p = {fmt.pval(p)}" + (", Holm" if holm is not None else "")
    span = fmt.points_range(diff.ci_low, diff.ci_high)
    ci = "" if span is None else f"95% CI {span}; "
    tasks = c.tasks.common
    if not st.p_reachable:
        verdict = (f"not distinguishable: only {st.n} of {tasks} tasks differ, too few for "
                   "the sign test")
        distinct = False
    elif p < SIGNIFICANT:
        better = st.improvements > st.regressions
        verdict = (f"distinguishable with {tasks} tasks: a real "
                   f"{'improvement' if better else 'regression'}")
        distinct = True
    else:
        verdict = f"not distinguishable with {tasks} tasks"
        distinct = False
    cost_txt, change = _cost(c)
    sentence = (f"{who} {_effect(diff.mean_diff, base)} ({ci}{st.improvements} improved / "
                f"{st.regressions} regressed, {ptxt}): {verdict}; {cost_txt}.")
    if ineligible:
        sentence += " INELIGIBLE, not a candidate to ship."
    return HeadlineLine(c.candidate, diff.mean_diff, diff.ci_low, diff.ci_high,
                        st.improvements, st.regressions, st.p, holm, tasks, distinct,
                        st.p_reachable, change, sentence)


def _context(result: ComparisonSet, name: Callable[[ConfigRef], str]) -> str:
    """Who is compared with whom: the baseline and how it was chosen, the baselines left out."""
    how = ("as requested" if result.chosen == "requested" else
           "the first variant that is not a null or reference baseline; choose another with "
           "--baseline")
    n = len(result.candidates)
    text = (f"{'One candidate' if n == 1 else f'{n} candidates'} against the baseline "
            f"{name(result.baseline)} ({how})")
    if result.excluded_baselines:
        names = fmt.listing([name(b) for b in result.excluded_baselines])
        text += (f"; left out as reference points, not candidates: {names} (a null agent "
                 "changes nothing, a reference agent applies the known answer)")
    return text + "."


def headline(result: ComparisonSet, simulated: Iterable[str] | None = None) -> Headline:
    """The headline of a comparison: the decision (``analysis.decision``), who is
    ineligible, who is compared with whom, then one line per candidate.

    Simulated configurations (``result.simulated`` unless given) are named SIMULATED at
    their first mention. Sliced comparisons (``by``) have no decision and no line: each
    slice is its own, exploratory question.
    """
    name = Names(result.simulated if simulated is None else simulated)
    chosen = decide(result, name)
    context = _context(result, name)
    out = Headline(result.baseline, chosen, context)
    if result.sliced_by:
        return out
    n = len(result.candidates)
    out.lines = [line(c, n, name, result.ineligible.get(c.candidate.config_id, ()))
                 for c in result.comparisons]
    return out
