"""Which configuration to pick: the headline's first sentence (docs/reports.md, "The decision").

A pure function of a ``ComparisonSet``, like the rest of the headline, so ``compare`` and the
report print the same decision. The rule:

- Only **eligible** candidates can be picked (``ComparisonSet.ineligible`` is
  ``analysis.eligibility.assess``'s verdict); the ineligible ones are named apart.
- The **best** is the eligible candidate with the highest acceptance among those
  *distinguishably better* than the baseline (the Holm-adjusted sign test p < 0.05, more
  tasks improved than regressed: the headline line's "a real improvement"). Ties go to the
  lower cost per accepted result, then to the config id.
- The **runner-up** is the next one in the same order: first the other distinguishably
  better candidates, then the remaining eligible ones, by acceptance.
- When no eligible candidate is distinguishably better, nothing is named best: the sentence
  says so and names the **descriptive leader** (the eligible candidate with the highest
  acceptance) separately, with how it stands against the baseline.
- An ineligible baseline is named with the ineligible candidates, and every sentence that
  measures against it says "itself ineligible": its numbers are a weaker reference.

Acceptance is the mean of per-task acceptance rates over the compared tasks (the tasks
both sides ran with a valid trial, holdout tasks apart: the tasks of the line's effect),
with the task-clustered t interval (``analysis.stats.task_mean_ci``, tasks as a sample).
Cost per accepted result is the comparison's, on the same tasks, with its coverage.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from analysis import formatting as fmt
from analysis import stats
from analysis.comparison import Comparison, ComparisonSet, ConfigRef

SIGNIFICANT = 0.05

Verdict = Literal["best", "none_better", "no_eligible", "sliced"]


class Names:
    """Configuration names for one headline: SIMULATED at a name's first mention only."""

    def __init__(self, simulated: Iterable[str]) -> None:
        self.simulated = frozenset(simulated)
        self.seen: set[str] = set()

    def __call__(self, ref: ConfigRef) -> str:
        first = ref.config_id not in self.seen
        self.seen.add(ref.config_id)
        return fmt.label(ref.as_dict(), self.simulated if first else frozenset())


@dataclass(frozen=True)
class Standing:
    """One side of a comparison in absolute numbers, on the compared tasks."""

    config: ConfigRef
    tasks: int
    rate: float | None  # mean of per-task acceptance rates
    ci_low: float | None
    ci_high: float | None
    cost_per_accepted: float | None
    cost_coverage: float | None
    better: bool = False  # distinguishably better than the baseline
    worse: bool = False  # distinguishably worse than the baseline
    reasons: tuple[str, ...] = ()  # why it is ineligible (empty: eligible)

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        return clean({"config": self.config.as_dict(), "tasks": self.tasks, "rate": self.rate,
                      "ci_low": self.ci_low, "ci_high": self.ci_high,
                      "cost_per_accepted": self.cost_per_accepted,
                      "cost_coverage": self.cost_coverage, "better": self.better,
                      "worse": self.worse, "eligible": not self.reasons,
                      "reasons": list(self.reasons)})


def standing(c: Comparison, side: Literal["candidate", "baseline"] = "candidate",
             reasons: Sequence[str] = ()) -> Standing:
    """A side's acceptance (task mean, task-clustered 95% interval) and cost per accepted."""
    cand = side == "candidate"
    rates = [(d.candidate_solved / d.candidate_n) if cand else (d.baseline_solved / d.baseline_n)
             for d in c.main.directions]
    ci = stats.task_mean_ci(rates)
    st, cost = c.sign_test, c.cost
    distinct = cand and st.p_reachable and st.p_family < SIGNIFICANT
    return Standing(c.candidate if cand else c.baseline, len(rates), ci["mean"], ci["ci_low"],
                    ci["ci_high"],
                    cost.candidate_per_accepted if cand else cost.baseline_per_accepted,
                    cost.candidate_coverage if cand else cost.baseline_coverage,
                    distinct and st.improvements > st.regressions,
                    distinct and st.regressions > st.improvements, tuple(reasons))


@dataclass
class Decision:
    """The pick (or why there is none), the runner-up, the leader and who is ineligible."""

    verdict: Verdict
    sentence: str
    best: Standing | None = None
    runner_up: Standing | None = None
    leader: Standing | None = None  # the descriptive leader when nothing is best
    baseline: Standing | None = None  # on the tasks of the best's (or leader's) comparison
    ineligible: list[Standing] = field(default_factory=list)
    ineligible_sentence: str | None = None

    def as_dict(self) -> dict[str, Any]:
        def one(s: Standing | None) -> dict[str, Any] | None:
            return None if s is None else s.as_dict()

        return {"verdict": self.verdict, "sentence": self.sentence, "best": one(self.best),
                "runner_up": one(self.runner_up), "leader": one(self.leader),
                "baseline": one(self.baseline),
                "ineligible": [s.as_dict() for s in self.ineligible],
                "ineligible_sentence": self.ineligible_sentence}


def _order(s: Standing) -> tuple[bool, float, float, str]:
    """Distinguishably better first, then higher acceptance, lower cost, config id."""
    cost = s.cost_per_accepted
    return (not s.better, -(s.rate if s.rate is not None else -1.0),
            cost if cost is not None and not math.isnan(cost) else math.inf, s.config.config_id)


def _numbers(s: Standing, tasks: bool = True) -> str:
    """``93.5% of 18 compared tasks (95% CI 86.0–100.0%) at $0.0123 per accepted (…)``."""
    if s.rate is None:
        return "no compared task"
    ci = fmt.interval(s.ci_low, s.ci_high)
    out = fmt.rate(s.rate) + (f" of {s.tasks} compared tasks" if tasks else "")
    return out + (f" (95% CI {ci})" if ci != fmt.DASH else "") + f" at {_cost(s)}"


def _cost(s: Standing) -> str:
    v, cover = s.cost_per_accepted, s.cost_coverage
    known = "" if cover is None else f"cost known for {100 * cover:.0f}% of trials"
    if v is None:
        return "an unknown cost per accepted" + (f" ({known})" if known else "")
    if math.isinf(v):
        return "no accepted result to divide its cost by"
    return f"{fmt.usd(v)} per accepted" + (f" ({known})" if known else "")


def _against(s: Standing) -> str:
    if s.better:
        return "distinguishably better than the baseline"
    if s.worse:
        return "distinguishably worse than the baseline"
    return "not distinguishable from the baseline"


def _sentence(verdict: Verdict, d: Decision, name: Callable[[ConfigRef], str],
              ref: ConfigRef, sliced: Sequence[str], flawed: bool) -> str:
    if verdict == "sliced":
        return (f"Sliced by {', '.join(sliced)}: each slice is its own question, so no "
                "configuration is named best across slices.")
    base = name(ref) + (", itself ineligible," if flawed else "")
    if verdict == "no_eligible":
        return (f"No configuration can be picked: every candidate compared with the baseline "
                f"{base.rstrip(',')} is ineligible.")
    if verdict == "best" and d.best is not None:
        b, bl = d.best, d.baseline
        text = (f"Best: {name(b.config)}, accepting {_numbers(b)}, distinguishably better "
                f"than the baseline {base.rstrip(',')}"
                + (f" ({fmt.rate(bl.rate)})" if bl is not None and bl.rate is not None else ""))
        if d.runner_up is None:
            return text + "; no other eligible candidate."
        r = d.runner_up
        same = r.tasks == b.tasks
        return text + f"; runner-up: {name(r.config)}, {_numbers(r, not same)}, {_against(r)}."
    lead, bl = d.leader, d.baseline
    text = f"No configuration is distinguishably better than the baseline {base.rstrip(',')}"
    if bl is not None:
        text += f", which accepts {_numbers(bl)}"
    if lead is None:
        return text + "."
    return (text + f". The highest-accepting candidate is {name(lead.config)}: "
            f"{_numbers(lead, lead.tasks != (bl.tasks if bl else None))}, {_against(lead)}.")


def _ineligible_sentence(blocked: Sequence[Standing], name: Callable[[ConfigRef], str],
                         base: ConfigRef) -> str | None:
    if not blocked:
        return None
    parts = [f"{name(s.config)} ({'the baseline: ' if s.config == base else ''}"
             f"{'; '.join(s.reasons)})" for s in blocked]
    return "INELIGIBLE, never picked whatever the rate: " + "; ".join(parts) + "."


def decide(result: ComparisonSet, name: Callable[[ConfigRef], str],
           ineligible: Mapping[str, Sequence[str]] | None = None) -> Decision:
    """The decision over ``result`` (module docstring); ``name`` names configurations
    (``Names``: SIMULATED once), ``ineligible`` defaults to ``result.ineligible``."""
    gated = result.ineligible if ineligible is None else ineligible
    base = result.baseline
    flawed = bool(gated.get(base.config_id))
    if result.sliced_by:
        d = Decision("sliced", "")
        d.sentence = _sentence("sliced", d, name, base, result.sliced_by, flawed)
        return d
    comps = {c.candidate.config_id: c for c in result}
    standings = [standing(c, "candidate", gated.get(c.candidate.config_id, ())) for c in result]
    eligible = sorted((s for s in standings if not s.reasons), key=_order)
    blocked = [s for s in standings if s.reasons]
    if flawed and result.comparisons:
        blocked.insert(0, replace(standing(result.comparisons[0], "baseline"),
                                  reasons=tuple(gated[base.config_id])))
    verdict: Verdict
    if not eligible:
        verdict = "no_eligible"
    else:
        verdict = "best" if eligible[0].better else "none_better"
    d = Decision(verdict, "", ineligible=blocked)
    if verdict == "best":
        d.best = eligible[0]
        d.runner_up = eligible[1] if len(eligible) > 1 else None
    elif verdict == "none_better":
        d.leader = eligible[0]
    top = d.best or d.leader
    if top is not None:
        d.baseline = standing(comps[top.config.config_id], "baseline")
    d.sentence = _sentence(verdict, d, name, base, (), flawed)
    d.ineligible_sentence = _ineligible_sentence(blocked, name, base)
    return d
