"""The stop-rules file: what a team declared would stop a rollout, and who may resume it.

A rules file (YAML or JSON; docs/rollout.md, "Stop rules") holds ``rules:``, each with an
``id``, a ``metric`` (``METRICS``), a threshold (``below`` or ``above``), a ``window`` (the
last N runs of the configuration, or the last N days), a ``scope`` (the configuration, and
optionally its task universe) and an ``owner`` (one name or several: who may resume it).
Loading checks every field and names the rule and field of the first problem.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from analysis.errors import AnalysisError

METRICS = {
    "accepted_rate": "accepted trials / valid trials",
    "regression_free_rate": ("valid trials that broke no regression or repository-health criterion "
                             "that passed on the initial commit / valid trials graded on one"),
    "infra_error_rate": "infrastructure errors / complete trials",
    "cost_per_accepted": "known spend of every complete trial / accepted trials (needs full cost coverage)",
}
"""Metric name → its definition (docs/rollout.md repeats them)."""

RATES = ("accepted_rate", "regression_free_rate", "infra_error_rate")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Window(_Strict):
    """The evidence a rule reads: the configuration's last ``last`` runs, or its trials that
    started in the last ``last`` days before the evaluation time."""

    last: int = Field(ge=1, le=1000)
    unit: Literal["runs", "days"] = "runs"


class Scope(_Strict):
    config: str = Field(min_length=1)  # a variant name, config_id or unique config_id prefix
    universe: str | None = None  # a task universe (benchmark or manifest id); default: all


class Rule(_Strict):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    metric: Literal["accepted_rate", "regression_free_rate", "infra_error_rate", "cost_per_accepted"]
    below: float | None = None
    above: float | None = None
    window: Window
    scope: Scope
    owner: tuple[str, ...]
    min_trials: int = Field(default=1, ge=1)
    note: str | None = None

    @field_validator("owner", mode="before")
    @classmethod
    def _owners(cls, value: object) -> object:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple) or not value or not all(
                isinstance(v, str) and v.strip() for v in value):
            raise ValueError("give the owner's name (or a list of names): who may resume the rule")
        return tuple(v.strip() for v in value)

    @model_validator(mode="after")
    def _threshold(self) -> Rule:
        if (self.below is None) == (self.above is None):
            raise ValueError("give exactly one threshold: below: X (fires under X) or above: X")
        limit = self.below if self.below is not None else self.above
        assert limit is not None
        if self.metric in RATES and not 0 <= limit <= 1:
            raise ValueError(f"{self.metric} is a rate: its threshold must be within 0 and 1, not {limit}")
        return self

    @property
    def threshold(self) -> float:
        return self.below if self.below is not None else self.above  # type: ignore[return-value]

    @property
    def direction(self) -> str:
        return "below" if self.below is not None else "above"

    @property
    def sha256(self) -> str:
        """The rule as declared; a resume records it, so an edited rule is a new rule."""
        doc = self.model_dump(mode="json", exclude={"note"})
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def fires(self, value: float) -> bool:
        return value < self.threshold if self.below is not None else value > self.threshold

    def may_resume(self, name: str) -> bool:
        return name.strip().casefold() in {o.casefold() for o in self.owner}


class RulesFile(_Strict):
    rules: tuple[Rule, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> RulesFile:
        ids = [r.id for r in self.rules]
        if dup := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"rule ids must be unique; repeated: {', '.join(dup)}")
        return self


def _where(path: Path, doc: object, loc: tuple[int | str, ...]) -> str:
    parts = []
    node = doc
    for key in loc:
        if isinstance(node, dict | list) and key == "rules":
            parts.append("rules")
        elif isinstance(key, int) and isinstance(node, list) and key < len(node):
            rid = node[key].get("id") if isinstance(node[key], dict) else None
            parts[-1:] = [f"rule {rid!r}" if rid else f"rules[{key}]"]
        else:
            parts.append(str(key))
        node = node.get(key) if isinstance(node, dict) else (
            node[key] if isinstance(node, list) and isinstance(key, int) and key < len(node) else None)
    return f"{path}: {'.'.join(parts) or 'file'}"


def load_rules(path: Path | str) -> RulesFile:
    """The rules file, checked; an ``AnalysisError`` names the file, rule and field otherwise."""
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AnalysisError(f"{path}: cannot read the rules file ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise AnalysisError(f"{path}:{line} not YAML or JSON; fix the file") from None
    try:
        return RulesFile.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise AnalysisError(f"{_where(path, doc, tuple(err['loc']))}: {msg}") from None
