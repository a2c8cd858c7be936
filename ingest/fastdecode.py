"""The event contract compiled to msgspec structs: one C call per line instead of a pydantic model.

Why: validating every event into its pydantic model is about half of ingest's CPU time
(≈ 6 µs of ≈ 14 µs per event), and the models are then only read. msgspec decodes and
type-checks JSON straight into slotted structs several times faster.

The pydantic models in ``runner.events`` stay the one contract: the structs here are
*generated* from them at import (field names, types, defaults, ``ge``/``le`` bounds,
``extra="forbid"``, the ``event`` tag), never written by hand. The compiled decoder is
strict where pydantic is lax (``"5"`` for an int, ``1.0`` for an int, a unix number for
a timestamp, huge integers, an older schema version, …): it only ever *accepts* a subset
of what pydantic accepts, with the same values, and every line it refuses is handed to
pydantic (``ingest.read._slow_parse``), which accepts it the lax way or names the reason
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
from operator import attrgetter
from typing import Annotated, Any, Literal, Union

import annotated_types
import msgspec
from pydantic import AllowInfNan, BaseModel
from pydantic.fields import FieldInfo

from runner import events as ev

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


def _bounds(info: FieldInfo, is_float: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for m in info.metadata:
        if isinstance(m, annotated_types.Ge):
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


_PLAIN_CONFIG = {"extra", "frozen", "title"}
"""model_config keys that do not change what validation accepts."""


class _Compiler:
    """Builds (and caches) one struct per model; raises ``UnsupportedField`` rather than guess."""

    def __init__(self) -> None:
        self.structs: dict[type[BaseModel], type[msgspec.Struct]] = {}

    def type_of(self, tp: Any, where: str, bounds: dict[str, Any] | None = None) -> Any:
        """A model field's annotation as a msgspec type that accepts no more than pydantic does.

        ``bounds`` (``ge``/``le``/…) apply to the number in the annotation (``int | None`` too).
        """
        origin = typing.get_origin(tp)
        if tp in (int, float) and bounds:
            return Annotated[tp, msgspec.Meta(**bounds)]
        if bounds and not (origin in (Union, types.UnionType) and any(a in (int, float) for a in typing.get_args(tp))):
            raise UnsupportedField(f"{where}: bounds on a type that is not a number")
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
            return Union[tuple(self.type_of(a, where, bounds if a in (int, float) else None)  # noqa: UP007
                               for a in typing.get_args(tp))]
        if origin is list:
            (item,) = typing.get_args(tp)
            return list[self.type_of(item, where)]
        if origin is dict:
            key, value = typing.get_args(tp)
            if key is not str:
                raise UnsupportedField(f"{where}: dict keys must be str")
            return dict[str, self.type_of(value, where)]
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
            meta = _bounds(info, info.annotation in (float, float | None))
            if (name, info.annotation) == ("ts", datetime) and info.is_required() and not meta:
                # kept as its text (decode_block checks and converts it); ``ts`` parses it on demand
                text = f"{name}_text"
                fields.append((text, str))
                renames[text] = name  # read from (and written as) the model's key
                ns_extra[name] = _ts_property(text)
                continue
            tp = self.type_of(info.annotation, where, meta)
            factory = info.default_factory
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
            "__doc__": f"Compiled from runner.events.{model.__name__}.", "__contract__": model, **ns_extra,
        }
        if tag is not None:
            opts.update(tag_field="event", tag=tag)
            ns["event"] = tag  # read like the model's field (the tag itself is not a struct field)
        st = msgspec.defstruct(model.__name__, fields, namespace=ns, module=__name__, **opts)
        self.structs[model] = st
        return st


_COMPILER = _Compiler()
STRUCTS: dict[str, type[msgspec.Struct]] = {name: _COMPILER.struct(m) for name, m in ev.EVENT_TYPES.items()}
"""event name → compiled struct, for every event type of the contract."""
# Each struct is importable here by its model's name, so structs pickle (the two-process split).
globals().update({st.__name__: st for st in _COMPILER.structs.values()})

DECODER = msgspec.json.Decoder(Union[tuple(STRUCTS.values())])  # noqa: UP007
"""Decodes one line (bytes) into its event struct; raises ``msgspec.ValidationError``/``DecodeError``."""

decode = DECODER.decode
"""One line → its struct. Not the whole contract on its own: ``ts`` is only a string here;
``decode_block`` checks its form and converts it."""

_DECODE_ERRORS = (msgspec.MsgspecError, RecursionError)
_ts_text = attrgetter("ts_text")


def decode_block(raws: list[bytes]) -> tuple[list, set[int], list]:
    """Lines → (events, indexes refused, ``ts`` as µs since the epoch): the compiled contract.

    Each line is decoded on its own (a line can never borrow from its neighbour). A refused
    line gets ``None`` (and ``None`` µs) and is for pydantic to judge. The accepted lines'
    timestamps are checked against ``CANONICAL_TS`` and converted by Arrow in one pass per
    block (a regex per line inside msgspec would cost as much as decoding the line).
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
    return events, bad, stamps.cast(pa.int64()).to_pylist()


def to_model(event: Any) -> Any:
    """The pydantic model of a compiled struct (a model is returned as it is)."""
    if isinstance(event, BaseModel):
        return event
    return ev.EVENT_ADAPTER.validate_json(msgspec.json.encode(event))
