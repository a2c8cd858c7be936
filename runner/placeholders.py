"""The blanks ``trialhouse init`` leaves for the operator, found again by ``validate``.

Every blank is the text ``FILL IN:`` followed by what to write there, in a manifest value or
in a file the manifest names (a grader, a reference patch, the agent script). ``validate``
refuses a manifest while any is left, each at its location with the words after the marker,
so a scaffold cannot run as if it were an evaluation (docs/runner.md, "Your first manifest").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contract.values import MAX_DEPTH
from runner.manifest import path_problem
from runner.paths import input_refs

MARKER = "FILL IN:"
_READ_LIMIT = 1 << 20
"""Bytes of a named file searched for a blank (init's files are a few hundred bytes)."""


def _strings(value: Any, loc: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string in ``value`` with its location (no deeper than the value rules allow:
    a document nested deeper is refused by them)."""
    if isinstance(value, str):
        yield loc, value
    elif depth < MAX_DEPTH and isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{loc}.{key}" if loc else str(key), depth + 1)
    elif depth < MAX_DEPTH and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{loc}[{i}]", depth + 1)


def _what(text: str) -> str:
    return text.split(MARKER, 1)[1].strip().rstrip(".") or "this value"


def _file_blank(path: Path) -> tuple[int, str] | None:
    """The first blank in ``path``: its line number and what to write there."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as fh:
            text = fh.read(_READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None  # a file that cannot be read is reported by the input checks
    for number, line in enumerate(text.splitlines(), 1):
        if MARKER in line:
            return number, _what(line)
    return None


def _agent_files(raw: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Absolute paths a ``command`` agent's argv names (the agent script init writes)."""
    variants = raw.get("variants")
    for vi, var in enumerate(variants if isinstance(variants, list) else []):
        agent = var.get("agent") if isinstance(var, dict) else None
        argv = agent.get("argv") if isinstance(agent, dict) else None
        for ai, arg in enumerate(argv if isinstance(argv, list) else []):
            if isinstance(arg, str) and arg.startswith("/"):
                yield f"variants[{vi}].agent.argv[{ai}]", arg


def placeholder_problems(raw: dict[str, Any], base: Path) -> list[tuple[str, str]]:
    """(location, message) for each blank left in ``raw`` or in a file it names."""
    found = [(loc, f"fill in {_what(text)} (a blank trialhouse init left)")
             for loc, text in _strings(raw, "") if MARKER in text]
    files = [(ref.location, ref.rel, base / ref.rel) for ref in input_refs(raw)]
    files += [(loc, arg, Path(arg)) for loc, arg in _agent_files(raw)]
    seen: set[Path] = set()
    for loc, shown, path in files:
        if path in seen or path_problem(shown) is not None:
            continue  # a path no system can open is refused by the input checks
        seen.add(path)
        blank = _file_blank(path)
        if blank is not None:
            found.append((loc, f"{shown}:{blank[0]}: fill in {blank[1]} (a blank trialhouse init left)"))
    return found
