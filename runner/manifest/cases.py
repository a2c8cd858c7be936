"""A case and what grades it: the criteria (a command, or a supplementary judge), a pool of
hidden criteria some of which each run draws (docs/runner.md, "Visible and hidden checks"),
its labels and its own budget."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from runner.manifest.values import Argv, CaseVariantId, Id, NonEmptyStr, PathStr, Strict


class Judge(Strict):
    """A supplementary model judgment; never decides a trial on its own."""

    rubric: PathStr
    """Markdown rubric path relative to the manifest."""
    calibration: PathStr | None = None
    model: str | None = None


DEFAULT_SEVERITY = {"target": "major", "regression": "major", "repository": "minor"}
"""Severity of a criterion that declares none: nothing is a blocker unless declared."""


TIERS = ("fast", "broad", "scheduled")
"""Check tiers (docs/rollout.md, "Check tiers and the behaviour bank"): ``fast`` runs on every
attempt (the default: a manifest without tiers grades as before), ``broad`` before a trial is
accepted, ``scheduled`` only with ``trialhouse run --tier scheduled`` on kept final states."""
TAG_KEYS = ("subsystem", "mechanism", "consequence", "incident")


class BankTags(Strict):
    """What a check guards, for drawing it from the bank and slicing results: the subsystem,
    the failure mechanism, the consequence of the failure, the incident it came from."""

    subsystem: NonEmptyStr | None = None
    mechanism: NonEmptyStr | None = None
    consequence: NonEmptyStr | None = None
    incident: NonEmptyStr | None = None


class Criterion(Strict):
    id: Id
    description: str = ""
    layer: Literal["target", "regression", "repository"] = "target"
    command: Argv | None = None
    """argv array; ``{inputs}`` and ``{workspace}`` are substituted inside elements."""
    judge: Judge | None = None
    files: list[PathStr] = Field(default_factory=list)
    """Operator-owned input files the criterion reads (relative to the manifest)."""
    timeout_seconds: float = Field(default=60, gt=0, le=600)
    success_token: bool = False
    """Pass only if the grader also writes the runner's one-time token (read from its
    stdin) to ``$TRIALHOUSE_RESULT_FILE``: an early ``exit(0)`` is then a failure."""
    in_process: bool = False
    """Declares that the grader imports workspace code in its own process (the process
    that holds the token and decides): code written against that grader can read its memory
    or replace its helpers. Recorded with the run and labelled ``in-process`` in reports;
    graders that spawn the code under test in a child are not (docs/security.md)."""
    severity: Literal["blocker", "major", "minor"] | None = None
    """How bad a regression of this criterion is; None → the layer's default
    (``DEFAULT_SEVERITY``). A configuration with a blocker regression is ineligible."""
    flaky_fixed: NonEmptyStr | None = None
    """Set (with a note) once a criterion found flaky has been fixed: it becomes a new
    evaluator version, and its controls must agree with themselves again."""
    visible: bool = False
    """The agent may run this check: its files are copied read-only into every stage's
    ``$TRIALHOUSE_CHECKS`` and the prompt says how to run it. Hidden (the default): out of
    the agent's reach. Grading is the same either way."""
    tier: Literal["fast", "broad", "scheduled"] = "fast"
    """When it runs (``TIERS``): ``fast`` on every attempt, ``broad`` once the fast tier passes
    or on the last attempt (acceptance needs it), ``scheduled`` never in a trial."""
    tags: BankTags = Field(default_factory=BankTags)

    @property
    def resolved_severity(self) -> str:
        return self.severity or DEFAULT_SEVERITY[self.layer]

    @model_validator(mode="after")
    def _command_xor_judge(self) -> Criterion:
        if (self.command is None) == (self.judge is None):
            raise ValueError("needs exactly one of command (argv array) or judge")
        if self.visible and self.command is None:
            raise ValueError("visible: only a command criterion can be run by the agent")
        if self.tier != "fast" and self.command is None:
            raise ValueError("tier: a judge criterion is judged once, on the final state; leave it fast")
        return self

    @property
    def deterministic(self) -> bool:
        return self.command is not None


class Labels(Strict):
    difficulty: Literal["easy", "medium", "hard"] | None = None
    task_class: str | None = None
    subsystem: str | None = None
    language: str | None = None
    repository: str | None = None
    """Repository label used for clustering (defaults to the manifest's repository name)."""
    familiarity: Literal["known", "unknown"] | None = None


class HiddenPool(Strict):
    """Hidden criteria a run draws ``pick`` of (seeded: the manifest's ``rotation``), so the
    hidden checks can change without changing the case id."""

    pick: int = Field(ge=1, le=100)
    criteria: list[Criterion] = Field(min_length=1, max_length=100)

    @model_validator(mode="after")
    def _pool_ok(self) -> HiddenPool:
        if self.pick > len(self.criteria):
            raise ValueError(f"pick: {self.pick} is more than the pool's {len(self.criteria)} criteria")
        for c in self.criteria:
            if c.visible or c.command is None:
                raise ValueError(f"criteria {c.id}: a hidden pool holds hidden command criteria only")
        return self


class BankDraw(Strict):
    """The checks a case draws from the manifest's ``bank`` (``runner.bank``): every check whose
    tags match ``tags`` (each key one of the listed values), plus ``sample`` more drawn from the
    rest of the bank, seeded by the bank's seed and the case id (recorded in ``run_started``)."""

    tags: dict[Literal["subsystem", "mechanism", "consequence", "incident"], list[NonEmptyStr]] = Field(
        default_factory=dict)
    sample: int = Field(default=0, ge=0, le=100)


class Bank(Strict):
    """A behaviour bank: checks derived from past incidents, tagged, shared by the manifest's
    cases; a case draws its subset with ``bank:`` (docs/rollout.md)."""

    seed: int = Field(default=0, ge=0, le=2**63 - 1)
    checks: list[Criterion] = Field(min_length=1, max_length=500)

    @model_validator(mode="after")
    def _checks_ok(self) -> Bank:
        ids = [c.id for c in self.checks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate check ids: {', '.join(dupes)}")
        for c in self.checks:
            if c.command is None:
                raise ValueError(f"checks {c.id}: a bank holds command checks only")
        return self


class Case(Strict):
    id: CaseVariantId
    prompt: NonEmptyStr
    reference_patch: PathStr
    holdout: bool = False
    canary: bool = False
    """Run in every periodic run; a change of its outcome for an unchanged configuration is
    evaluator or environment drift, never an agent effect (docs/rollout.md, "Canary cases")."""
    labels: Labels = Field(default_factory=Labels)
    repository: PathStr | None = None
    initial_commit: str | None = None
    allowed_paths: list[NonEmptyStr] | None = None
    criteria: list[Criterion] = Field(min_length=1)
    hidden_pool: HiddenPool | None = None
    """Hidden criteria of which each run grades ``pick`` more (``runner.rotation``)."""
    timeout_seconds: float | None = Field(default=None, gt=0, le=86_400)
    """This case's time budget per trial; None → the manifest's."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """This case's spend limit per trial; None → the manifest's."""
    bank: BankDraw | None = None
    """The checks this case draws from the manifest's ``bank`` (``runner.bank``)."""

    @model_validator(mode="after")
    def _criteria_ok(self) -> Case:
        pool = self.hidden_pool.criteria if self.hidden_pool else []
        ids = [c.id for c in (*self.criteria, *pool)]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate criterion ids: {', '.join(dupes)}")
        if not any(c.deterministic for c in self.criteria):
            raise ValueError("needs at least one deterministic criterion (with a command)")
        return self
