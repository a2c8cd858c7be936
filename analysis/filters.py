"""Which trials an analysis looks at: runs, a time window, case labels, holdout.

Turned into a parameterised SQL WHERE clause (values are never interpolated).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Literal

from analysis.errors import AnalysisError

Holdout = Literal["include", "exclude", "only"]

# Case columns a label filter or a slice may name (mapped, never interpolated from input).
CASE_COLUMNS = ("repository", "familiarity", "task_class", "difficulty", "language",
                "subsystem", "benchmark")
SLICE_COLUMNS = ("task_class", "repository", "difficulty", "language", "familiarity",
                 "subsystem")


def _parse_time(value: str | date | datetime | None, name: str) -> datetime | None:
    if value is None or isinstance(value, datetime):
        if isinstance(value, datetime) and value.tzinfo is None:
            raise AnalysisError(f"--{name} {value}: give a timezone-aware time (e.g. ...Z)")
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    text = str(value).strip()
    try:
        if len(text) == 10:
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise AnalysisError(
            f"--{name} {text!r}: not an ISO date; use YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Filters:
    """Trial selection shared by every analysis (empty = everything)."""

    runs: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None  # exclusive
    labels: tuple[tuple[str, str], ...] = ()
    holdout: Holdout = "include"

    @classmethod
    def parse(cls, runs=None, since=None, until=None, labels=None,
              holdout: str = "include") -> Filters:
        """Build from CLI strings; bad input is an AnalysisError naming the option."""
        pairs = []
        for item in labels or []:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip():
                raise AnalysisError(f"--label {item!r}: expected key=value, e.g. task_class=bugfix")
            pairs.append((key.strip(), value.strip()))
        if holdout not in ("include", "exclude", "only"):
            raise AnalysisError(f"--holdout {holdout!r}: expected include, exclude or only")
        return cls(runs=tuple(runs or ()), since=_parse_time(since, "since"),
                   until=_parse_time(until, "until"), labels=tuple(pairs),
                   holdout=holdout)  # type: ignore[arg-type]

    def where(self) -> tuple[str, list]:
        """SQL predicate over aliases t (trials), c (cases), r (runs) and its parameters."""
        clauses: list[str] = ["TRUE"]
        params: list = []
        if self.runs:
            clauses.append("t.run_id IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(self.runs))
        if self.since is not None:
            clauses.append("coalesce(t.started_at, r.started_at) >= ?")
            params.append(self.since)
        if self.until is not None:
            clauses.append("coalesce(t.started_at, r.started_at) < ?")
            params.append(self.until)
        for key, value in self.labels:
            if key in CASE_COLUMNS:
                clauses.append(f"c.{key} = ?")  # key is from a fixed whitelist
            else:
                clauses.append("json_extract_string(c.labels_json, ?) = ?")
                params.append('$."' + key.replace('"', '\\"') + '"')
            params.append(value)
        if self.holdout == "exclude":
            clauses.append("NOT coalesce(c.holdout, FALSE)")
        elif self.holdout == "only":
            clauses.append("coalesce(c.holdout, FALSE)")
        return "\n  AND ".join(clauses), params

    @property
    def needs_cases(self) -> bool:
        """Whether ``where()`` reads the cases table (alias c)."""
        return bool(self.labels) or self.holdout != "include"

    @property
    def needs_runs(self) -> bool:
        """Whether ``where()`` reads the runs table (alias r)."""
        return self.since is not None or self.until is not None

    def as_dict(self) -> dict:
        return {"runs": list(self.runs),
                "since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None,
                "labels": {k: v for k, v in self.labels}, "holdout": self.holdout}


def check_by(by: list[str] | tuple[str, ...] | str | None) -> list[str]:
    if by is None:
        return []
    cols = [by] if isinstance(by, str) else list(by)
    for col in cols:
        if col not in SLICE_COLUMNS:
            raise AnalysisError(f"--by {col!r}: slice by one of {', '.join(SLICE_COLUMNS)}")
    return cols
