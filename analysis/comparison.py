"""The typed result of a paired comparison (``analysis.compare`` computes it).

``Comparison.as_dict()`` is the JSON form documented in docs/analysis.md (keys stable);
``ComparisonSet`` is the answer to one ``compare`` question: the resolved baseline, the
candidates (the Holm family), the baselines left out of it, and one ``Comparison`` per
candidate [and slice].
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import polars as pl

DirectionName = Literal["improvement", "regression", "tie"]


@dataclass(frozen=True)
class ConfigRef:
    """A configuration as comparisons name it."""

    config_id: str
    variant: str | None = None
    model: str | None = None
    harness: str | None = None
    harness_version: str | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ConfigRef:
        return cls(str(row["config_id"]), row.get("variant"), row.get("model"),
                   row.get("harness"), row.get("harness_version"))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SignTest:
    improvements: int
    regressions: int
    ties: int
    n: int
    p: float
    mid_p: float
    p_reachable: bool
    p_holm: float | None = None

    @property
    def p_family(self) -> float:
        """The p-value to judge by: Holm-adjusted when a family applies."""
        return self.p if self.p_holm is None else self.p_holm


@dataclass(frozen=True)
class PairCounts:
    pairs: int
    candidate_only: int
    baseline_only: int
    both: int
    neither: int
    excluded: int
    incomplete: int


@dataclass(frozen=True)
class TaskSet:
    common: int
    excluded: list[str]


@dataclass(frozen=True)
class PairedDifference:
    tasks: int
    baseline_mean: float | None
    candidate_mean: float | None
    mean_diff: float | None
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    correlation: float | None


@dataclass(frozen=True)
class SideConsistency:
    tasks: int
    consistent: int
    min_n: int | None
    max_n: int | None


@dataclass(frozen=True)
class ConsistencyPair:
    baseline: SideConsistency
    candidate: SideConsistency
    comparable: bool
    note: str | None


@dataclass(frozen=True)
class DurationDiff:
    pairs_both_accepted: int
    mean_diff_s: float | None
    median_diff_s: float | None


@dataclass(frozen=True)
class CostDiff:
    """Cost on pairs both accepted, and each side's cost per accepted result on the
    compared tasks (all spend of complete trials, failed ones included, ÷ accepted)."""

    pairs_both_accepted: int
    status: Literal["ok", "cost coverage incomplete"]
    mean_diff_usd: float | None
    total_diff_usd: float | None
    baseline_coverage: float | None
    candidate_coverage: float | None
    baseline_cost_usd: float | None = None
    candidate_cost_usd: float | None = None
    baseline_accepted: int | None = None
    candidate_accepted: int | None = None

    @staticmethod
    def _per(cost: float | None, accepted: int | None) -> float | None:
        if cost is None or accepted is None:
            return None
        return cost / accepted if accepted else float("inf")

    @property
    def baseline_per_accepted(self) -> float | None:
        return self._per(self.baseline_cost_usd, self.baseline_accepted)

    @property
    def candidate_per_accepted(self) -> float | None:
        return self._per(self.candidate_cost_usd, self.candidate_accepted)


@dataclass(frozen=True)
class PairedDelta:
    """Candidate − baseline for one metric over the pairs both accepted where both sides
    know it: the mean with a seeded task-cluster bootstrap interval, the median, and each
    side's median on the same pairs. ``status`` says why there is no number."""

    metric: str
    pairs: int
    mean_diff: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    median_diff: float | None = None
    baseline_median: float | None = None
    candidate_median: float | None = None
    status: str = "ok"


@dataclass(frozen=True)
class Deltas:
    """Paired differences of wall time, cost, tokens and steps (``analysis.resampling``)."""

    duration_s: PairedDelta
    cost_usd: PairedDelta
    tokens: PairedDelta
    steps: PairedDelta
    resamples: int
    seed: int

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {m: asdict(getattr(self, m))
                               for m in ("duration_s", "cost_usd", "tokens", "steps")}
        out["bootstrap"] = {"unit": "task", "resamples": self.resamples, "seed": self.seed,
                            "interval": "percentile 95%"}
        return out


@dataclass(frozen=True)
class Direction:
    case_id: str
    baseline_solved: int
    baseline_n: int
    candidate_solved: int
    candidate_n: int
    direction: DirectionName


@dataclass
class Block:
    """Every statistic of one comparison over one set of tasks (main or holdout)."""

    tasks: TaskSet
    pairs: PairCounts
    sign_test: SignTest
    paired_difference: PairedDifference
    consistency: ConsistencyPair
    duration: DurationDiff
    cost: CostDiff
    directions: list[Direction]
    deltas: Deltas | None = None


_DIRECTION_SCHEMA = {"case_id": "String", "baseline_solved": "Int64", "baseline_n": "Int64",
                     "candidate_solved": "Int64", "candidate_n": "Int64",
                     "direction": "String"}


@dataclass
class Comparison:
    """One candidate against the baseline; ``as_dict`` keys are documented in docs/analysis.md."""

    baseline: ConfigRef
    candidate: ConfigRef
    main: Block
    holdout: Block | None = None
    warnings: list[str] = field(default_factory=list)
    slice: dict[str, Any] | None = None  # {column: value} when compared within one slice

    @property
    def sign_test(self) -> SignTest:
        return self.main.sign_test

    @property
    def tasks(self) -> TaskSet:
        return self.main.tasks

    @property
    def paired_difference(self) -> PairedDifference:
        return self.main.paired_difference

    @property
    def cost(self) -> CostDiff:
        return self.main.cost

    @property
    def direction_rows(self) -> list[dict[str, Any]]:
        return [asdict(d) for d in self.main.directions]

    @property
    def directions(self) -> pl.DataFrame:
        import polars as pl

        return pl.DataFrame(self.direction_rows,
                            schema={k: getattr(pl, v) for k, v in _DIRECTION_SCHEMA.items()})

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        out: dict[str, Any] = {"baseline": self.baseline.as_dict(),
                               "candidate": self.candidate.as_dict()}
        if self.slice is not None:
            out["slice"] = dict(self.slice)
        m = self.main
        out.update({"tasks": asdict(m.tasks), "pairs": asdict(m.pairs),
                    "sign_test": asdict(m.sign_test),
                    "paired_difference": asdict(m.paired_difference),
                    "consistency": asdict(m.consistency), "duration": asdict(m.duration),
                    "cost": asdict(m.cost),
                    "paired_deltas": m.deltas.as_dict() if m.deltas else None,
                    "directions": self.direction_rows})
        h = self.holdout
        out["holdout"] = None if h is None else {
            "tasks": asdict(h.tasks), "pairs": asdict(h.pairs), "sign_test": asdict(h.sign_test),
            "paired_difference": asdict(h.paired_difference),
            "directions": [asdict(d) for d in h.directions]}
        out["warnings"] = list(self.warnings)
        return clean(out)


@dataclass
class ComparisonSet:
    """The answer to one ``compare`` question (iterates over its comparisons).

    ``candidates`` is the Holm family; ``excluded_baselines`` the configurations of
    baseline kind (null, reference) left out of it; ``chosen`` says whether the baseline
    was named or is the default (the manifest's first non-baseline variant).
    """

    baseline: ConfigRef
    candidates: list[ConfigRef]
    comparisons: list[Comparison]
    chosen: Literal["requested", "default"] = "default"
    excluded_baselines: list[ConfigRef] = field(default_factory=list)
    sliced_by: list[str] = field(default_factory=list)
    simulated: frozenset[str] = frozenset()  # config ids of simulated configurations
    universe: str | None = None  # the task universe compared within (None: one only)
    notes: list[str] = field(default_factory=list)  # what scoping chose and left out
    ineligible: dict[str, list[str]] = field(default_factory=dict)
    """config_id → reasons, for compared candidates (and the baseline) that are
    ineligible (``analysis.eligibility.assess``): shown beside their numbers, never best."""

    def __iter__(self) -> Iterator[Comparison]:
        return iter(self.comparisons)

    def __len__(self) -> int:
        return len(self.comparisons)

    def __getitem__(self, i: int) -> Comparison:
        return self.comparisons[i]

    def records(self) -> list[dict[str, Any]]:
        """Flat rows for CSV: one per comparison (slice columns prefixed ``slice_``)."""
        from analysis.jsonout import clean

        out = []
        for c in self.comparisons:
            st, diff, cost = c.sign_test, c.paired_difference, c.cost
            out.append({
                "baseline_id": c.baseline.config_id, "baseline": c.baseline.variant,
                "candidate_id": c.candidate.config_id, "candidate": c.candidate.variant,
                **{f"slice_{k}": v for k, v in (c.slice or {}).items()},
                "tasks": c.tasks.common, "pairs": c.main.pairs.pairs,
                "improvements": st.improvements, "regressions": st.regressions,
                "ties": st.ties, "p": st.p, "mid_p": st.mid_p, "p_holm": st.p_holm,
                "mean_diff": diff.mean_diff, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
                "cost_status": cost.status, "cost_mean_diff_usd": cost.mean_diff_usd,
                "baseline_cost_per_accepted": cost.baseline_per_accepted,
                "candidate_cost_per_accepted": cost.candidate_per_accepted})
        return clean(out)

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline.as_dict(), "baseline_chosen": self.chosen,
                "holm_family": [c.config_id for c in self.candidates],
                "excluded_baselines": [c.as_dict() for c in self.excluded_baselines],
                "by": list(self.sliced_by), "universe": self.universe,
                "notes": list(self.notes), "ineligible": dict(self.ineligible),
                "comparisons": [c.as_dict() for c in self.comparisons]}
