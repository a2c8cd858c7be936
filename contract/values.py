"""Value rules: one rule for every value that enters the warehouse.

Applied identically where the runner writes (these types are in the models it builds its
events from), where ingest reads (the same models, compiled in ``ingest.fastdecode``;
``json_problem`` on every line it diagnoses) and in every importer (``ingest.rows``): ids
in a safe alphabet, integers that fit their Parquet columns, finite floats, valid Unicode,
bounded nesting, and the coercions of what agents report about themselves (``as_count``,
``as_amount``, ``as_text``). docs/design.md, "One rule for every value". Plain functions and
constants, no pydantic: a reader that only checks an id pays no model import; the same rules as
constrained pydantic types are in ``contract.fields``.
"""

from __future__ import annotations

import math
import re
from typing import Any

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_DEPTH = 32
"""Deepest nesting of JSON arrays/objects in one document (an event line or a manifest)."""
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""The safe identifier alphabet: ASCII letters, digits, ``.``, ``_``, ``-``; never first ``.``,
``_`` or ``-`` (so never ``.``/``..``, a hidden file or an option). Such an id is a valid file
name, Hive partition value, shell word and SQL literal without escaping."""
ID_MAX = 128
"""Longest run, case, variant, config, criterion or manifest id (characters = bytes)."""
TRIAL_ID_MAX = 255
"""Longest trial id: the runner composes ``<case>__<variant>__r<rep>``; the manifest limits case
and variant ids so this fits one file name (``runner.manifest.CASE_VARIANT_ID_MAX``)."""

ID_RE = re.compile(ID_PATTERN[:-1] + r"\Z")
"""``ID_PATTERN`` for Python's ``re`` (whose ``$`` also matches before a final newline)."""


def id_problem(value: object, max_length: int = ID_MAX) -> str | None:
    """Why ``value`` is not a safe identifier (None when it is): the rule of ``Id``/``TrialId``."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value or len(value) > max_length:
        return f"must be 1 to {max_length} characters long (is {len(value)})"
    if not ID_RE.match(value):
        return "must start with a letter or digit and use only letters, digits, '.', '_' or '-'"
    return None


def json_problem(value: Any, where: str = "", depth: int = 1) -> str | None:
    """Why a decoded JSON value breaks the value rules (None when it keeps them).

    Integers within int64, floats finite (no NaN/Infinity/1e999), strings and keys valid
    Unicode (no lone surrogates, which UTF-8 cannot store), nesting at most ``MAX_DEPTH``
    arrays/objects deep. ``where`` prefixes the location in the message (``a.b[2]``).
    """
    if isinstance(value, str):
        return _text_problem(value, where)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            return f"{where or 'value'}: integer out of range (must fit 64 bits)"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where or 'value'}: must be a finite number"
    if isinstance(value, dict | list):
        if depth > MAX_DEPTH:
            return f"{where or 'value'}: nested more than {MAX_DEPTH} levels deep"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, v in items:
            at = f"{where}[{k}]" if isinstance(k, int) else (f"{where}.{k}" if where else str(k))
            if isinstance(k, str) and (why := _text_problem(k, at)):
                return why
            if why := json_problem(v, at, depth + 1):
                return why
        return None
    return f"{where or 'value'}: not a JSON value ({type(value).__name__})"


def _text_problem(text: str, where: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"{where or 'value'}: not valid Unicode (a lone surrogate such as \\ud800)"
    return None


SETTINGS_DEPTH = 4
"""Where a variant's ``settings`` object sits: line → ``variants`` → variant → settings in a
``run_started`` event, and manifest → ``variants`` → variant → settings in a manifest; its
nesting counts from there, so both documents stay within ``MAX_DEPTH``."""


def check_settings(value: Any) -> Any:
    """``json_problem`` as the validator of a variant's free-form ``settings``: raises ValueError."""
    if why := json_problem(value, depth=SETTINGS_DEPTH):
        raise ValueError(why)
    return value


def as_count(value: object) -> int | None:
    """A reported count as an int within ``Count64``, else None (bools, negatives, text, 1e308)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= INT64_MAX:
        return value
    return None


def as_amount(value: object) -> float | None:
    """A reported amount (cost, seconds) as a finite float ≥ 0, else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range
        return None
    return value if math.isfinite(value) and value >= 0 else None


def as_text(value: object, limit: int | None = None) -> str:
    """Agent-written text as valid Unicode: a lone surrogate (from a JSON ``\\ud800`` escape) is
    replaced by U+FFFD, so an event holding it can be written; cut at ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # pair what pairs (UTF-16 surrogates), replace what does not
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text if limit is None else text[:limit]
