"""What every section shares: the small-sample rule and naming configurations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analysis import formatting as fmt
from analysis.report.gather import ReportData
from analysis.summary import SMALL_TASKS


def small_sample(tasks: int | None, what: str) -> list[str]:
    """The "descriptive sample" warning when a statistic rests on fewer than 10 tasks."""
    if tasks is not None and tasks < SMALL_TASKS:
        return [
            f"Descriptive sample: {what} rests on {tasks} task(s) (< {SMALL_TASKS}); "
            "read the numbers as a description of these tasks, not as an estimate."
        ]
    return []


def sentences(notes: list[str]) -> list[str]:
    """An analysis result's warnings (lower-case clauses) as the report's sentences."""
    return [n[0].upper() + n[1:] + ("" if n.endswith(".") else ".") for n in notes if n]


def name(d: ReportData, row: Mapping[str, Any]) -> str:
    """A configuration's display name, SIMULATED where it applies."""
    return fmt.label(row, d.simulated)
