"""What every usage parser shares: the agent's own account of a stage and the readers behind it.

:class:`AgentReport` is what a parser returns (``runner.agents.usage`` picks the parser;
``runner.agents.harness_result`` wraps a report with what a harness says beyond it). The
helpers hold agent output to the event contract's value rules (``contract.values``), so a
number an agent prints can never make its run un-ingestable (docs/agents.md, "Usage
formats"). This module imports no parser, so every parser may import it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar

from contract.stage_events import Usage
from contract.trajectory import iso_time
from contract.values import as_amount, as_count

TokenName = Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]
TOKEN_NAMES: tuple[TokenName, ...] = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class Tokens(TypedDict, total=False):
    """Token counts in the event contract's buckets (``Usage``'s fields); None is unreported."""

    input_tokens: int | None
    """Uncached input tokens."""
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None


def no_tokens() -> Tokens:
    """Every bucket unreported."""
    return {"input_tokens": None, "output_tokens": None, "cache_read_tokens": None, "cache_write_tokens": None}


@dataclass(frozen=True)
class AgentReport:
    """The agent's own account of a stage; the runner combines it with its grade."""

    usage: Usage = Usage()
    status: str | None = None
    """Terminal state as the agent named it (``success``, ``error_max_turns``,
    ``turn.failed``, ``task_complete``, …) or ``no_result`` when it never printed one."""
    infra_error: bool = False
    """The agent side reports an infrastructure failure (API/auth/rate limit/5xx, or no
    terminal result at all). A caller whose own timeout fired should prefer budget."""
    budget_hit: bool = False
    """The agent stopped on its own turn or budget limit."""
    message: str | None = None
    """Short error text worth showing next to the outcome."""
    malformed_lines: int = 0
    """Lines of stdout / the events file that were not usable JSON objects."""
    notes: tuple[str, ...] = ()
    """Reported values dropped as out of range (kept as unknown), one note each."""


def count(value: object) -> int | None:
    """A non-negative integer count within 64 bits, or None for anything else (bools, negatives,
    text, 1e308): the contract's rule, ``contract.values.as_count``."""
    return as_count(value)


def amount(value: object) -> float | None:
    """A finite non-negative number, or None (``contract.values.as_amount``)."""
    return as_amount(value)


Number = TypeVar("Number", int, float)


def add(total: Number | None, value: Number | None) -> Number | None:
    """Sum where None means "nobody reported": None + x = x, None + None = None."""
    if value is None:
        return total
    return value if total is None else total + value


def short(text: object, limit: int = 500) -> str | None:
    """Trim agent text for a one-line message."""
    if text is None:
        return None
    text = " ".join(str(text).split())
    if not text:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_object(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field missing or of another type)."""
    return value if isinstance(value, dict) else {}


def as_str(value: object) -> str | None:
    """``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


timestamp = iso_time
"""An ISO 8601 timestamp with a zone, or None (``contract.trajectory.iso_time``)."""


def iter_json_lines(path: Path) -> Iterator[dict[str, Any] | None]:
    """Yield each non-blank line of a JSONL file as a dict, or None when it is not one.

    Missing files yield nothing; undecodable bytes are replaced, never fatal.
    """
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, generator
    except OSError:
        return
    with handle:
        for raw in handle:
            text = raw.decode("utf-8", errors="replace").strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except ValueError:
                yield None
                continue
            yield obj if isinstance(obj, dict) else None
