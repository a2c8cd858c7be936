"""The manifest's value rules: limits, the constrained types every model field uses, and the
walk that holds a raw document to what a run can use.

Every value must be usable by the run that follows (``runner.validate`` walks the raw
document with ``value_problems`` first): the event contract's value rules (ints within 64
bits, finite numbers, valid Unicode, at most ``MAX_DEPTH`` levels of nesting), no NUL byte
anywhere (it cannot be passed in an argv, a path or an environment), ``MAX_TEXT`` characters
per string, paths at most ``PATH_MAX_BYTES`` with components at most ``NAME_MAX_BYTES``, and
case and variant ids short enough that every file name the runner derives from them fits
(``CASE_VARIANT_ID_MAX``). docs/design.md, "One rule for every value".
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from contract.values import ID_MAX, ID_PATTERN, INT64_MAX, INT64_MIN, MAX_DEPTH

CASE_VARIANT_ID_MAX = 100
"""Longest case or variant id. The runner names each trial's directory
``<case>__<variant>__r<rep>`` (``runner.run.trial_id``; repetitions ≤ 10): at most
100 + 2 + 100 + 3 + 2 = 207 bytes, inside the 255-byte file name limit with room for
the suffixes written beside it. Criterion and manifest ids: ``contract.values.ID_MAX``."""
MAX_TEXT = 1_000_000
"""Longest string anywhere in a manifest (prompts, descriptions, policy text), in characters."""
PATH_MAX_BYTES = 4096
NAME_MAX_BYTES = 255
"""Longest path (UTF-8 bytes) and path component a manifest may name (Linux PATH_MAX/NAME_MAX)."""

Id = Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX, pattern=ID_PATTERN)]
CaseVariantId = Annotated[str, StringConstraints(min_length=1, max_length=CASE_VARIANT_ID_MAX, pattern=ID_PATTERN)]
NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
CONDITION_KEY_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
ConditionKey = Annotated[str, StringConstraints(pattern=CONDITION_KEY_PATTERN)]
ConditionValue = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=ID_PATTERN)]
Conditions = dict[ConditionKey, ConditionValue]
"""Named conditions a run or variant is measured under (``cache: cold``, ``tools: node-22``):
a key is lower-case letters, digits and ``_``; a value an id (docs/rollout.md, "Named conditions")."""


def path_problem(value: str) -> str | None:
    """Why ``value`` cannot be a path on this system (None when it can): NUL, lone surrogates, length."""
    if "\0" in value:
        return "contains a NUL byte"
    try:
        raw = value.encode("utf-8")
    except UnicodeEncodeError:
        return "is not valid Unicode (a lone surrogate)"
    if len(raw) > PATH_MAX_BYTES:
        return f"is {len(raw)} bytes long; a path may have at most {PATH_MAX_BYTES}"
    if any(len(part) > NAME_MAX_BYTES for part in raw.split(b"/")):
        return f"has a component over {NAME_MAX_BYTES} bytes (the longest file name allowed)"
    return None


def _usable_path(value: str) -> str:
    if why := path_problem(value):
        raise ValueError(why)
    return value


PathStr = Annotated[str, StringConstraints(min_length=1), AfterValidator(_usable_path)]
"""A path a run opens (relative to the manifest, or a repository)."""
Argv = Annotated[list[NonEmptyStr], Field(min_length=1)]
EnvName = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
StageName = Literal["build", "qa", "review"]


class Strict(BaseModel):
    """The base of every manifest model: unknown fields refused, frozen, finite numbers only."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def value_problems(raw: Any) -> list[tuple[tuple[Any, ...], str]]:
    """Every value of a raw manifest document that no run could use, as (location, why).

    Applied before the models, so it also covers free-form values (``settings``) and values
    the file-system checks would otherwise be handed (a NUL in a path raises in ``open``).
    """
    out: list[tuple[tuple[Any, ...], str]] = []

    def walk(value: Any, loc: tuple[Any, ...], depth: int) -> None:
        if isinstance(value, str):
            if "\0" in value:
                out.append((loc, "contains a NUL byte"))
            elif len(value) > MAX_TEXT:
                out.append((loc, f"is {len(value)} characters long; the limit is {MAX_TEXT}"))
            else:
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    out.append((loc, "is not valid Unicode (a lone surrogate such as \\ud800)"))
        elif isinstance(value, bool) or value is None:
            return
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                out.append((loc, "integer out of range (must fit 64 bits)"))
        elif isinstance(value, float):
            if not math.isfinite(value):
                out.append((loc, "must be a finite number (not NaN or Infinity)"))
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                out.append((loc, f"nested more than {MAX_DEPTH} levels deep"))
                return
            for k, v in value.items() if isinstance(value, dict) else enumerate(value):
                if isinstance(k, str):
                    walk(k, loc, depth)  # a bad key is reported where it is
                walk(v, (*loc, k), depth + 1)

    walk(raw, (), 1)
    return out
