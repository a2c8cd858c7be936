"""The event contract compiled to msgspec structs: one C call per line instead of a pydantic model.

Why: validating every event into its pydantic model is about half of ingest's CPU time
(≈ 6 µs of ≈ 14 µs per event), and the models are then only read. msgspec decodes and
type-checks JSON straight into slotted structs several times faster.

The pydantic models in ``contract`` (``contract.events``) stay the one contract: the structs here are
*generated* from them at import (field names, types, defaults, ``ge``/``le`` bounds,
``extra="forbid"``, the ``event`` tag), never written by hand. The compiled decoder is
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

import sys
import types
import typing
from datetime import datetime
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Annotated, Any, Literal, Union

import annotated_types
import msgspec
from pydantic import AfterValidator, AllowInfNan, BaseModel, StringConstraints
from pydantic.fields import FieldInfo

from contract.events import EVENT_ADAPTER, EVENT_TYPES
from contract.values import ID_PATTERN, ID_RE, check_settings

_FLOAT_MAX = sys.float_info.max

CANONICAL_TS = (
    r"^[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?(Z|\+00:00)$"
)
"""The UTC timestamp forms the compiled decoder accepts (what the runner writes). Within
them pydantic, ``datetime.fromisoformat`` and Arrow read the same instant; any other form
(an offset, a naive time, more than six digits, which pydantic truncates where msgspec
would round, …) is left to pydantic. Impossible dates (Feb 30) pass this pattern and are
caught when Arrow converts the block's timestamps (``decode_block``)."""


def _ts_property(text_field: str) -> property:
    get = attrgetter(text_field)
    return property(lambda self: datetime.fromisoformat(get(self)), doc="The timestamp, as the model has it.")


class UnsupportedField(TypeError):
    """A contract field the generator cannot compile faithfully (fix the generator, not the model)."""


_FINITE = {"le": _FLOAT_MAX, "ge": -_FLOAT_MAX}
"""Bounds that make msgspec refuse inf (from 1e999; JSON has no NaN/Infinity): ``allow_inf_nan=False``."""

_PATTERNS = {ID_PATTERN: ID_PATTERN[:-1] + r"\Z"}
"""Contract patterns the compiler knows, as msgspec (Python ``re.search``) spells them. pydantic
matches with Rust's regex, where ``$`` is the end of the text; in Python it also matches before
a final newline, so ``\\Z``. Any other pattern is refused rather than guessed at."""

_ENVELOPE_IDS = ("run_id", "trial_id")
"""Envelope ids: every line has them, so their pattern is checked per block on the distinct
values (``decode_block``) instead of once per line inside msgspec (≈ 0.4 µs a value). So are
an event's other top-level ids (``case_id``, ``variant``, …: ``_Compiler.id_fields``); ids of
nested models (a ``run_started``'s variants and cases) keep the pattern in the struct."""

_CHECKS = {check_settings}
"""``AfterValidator`` functions the compiler knows: pure checks (they return the value unchanged),
run on the decoded value after msgspec (``decode_block``), so the struct is held to the same rule."""


def _bounds(info: FieldInfo | list, is_float: bool, finite: bool = False) -> dict[str, Any]:
    """msgspec ``Meta`` keywords for a field's (or an ``Annotated`` type's) metadata.

    A pattern comes back as ``"pattern"``, an ``AfterValidator`` as ``"check"`` (callers decide
    where each is enforced); ``finite`` (the model's ``allow_inf_nan=False``) bounds floats.
    """
    meta: dict[str, Any] = dict(_FINITE) if finite and is_float else {}
    for m in info.metadata if isinstance(info, FieldInfo) else info:
        if isinstance(m, FieldInfo):  # an Annotated[..., Field(...)] nested in a union or container
            meta.update(_bounds(m, is_float, finite))
        elif isinstance(m, StringConstraints):
            if {k for k, v in vars(m).items() if v is not None} - {"max_length", "pattern"}:
                raise UnsupportedField(f"string constraint {m!r} has no compiled equivalent")
            if m.max_length is not None:
                meta["max_length"] = m.max_length
            if m.pattern is not None:
                if not isinstance(m.pattern, str) or m.pattern not in _PATTERNS:
                    raise UnsupportedField(f"pattern {m.pattern!r} has no known compiled equivalent")
                meta["pattern"] = _PATTERNS[m.pattern]
        elif isinstance(m, AfterValidator):
            if m.func not in _CHECKS:
                raise UnsupportedField(f"validator {m.func!r} has no compiled equivalent")
            meta["check"] = m.func
        elif isinstance(m, annotated_types.Ge):
            meta["ge"] = m.ge
        elif isinstance(m, annotated_types.Gt):
            meta["gt"] = m.gt
        elif isinstance(m, annotated_types.Le):
            meta["le"] = m.le
        elif isinstance(m, annotated_types.Lt):
            meta["lt"] = m.lt
        elif isinstance(m, AllowInfNan):
            if not m.allow_inf_nan and is_float:
                # JSON has no NaN, but 1e999 decodes to inf: bound it so pydantic sees (and refuses) it
                meta.setdefault("le", _FLOAT_MAX)
                meta.setdefault("ge", -_FLOAT_MAX)
        else:
            raise UnsupportedField(f"constraint {m!r} has no compiled equivalent")
    return meta


_PLAIN_CONFIG = {"extra", "frozen", "title", "allow_inf_nan"}
"""model_config keys the compiler handles: the first three do not change what validation accepts;
``allow_inf_nan=False`` bounds every float."""


def _optional_checked(tp: Any) -> tuple[Any, Any]:
    """``Annotated[X, AfterValidator(check)] | None`` as ``(X | None, check skipping None)``.

    A checked value that may be absent (``Settings | None``): the check runs on the value when
    there is one, as pydantic does; any other validator inside a union stays refused.
    """
    if typing.get_origin(tp) not in (Union, types.UnionType):
        return tp, None
    args = typing.get_args(tp)
    if len(args) != 2 or type(None) not in args:
        return tp, None
    (inner,) = [a for a in args if a is not type(None)]
    if typing.get_origin(inner) is not Annotated:
        return tp, None
    base, *extra = typing.get_args(inner)
    got = _bounds(list(extra), base is float)
    check = got.pop("check", None)
    if check is None or got:
        return tp, None

    def unless_none(value: Any, check: Any = check) -> Any:
        return value if value is None else check(value)

    return base | None, unless_none


class _Compiler:
    """Builds (and caches) one struct per model; raises ``UnsupportedField`` rather than guess."""

    def __init__(self) -> None:
        self.structs: dict[type[BaseModel], type[msgspec.Struct]] = {}
        self.checks: dict[type[msgspec.Struct], list[tuple[str, Any]]] = {}
        self.id_fields: dict[str, tuple[str, ...]] = {}
        """Event tag → its top-level id fields besides the envelope's, whose pattern
        ``decode_block`` checks per block (≈ 0.4 µs a value inside msgspec)."""
        """Struct → (field, check) run after decoding; a check is a function or a struct type whose
        own checks apply to the value (a nested model, or a list of them)."""

    def type_of(self, tp: Any, where: str, bounds: dict[str, Any] | None = None, finite: bool = False) -> Any:
        """A model field's annotation as a msgspec type that accepts no more than pydantic does.

        ``bounds`` (``ge``/``le``/``max_length``/…) apply to the number or string in the annotation
        (``int | None`` too); ``Annotated`` constraints inside unions and containers are compiled
        the same way. ``finite`` (the model's ``allow_inf_nan=False``) bounds every float in it.
        """
        origin = typing.get_origin(tp)
        if origin is Annotated:
            inner, *extra = typing.get_args(tp)
            got = _bounds(list(extra), inner is float, finite)
            if "check" in got:
                raise UnsupportedField(f"{where}: a validator inside a union or container is not compiled")
            return self.type_of(inner, where, {**(bounds or {}), **got}, finite)
        if tp is float and finite and not bounds:
            bounds = dict(_FINITE)
        if tp in (int, float, str) and bounds:
            if tp is not str and {"max_length", "pattern"} & bounds.keys():
                raise UnsupportedField(f"{where}: string constraints on a number")
            if tp is str and bounds.keys() - {"max_length", "pattern"}:
                raise UnsupportedField(f"{where}: number bounds on a string")
            return Annotated[tp, msgspec.Meta(**bounds)]
        if bounds and not (origin in (Union, types.UnionType) and any(
                a in (int, float, str) or typing.get_origin(a) is Annotated for a in typing.get_args(tp))):
            raise UnsupportedField(f"{where}: bounds on a type that is not a number or string")
        if tp in (str, bool, int, float):
            return tp
        if tp is Any:
            return Any
        if tp is type(None):
            return None
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return self.struct(tp)
        if origin is Literal:
            return tp
        if origin in (Union, types.UnionType):
            return Union[tuple(self.type_of(a, where, bounds if a in (int, float, str) else None, finite)  # noqa: UP007
                               for a in typing.get_args(tp))]
        if origin is list:
            (item,) = typing.get_args(tp)
            return list[self.type_of(item, where, finite=finite)]  # type: ignore[misc]  # a runtime type
        if origin is dict:
            key, value = typing.get_args(tp)
            if key is not str:
                raise UnsupportedField(f"{where}: dict keys must be str")
            return dict[str, self.type_of(value, where, finite=finite)]  # type: ignore[misc]
        raise UnsupportedField(f"{where}: no compiled equivalent for {tp!r}")

    def struct(self, model: type[BaseModel]) -> type[msgspec.Struct]:
        if model in self.structs:
            return self.structs[model]
        cfg = model.model_config
        if cfg.get("extra") != "forbid":
            raise UnsupportedField(f"{model.__name__}: the compiled decoder needs extra='forbid'")
        if other := set(cfg) - _PLAIN_CONFIG:
            raise UnsupportedField(f"{model.__name__}: model_config {sorted(other)} is not compiled")
        hooks = model.__pydantic_decorators__
        if hooks.validators or hooks.field_validators or hooks.root_validators or hooks.model_validators:
            raise UnsupportedField(f"{model.__name__}: custom validators are not compiled")
        finite = cfg.get("allow_inf_nan", True) is False
        checks: list[tuple[str, Any]] = []
        is_event = "event" in model.model_fields
        id_fields: list[str] = []
        tag = None
        fields: list[tuple] = []
        renames: dict[str, str] = {}
        ns_extra: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            where = f"{model.__name__}.{name}"
            if info.alias not in (None, name) or info.validation_alias is not None:
                raise UnsupportedField(f"{where}: aliases are not compiled")
            if name == "event":
                tag = info.default
                continue
            meta = _bounds(info, info.annotation in (float, float | None), finite)
            if (check := meta.pop("check", None)) is not None:
                checks.append((name, check))
            if name in _ENVELOPE_IDS:
                fields.append(_envelope_id(name, info, where))
                continue
            if is_event and meta.get("pattern") == _PATTERNS[ID_PATTERN] and info.annotation is str:
                del meta["pattern"]  # checked per block on the distinct values (``_refuse_unchecked``)
                id_fields.append(name)
            if (name, info.annotation) == ("ts", datetime) and info.is_required() and not meta:
                # kept as its text (decode_block checks and converts it); ``ts`` parses it on demand
                text = f"{name}_text"
                fields.append((text, str))
                renames[text] = name  # read from (and written as) the model's key
                ns_extra[name] = _ts_property(text)
                continue
            annotation, optional_check = _optional_checked(info.annotation)
            if optional_check is not None:
                checks.append((name, optional_check))
            tp = self.type_of(annotation, where, meta, finite)
            nested = _nested_model(info.annotation)
            if nested is not None and self.struct(nested) in self.checks:
                checks.append((name, self.struct(nested)))
            factory: Any = info.default_factory
            if factory is not None:
                if isinstance(factory, type) and issubclass(factory, BaseModel):
                    factory = self.struct(factory)
                fields.append((name, tp, msgspec.field(default_factory=factory)))
            elif info.is_required():
                fields.append((name, tp))
            else:
                default = info.default
                if isinstance(default, list | dict | set):
                    raise UnsupportedField(f"{where}: mutable default")
                fields.append((name, tp, default))
        # required fields first (msgspec's rule); keyword construction makes the order irrelevant
        fields.sort(key=lambda f: len(f) == 3)
        opts: dict[str, Any] = {"forbid_unknown_fields": True, "frozen": True, "gc": False}
        if renames:
            opts["rename"] = renames
        ns: dict[str, Any] = {
            "__doc__": f"Compiled from {model.__module__}.{model.__name__}.", "__contract__": model, **ns_extra,
        }
        if tag is not None:
            opts.update(tag_field="event", tag=tag)
            ns["event"] = tag  # read like the model's field (the tag itself is not a struct field)
        st = msgspec.defstruct(model.__name__, fields, namespace=ns, module=__name__, **opts)
        self.structs[model] = st
        if checks:
            self.checks[st] = checks
        if id_fields and tag is not None:
            self.id_fields[tag] = tuple(id_fields)
        return st


def _envelope_id(name: str, info: FieldInfo, where: str) -> tuple:
    """An envelope id (``Id`` or ``TrialId | None``) as a length-checked ``str`` field.

    Its pattern is checked by ``decode_block`` (``ENVELOPE_ID_LIMITS`` records the length).
    """
    tp, meta, optional = info.annotation, list(info.metadata), False
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) == 1 and len(typing.get_args(tp)) == 2
        if not optional or typing.get_origin(args[0]) is not Annotated:
            raise UnsupportedField(f"{where}: an envelope id must be an id type, or one or None")
        tp, *meta = typing.get_args(args[0])
    got = _bounds(meta, False)
    if tp is not str or got.get("pattern") != _PATTERNS[ID_PATTERN] or set(got) != {"pattern", "max_length"}:
        raise UnsupportedField(f"{where}: an envelope id must be an id type (pattern and max_length)")
    if info.is_required() == optional:
        raise UnsupportedField(f"{where}: an envelope id is required, or optional with default None")
    ENVELOPE_ID_LIMITS[name] = got["max_length"]
    field_tp: Any = Annotated[str, msgspec.Meta(max_length=got["max_length"])]
    return (name, field_tp | None, None) if optional else (name, field_tp)


def _nested_model(tp: Any) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list, or with None), for its checks."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (list, Union, types.UnionType) else (tp,)
    found = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    return found[0] if len(found) == 1 else None


ENVELOPE_ID_LIMITS: dict[str, int] = {}
"""Envelope id field → its max length (the compiled struct checks the length, ``decode_block``
the pattern)."""


_COMPILER = _Compiler()
STRUCTS: dict[str, type[msgspec.Struct]] = {name: _COMPILER.struct(m) for name, m in EVENT_TYPES.items()}
"""event name → compiled struct, for every event type of the contract."""
if set(ENVELOPE_ID_LIMITS) != set(_ENVELOPE_IDS):
    raise UnsupportedField(f"the envelope ids {_ENVELOPE_IDS} must be typed with the id pattern")
_CHECKED = {st for st in STRUCTS.values() if st in _COMPILER.checks}
"""Event structs with a check to run after decoding (``run_started``: its variants' settings)."""
_CHECKED_KINDS = frozenset(getattr(st, "event") for st in _CHECKED)  # noqa: B009  (a class attribute)
_ID_GETTERS = {tag: (attrgetter(*names), len(names) == 1) for tag, names in _COMPILER.id_fields.items()}
"""Event tag → (getter of its other id fields, whether it returns one value)."""
_ID_KINDS = frozenset(_ID_GETTERS)
# Each struct is importable here by its model's name, so structs pickle (the two-process split).
globals().update({st.__name__: st for st in _COMPILER.structs.values()})

DECODER = msgspec.json.Decoder(Union[tuple(STRUCTS.values())])  # noqa: UP007
"""Decodes one line (bytes) into its event struct; raises ``msgspec.ValidationError``/``DecodeError``."""

decode = DECODER.decode
"""One line → its struct. Not the whole contract on its own: ``ts`` is only a string here;
``decode_block`` checks its form and converts it."""

_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError)
_ts_text = attrgetter("ts_text")
_envelope_ids = attrgetter(*_ENVELOPE_IDS)
get_envelope = attrgetter("seq", "event", "trial_id", "run_id")
"""An event's ``(seq, event, trial_id, run_id)``: read once per block, used by the checks here and
by the reader after them (``decode_block(..., envelopes)``)."""
_kind, _tid, _rid = itemgetter(1), itemgetter(2), itemgetter(3)
_GOOD_IDS: set[str] = set()
"""Envelope ids already found to match the id pattern (cleared when large: memory stays flat)."""
_GOOD_IDS_MAX = 8_192


def _passes(obj: Any) -> bool:
    """Whether a decoded struct keeps the checks compiled for it (``_CHECKS``), nested ones too."""
    for name, check in _COMPILER.checks[type(obj)]:
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
