"""Every line of a block held to the event contract: compiled first, pydantic for the rest.

The compiled contract (``ingest.fastdecode``, strict) judges a whole block in a few C
calls. A line it refuses goes to pydantic (``decode_lax``: its lax JSON validation, then
``json.loads`` + ``contract.events.upgrade_event``), so lax values and older versions are
accepted as before and every bad line gets a precise reason (file, line, reason). Every
value is held to the contract's value rules (``contract.values``: 64-bit ints, finite
floats, valid Unicode, nesting, safe ids) on either path.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from contract.envelope import SCHEMA_VERSION
from contract.events import EVENT_ADAPTER, EVENT_TYPES, UnsupportedSchemaVersion, upgrade_event
from contract.values import MAX_DEPTH, json_problem
from ingest import fastdecode
from ingest.batch import QuarantineRow
from ingest.line_blocks import raw_text
from ingest.read_stats import ReadStats

_ID_RULE = "must be a safe id: letters, digits, '.', '_' or '-', starting with a letter or digit"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


def exact_micros(t: datetime | None) -> int | None:
    """A datetime as microseconds since the epoch (a naive one read as UTC, like pyarrow)."""
    if t is None:
        return None
    return ((t if t.tzinfo is not None else t.replace(tzinfo=UTC)) - _EPOCH) // _US


def _short(value: object, limit: int = 80) -> str:
    """A value for a message: its JSON (or repr), cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_error(exc: ValidationError, tag: str) -> str:
    err = exc.errors(include_url=False)[0]
    parts = [str(p) for p in err["loc"]]
    loc = ".".join(parts[1:] if parts[:1] == [tag] else parts)
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    msg = _ID_RULE if err["type"] == "string_pattern_mismatch" else err["msg"]
    return f"{loc}: {msg}{more}" if loc else f"{msg}{more}"


def decode_lax(raw: bytes) -> tuple[Any, int]:
    """A line the compiled contract refused, judged by pydantic: (event, original version).

    First pydantic's own JSON validation, lax (``"5"``, ``5.0``, other timestamp forms, a
    missing ``schema_version`` taken as the current one); failing that, a full diagnosis
    that upgrades older versions and names the reason for everything else (``ValueError``).
    """
    try:
        return EVENT_ADAPTER.validate_json(raw), SCHEMA_VERSION
    except ValueError:
        pass
    try:
        obj = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text (binary data?)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except RecursionError:
        raise ValueError(f"invalid JSON: nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object (got {type(obj).__name__})")
    if why := json_problem(obj):
        raise ValueError(why)
    version = obj.get("schema_version", 0 if ("type" in obj and "event" not in obj) else None)
    try:
        upgraded = upgrade_event(obj)
    except UnsupportedSchemaVersion as exc:
        raise ValueError(str(exc)) from None
    name = upgraded.get("event")
    if not isinstance(name, str):
        raise ValueError(f"event: must be an event name (a string), not {_short(name)}")
    if name not in EVENT_TYPES:
        raise ValueError(f"unknown event type {name[:80]!r}")
    try:
        event = EVENT_ADAPTER.validate_python(upgraded)
    except ValidationError as exc:
        raise ValueError(f"{name}: {_first_error(exc, name)}") from None
    return event, version if isinstance(version, int) else SCHEMA_VERSION


def same_event(raw: bytes, event: Any) -> bool:
    """Whether a line holds ``event`` (the same values, however spelled): a repeat, not a conflict."""
    try:
        other, _version = decode_lax(raw)
    except ValueError:
        return False
    return fastdecode.to_model(other) == fastdecode.to_model(event)


def decode_lines(lines: list[bytes], first: int, src: str, stats: ReadStats,
                 envelopes: list | None = None) -> tuple[list, list[int] | None, list[int] | None, list]:
    """Validate a block's lines: (events, kept indexes or None for all, versions or None, µs).

    Blank lines are dropped (kept indexes); a refused line is quarantined and its event is None.
    ``envelopes`` receives the events' envelopes when the compiled contract accepted them all.
    """
    events, bad, micros = fastdecode.decode_block(lines, envelopes)
    idx: list[int] | None = None
    versions: list[int] | None = None
    if bad:  # blank lines are skipped; the others get a full diagnosis (and upgrades) one by one
        blank = [i for i in bad if not (raw := lines[i]) or (raw[0] in b" \t\r" and not raw.strip())]
        if blank:
            bad.difference_update(blank)
            skip = set(blank)
            idx = [i for i in range(len(lines)) if i not in skip]
        versions = [SCHEMA_VERSION] * len(lines)
        for i in sorted(bad):
            raw = lines[i]
            try:
                events[i], versions[i] = decode_lax(raw)
            except ValueError as exc:
                stats.quarantine.append(QuarantineRow(src, first + i, str(exc), raw_text(raw)))
                continue
            micros[i] = exact_micros(events[i].ts)
            if versions[i] != SCHEMA_VERSION:
                stats.upgraded += 1
    return events, idx, versions, micros
