"""The event contract compiled to msgspec structs: one C call per line instead of a pydantic model.

Why: validating every event into its pydantic model is about half of ingest's CPU time
(≈ 6 µs of ≈ 14 µs per event), and the models are then only read. msgspec decodes and
type-checks JSON straight into slotted structs several times faster.

The pydantic models in ``contract`` (``contract.events``) stay the one contract: the structs here are
*generated* from them at import (``ingest.struct_compiler``), never written by hand. The compiled decoder is
strict where pydantic is lax (``"5"`` for an int, ``1.0`` for an int, a unix number for
a timestamp, huge integers, an older schema version, …): it only ever *accepts* a subset
of what pydantic accepts, with the same values, and every line it refuses is handed to
pydantic (``ingest.line_validation.decode_lax``), which accepts it the lax way or names the reason
it is quarantined. ``tests/ingest/test_ingest_fastdecode.py`` holds the generated
structs to that promise (differential tests against pydantic on generated and mutated
lines); a model field whose type the generator does not know makes import fail loudly.

Structs are attribute-compatible with the models (same field names and values; the
``event`` tag is a class attribute), so the normaliser reads either. ``to_model`` turns
one back into its pydantic model where a model is needed (rare paths).
"""

from __future__ import annotations

from datetime import datetime
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any, Union

import msgspec
from pydantic import BaseModel

from contract.events import EVENT_ADAPTER, EVENT_TYPES
from contract.values import ID_RE
from ingest.struct_compiler import ENVELOPE_IDS, StructCompiler, UnsupportedField

CANONICAL_TS = (
    r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|\+00:00)$"
)
"""The UTC timestamp forms the compiled decoder accepts (what the runner writes). Within
them pydantic, ``datetime.fromisoformat`` and Arrow read the same instant; any other form
(an offset, a naive time, more than six digits, which pydantic truncates where msgspec
would round, …) is left to pydantic. Impossible dates (Feb 30) pass this pattern and are
caught when Arrow converts the block's timestamps (``decode_block``)."""

COMPILER = StructCompiler(__name__)
"""The compiler that built ``STRUCTS`` (and the structs nested in them)."""
STRUCTS: dict[str, type[msgspec.Struct]] = {name: COMPILER.struct(m) for name, m in EVENT_TYPES.items()}
"""event name → compiled struct, for every event type of the contract."""
if set(COMPILER.envelope_id_limits) != set(ENVELOPE_IDS):
    raise UnsupportedField(f"the envelope ids {ENVELOPE_IDS} must be typed with the id pattern")
_CHECKED = {st for st in STRUCTS.values() if st in COMPILER.checks}
"""Event structs with a check to run after decoding (``run_started``: its variants' settings)."""
_CHECKED_KINDS = frozenset(getattr(st, "event") for st in _CHECKED)  # noqa: B009  (a class attribute)
_ID_GETTERS = {tag: (attrgetter(*names), len(names) == 1) for tag, names in COMPILER.id_fields.items()}
"""Event tag → (getter of its other id fields, whether it returns one value)."""
_ID_KINDS = frozenset(_ID_GETTERS)
# Each struct is importable here by its model's name, so structs pickle (the two-process split).
globals().update({st.__name__: st for st in COMPILER.structs.values()})

DECODER = msgspec.json.Decoder(Union[tuple(STRUCTS.values())])  # noqa: UP007
"""Decodes one line (bytes) into its event struct; raises ``msgspec.ValidationError``/``DecodeError``."""

decode = DECODER.decode
"""One line → its struct. Not the whole contract on its own: ``ts`` is only a string here;
``decode_block`` checks its form and converts it."""

_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError)
_ts_text = attrgetter("ts_text")
_envelope_ids = attrgetter(*ENVELOPE_IDS)
get_envelope = attrgetter("seq", "event", "trial_id", "run_id")
"""An event's ``(seq, event, trial_id, run_id)``: read once per block, used by the checks here and
by the reader after them (``decode_block(..., envelopes)``)."""
_kind, _tid, _rid = itemgetter(1), itemgetter(2), itemgetter(3)
_GOOD_IDS: set[str] = set()
"""Envelope ids already found to match the id pattern (cleared when large: memory stays flat)."""
_GOOD_IDS_MAX = 8_192


def _passes(obj: Any) -> bool:
    """Whether a decoded struct keeps the checks compiled for it (``AfterValidator`` checks), nested ones too."""
    for name, check in COMPILER.checks[type(obj)]:
        value = getattr(obj, name)
        if isinstance(check, type):
            for item in value if isinstance(value, list) else (value,):
                if item is not None and not _passes(item):
                    return False
        else:
            try:
                check(value)
            except ValueError:
                return False
    return True


def _refuse_unchecked(events: list, bad: set[int]) -> list | None:
    """Refuse (``None`` + index in ``bad``) the decoded events that fail a post-decode check:
    an envelope id outside the id pattern, or a compiled ``AfterValidator`` check. Returns the
    events' envelopes (``get_envelope``) when every event was decoded and none is refused."""
    good = events if not bad else [e for e in events if e is not None]
    env = list(map(get_envelope, good))
    names = list(map(_kind, env))
    kinds = set(names)
    ids = set(map(_rid, env))
    ids.update(map(_tid, env))
    if not kinds.isdisjoint(_ID_GETTERS):  # one pass over the events that carry other ids
        getters, add, update = _ID_GETTERS, ids.add, ids.update
        for i in compress(range(len(names)), map(_ID_KINDS.__contains__, names)):
            get, single = getters[names[i]]
            add(get(good[i])) if single else update(get(good[i]))
    ids.discard(None)
    new = ids - _GOOD_IDS
    wrong = {x for x in new if not ID_RE.match(x)}
    if len(_GOOD_IDS) > _GOOD_IDS_MAX:
        _GOOD_IDS.clear()
    _GOOD_IDS.update(new - wrong)
    if not wrong and kinds.isdisjoint(_CHECKED_KINDS):
        return None if bad else env
    for i, e in enumerate(events):
        if e is not None and (not wrong.isdisjoint(_ids_of(e)) or (type(e) in _CHECKED and not _passes(e))):
            events[i] = None
            bad.add(i)
    return None if bad else env


def _ids_of(e: Any) -> tuple:
    """Every id an event carries at its top level (envelope first)."""
    get = _ID_GETTERS.get(e.event)
    if get is None:
        return _envelope_ids(e)
    other = get[0](e)
    return (*_envelope_ids(e), *((other,) if get[1] else other))


def decode_block(raws: list[bytes], envelopes: list | None = None) -> tuple[list, set[int], list]:
    """Lines → (events, indexes refused, ``ts`` as µs since the epoch): the compiled contract.

    Each line is decoded on its own (a line can never borrow from its neighbour). A refused
    line gets ``None`` (and ``None`` µs) and is for pydantic to judge. The accepted lines'
    timestamps are checked against ``CANONICAL_TS`` and converted by Arrow in one pass per
    block (a regex per line inside msgspec would cost as much as decoding the line).
    When every line is accepted, ``envelopes`` (if given) receives their ``get_envelope``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    utc = pa.timestamp("us", tz="UTC")
    bad: set[int] = set()
    events: list = []
    try:
        events.extend(map(decode, raws))  # keeps the lines decoded before a refusal
    except _DECODE_ERRORS:
        bad.add(len(events))
        events.append(None)
        for i in range(len(events), len(raws)):
            try:
                events.append(decode(raws[i]))
            except _DECODE_ERRORS:
                events.append(None)
                bad.add(i)
    env = _refuse_unchecked(events, bad)
    texts = pa.array(list(map(_ts_text, events)) if not bad else
                     [None if e is None else e.ts_text for e in events], pa.string())
    canonical = pc.match_substring_regex(texts, CANONICAL_TS)
    if canonical.false_count:
        for i, ok in enumerate(canonical.to_pylist()):
            if ok is False:
                events[i] = None
                bad.add(i)
        texts = pc.if_else(canonical, texts, None)
    try:
        stamps = pc.cast(texts, utc)
    except pa.ArrowInvalid:  # a date that does not exist (Feb 30): find it, leave it to pydantic
        for i, t in enumerate(texts.to_pylist()):
            if t is not None:
                try:
                    datetime.fromisoformat(t)
                except ValueError:
                    events[i] = None
                    bad.add(i)
        texts = pa.array([None if e is None else e.ts_text for e in events], pa.string())
        stamps = pc.cast(texts, utc)
    if envelopes is not None and env is not None and not bad:
        envelopes.extend(env)
    return events, bad, stamps.cast(pa.int64()).to_pylist()


def to_model(event: Any) -> Any:
    """The pydantic model of a compiled struct (a model is returned as it is)."""
    if isinstance(event, BaseModel):
        return event
    return EVENT_ADAPTER.validate_json(msgspec.json.encode(event))
