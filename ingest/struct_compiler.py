"""The event contract's pydantic models compiled to msgspec structs (``ingest.fastdecode``).

The structs are *generated* from the models at import (field names, types, defaults,
``ge``/``le`` bounds, ``extra="forbid"``, the ``event`` tag), never written by hand, and
accept no more than pydantic does: a model field whose type or constraint the compiler
does not know raises ``UnsupportedField`` rather than be guessed at, so import fails
loudly (docs/design.md, "Ingest validates with the contract compiled to msgspec").
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
from pydantic import AfterValidator, AllowInfNan, BaseModel, StringConstraints
from pydantic.fields import FieldInfo

from contract.values import ID_PATTERN, check_settings

_FLOAT_MAX = sys.float_info.max


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

ENVELOPE_IDS = ("run_id", "trial_id")
"""Envelope ids: every line has them, so their pattern is checked per block on the distinct
values (``decode_block``) instead of once per line inside msgspec (≈ 0.4 µs a value). So are
an event's other top-level ids (``case_id``, ``variant``, …: ``StructCompiler.id_fields``); ids of
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


class StructCompiler:
    """Builds (and caches) one struct per model; raises ``UnsupportedField`` rather than guess.

    ``module``: where the structs are importable by their model's name (so they pickle).
    """

    def __init__(self, module: str) -> None:
        self.module = module
        self.envelope_id_limits: dict[str, int] = {}
        """Envelope id field → its max length (the compiled struct checks the length,
        ``decode_block`` the pattern)."""
        self.structs: dict[type[BaseModel], type[msgspec.Struct]] = {}
        self.checks: dict[type[msgspec.Struct], list[tuple[str, Any]]] = {}
        """Struct → (field, check) run after decoding; a check is a function or a struct type whose
        own checks apply to the value (a nested model, or a list of them)."""
        self.id_fields: dict[str, tuple[str, ...]] = {}
        """Event tag → its top-level id fields besides the envelope's, whose pattern
        ``decode_block`` checks per block (≈ 0.4 µs a value inside msgspec)."""

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
        if tp is datetime:  # RFC 3339 text; a naive one is read as UTC (``exact_micros``)
            return datetime
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
            if name in ENVELOPE_IDS:
                field, self.envelope_id_limits[name] = _envelope_id(info, where)
                fields.append((name, *field))
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
            fields.append((name, tp, *self._default(info, where)))
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
        st = msgspec.defstruct(model.__name__, fields, namespace=ns, module=self.module, **opts)
        self.structs[model] = st
        if checks:
            self.checks[st] = checks
        if id_fields and tag is not None:
            self.id_fields[tag] = tuple(id_fields)
        return st

    def _default(self, info: FieldInfo, where: str) -> tuple:
        """A field's default as a struct field's third item: ``()`` when it is required."""
        factory: Any = info.default_factory
        if factory is not None:
            if isinstance(factory, type) and issubclass(factory, BaseModel):
                factory = self.struct(factory)
            return (msgspec.field(default_factory=factory),)
        if info.is_required():
            return ()
        if isinstance(info.default, list | dict | set):
            raise UnsupportedField(f"{where}: mutable default")
        return (info.default,)


def _envelope_id(info: FieldInfo, where: str) -> tuple[tuple, int]:
    """An envelope id (``Id`` or ``TrialId | None``) as a length-checked ``str`` field: (the
    field's type and default, its max length). Its pattern is checked by ``decode_block``.
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
    field_tp: Any = Annotated[str, msgspec.Meta(max_length=got["max_length"])]
    return ((field_tp | None, None) if optional else (field_tp,)), got["max_length"]


def _nested_model(tp: Any) -> type[BaseModel] | None:
    """The model a field holds (itself, in a list, or with None), for its checks."""
    args = typing.get_args(tp) if typing.get_origin(tp) in (list, Union, types.UnionType) else (tp,)
    found = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
    return found[0] if len(found) == 1 else None
