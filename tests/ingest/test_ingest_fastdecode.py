"""The compiled contract (``ingest.fastdecode``) against pydantic, the contract itself.

The promise: whatever the compiled decoder accepts, pydantic accepts with the same values
(type for type, the timestamp to the microsecond); what it refuses is left to pydantic.
Checked on every event type, then on lines mutated at random (hypothesis) with values of
every JSON type and number spellings ``json.dumps`` never writes.
"""

from __future__ import annotations

import importlib.util
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from contract.call_events import ModelCall, NetworkConnection, TrajectoryStep
from contract.events import EVENT_ADAPTER, EVENT_TYPES, dump_event
from contract.stage_events import JudgeInfo, Judgment
from contract.trial_events import (
    Budget,
    IntegrityCheck,
    PrepareFinished,
    TrialSkipped,
    WorkspacePrepared,
)
from ingest import fastdecode
from ingest.line_validation import exact_micros
from ingest.struct_compiler import StructCompiler, UnsupportedField

_spec = importlib.util.spec_from_file_location("fastdecode_eventgen", Path(__file__).with_name("eventgen.py"))
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def _every_event_type() -> list[BaseModel]:
    evs = gen.run_events()
    s = gen.Seq("run-1")
    evs += [
        PrepareFinished(**s.env("run-1-t001"), command=["make", "deps"], exit_code=0, duration_s=1.5),
        IntegrityCheck(**s.env("run-1-t001"), phase="before_grading", ok=False, mismatches=["a.py"]),
        Budget(**s.env("run-1-t001"), type="cost", status="exceeded", limit=2.0, used=2.5),
        WorkspacePrepared(**s.env("run-1-t001"), initial_tree="a" * 40, prepared_tree="b" * 40),
        TrialSkipped(**s.env("run-1-t002"), case_id="c", variant="v", config_id="x", repetition=1,
                        reason="case not scored: controls failed"),
        ModelCall(**s.env("run-1-t001"), stage="build", attempt=1, call_index=0, mode="scripted",
                     provider="anthropic", api="messages", model="m", status=200, input_tokens=10, output_tokens=3,
                     provider_usage={"input_tokens": 10, "output_tokens": 3}, tool_calls=["Read"], latency_s=0.25,
                     request_sha256="c" * 64, started_at_unix=1764600000.123456),
        NetworkConnection(**s.env("run-1-t001"), stage="build", attempt=1, host="pypi.org", port=443,
                          method="CONNECT", allowed=True, bytes_up=517, bytes_down=4096, duration_s=0.75,
                          started_at_unix=1764600000.25),
        TrajectoryStep(**s.env("run-1-t001"), attempt=1, stage="build", index=0, kind="tool", source="gateway",
                          tool="Bash", action="run", paths=["a.py"], command="pytest", exit_code=1, ok=False,
                          started_at_unix=1764600000.5, ended_at_unix=1764600001.25),
        Judgment(**s.env("run-1-t001"), attempt=1, criterion_id="fits", verdict="inconclusive", abstained=True,
                    judge=JudgeInfo(host="builtin", provider="anthropic", model="m", reasoning_effort="low",
                                       timeout_s=30.0, source="variant"),
                    rubric="rubric.md", rubric_sha256="d" * 64, reasons=["r"], error="not JSON", duration_s=0.5,
                    model_calls=2),
    ]
    assert {e.event for e in evs} == set(EVENT_TYPES), "the sample must hold every event type"
    return evs


EVENTS = _every_event_type()
LINES = [dump_event(e).encode() for e in EVENTS]


def _same(a: Any, b: Any, where: str = "") -> None:
    """``a`` (compiled) reads exactly like ``b`` (pydantic): same fields, types and values."""
    if isinstance(b, BaseModel):
        assert type(a).__name__ == type(b).__name__, where
        for name in type(b).model_fields:
            _same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), where
        for k in b:
            _same(a[k], b[k], f"{where}.{k}")
    elif isinstance(b, datetime):
        assert isinstance(a, datetime) and a == b and a.utcoffset() == b.utcoffset(), where
    elif isinstance(b, float):
        assert type(a) is float and (repr(a) == repr(b) or (math.isnan(a) and math.isnan(b))), (where, a, b)
    else:
        assert type(a) is type(b) and a == b, (where, a, b)


def _check(line: bytes) -> bool:
    """Hold one line to the promise; True when the compiled decoder accepted it."""
    events, bad, micros = fastdecode.decode_block([line])
    try:
        want = EVENT_ADAPTER.validate_json(line)
    except ValidationError:
        want = None
    if bad:
        assert bad == {0} and events == [None] and micros == [None]
        return False
    assert want is not None, f"compiled decoder accepted a line pydantic refuses: {line!r}"
    _same(events[0], want)
    assert micros[0] == exact_micros(want.ts)
    assert fastdecode.to_model(events[0]) == want
    return True


def test_every_event_type_is_compiled_with_the_models_fields():
    assert set(fastdecode.STRUCTS) == set(EVENT_TYPES)
    for name, model in EVENT_TYPES.items():
        st_ = fastdecode.STRUCTS[name]
        fields = {f.encode_name: f.required for f in msgspec.structs.fields(st_)}
        want = {k: f.is_required() for k, f in model.model_fields.items() if k != "event"}
        assert fields == want, name
        assert st_.event == name and st_.__contract__ is model


@pytest.mark.parametrize("i", range(len(EVENTS)), ids=[e.event for e in EVENTS])
def test_the_runners_lines_are_accepted_with_the_models_values(i):
    assert _check(LINES[i])


def test_defaults_are_fresh_per_event_and_nested_defaults_are_structs():
    a = fastdecode.decode(b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-03-02T09:00:00Z",'
                          b'"event":"stage_finished","attempt":1,"stage":"build","duration_s":1}')
    b = fastdecode.decode(b'{"run_id":"r","seq":2,"ts":"2026-03-02T09:00:00Z","event":"case_validated",'
                          b'"case_id":"c","ok":true}')
    assert type(a.usage).__name__ == "Usage" and a.usage.input_tokens is None and a.usage.cost_usd is None
    assert a.verdict_findings == [] and type(a.duration_s) is float
    assert b.problems == [] and b.problems is not fastdecode.decode(LINES[1]).problems


@pytest.mark.parametrize("line", [
    b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-02-30T09:00:00Z","event":"budget","type":"cost","status":"unknown"}',
    b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-02-28T24:00:00Z","event":"budget","type":"cost","status":"unknown"}',
    b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-03-02T09:00:00.1234567Z","event":"budget","type":"cost","status":"unknown"}',
    b'{"schema_version":1,"run_id":"r","seq":1.0,"ts":"2026-03-02T09:00:00Z","event":"budget","type":"cost","status":"unknown"}',
    b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-03-02T09:00:00Z","event":"budget","type":"cost","status":"unknown","limit":1e999}',
    b'{"schema_version":1,"run_id":"r","seq":1,"ts":"2026-03-02T09:00:00Z","event":"budget","event":"flag","type":"cost","status":"unknown"}',
    b'{"type":"budget","run_id":"r","seq":1,"time":"2026-03-02T09:00:00Z","status":"unknown"}',
])
def test_lines_left_to_pydantic(line):
    """Forms the compiled decoder refuses whatever pydantic makes of them: an impossible date, a
    7th digit (pydantic truncates, msgspec would round), lax numbers, inf, a repeated tag, v0."""
    assert fastdecode.decode_block([line])[1] == {0}


def _with(i: int, **changes) -> bytes:
    d = json.loads(LINES[i])
    d.update(changes)
    return json.dumps(d).encode()


_RS = next(i for i, e in enumerate(EVENTS) if e.event == "run_started")
_TS = next(i for i, e in enumerate(EVENTS) if e.event == "trial_started")
_SF = next(i for i, e in enumerate(EVENTS) if e.event == "stage_finished")
_MC = next(i for i, e in enumerate(EVENTS) if e.event == "model_call")


def _settings(value) -> bytes:
    d = json.loads(LINES[_RS])
    d["variants"][0]["settings"] = {"x": value}
    return json.dumps(d).encode()


def _nest(depth: int):
    v: Any = 1
    for _ in range(depth):
        v = [v]
    return v


@pytest.mark.parametrize("line", [
    _with(_TS, run_id="a=b"), _with(_TS, run_id="a\n"), _with(_TS, run_id="x" * 129), _with(_TS, run_id=""),
    _with(_TS, run_id=".hidden"), _with(_TS, trial_id="t/1"), _with(_TS, trial_id="t" * 256),
    _with(_TS, case_id="c'1"), _with(_TS, variant="v*?"), _with(_TS, config_id="c" * 129),
    _with(_TS, seq=2**63), _with(_TS, repetition=2**31), _with(_TS, seed=-(2**63) - 1),
    _with(_SF, exit_code=2**31), _with(_SF, usage={"input_tokens": 2**63}),
    _settings(2**63), _settings(_nest(29)), _settings("\ud800"),
    _with(_MC, provider_usage={"x": _nest(29)}), _with(_MC, provider_usage={"x": 2**63}),
    LINES[_SF].replace(b'"duration_s":12.5', b'"duration_s":1e999'),
])
def test_the_value_rules_are_compiled(line):
    """Ids outside the safe alphabet or length, ints outside their column type, settings too deep,
    huge or not Unicode, non-finite floats: refused by the compiled decoder and by pydantic alike."""
    assert fastdecode.decode_block([line])[1] == {0}
    with pytest.raises(ValidationError):
        EVENT_ADAPTER.validate_json(line)


@pytest.mark.parametrize("line", [
    _with(_TS, run_id="r" * 128, trial_id="t" * 255, case_id="c" * 128), _with(_TS, seq=2**63 - 1),
    _with(_TS, seed=-(2**63)), _with(_SF, exit_code=-(2**31)), _settings(_nest(28)), _settings(2**63 - 1),
    _settings("\ud83d\ude00"), _with(_MC, provider_usage=None), _with(_MC, provider_usage={"x": _nest(28)}),
])
def test_values_at_the_limits_are_accepted_by_both(line):
    assert _check(line)


def test_deeply_nested_and_binary_lines_are_refused_not_raised():
    deep = LINES[0][:-1] + b',"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    events, bad, micros = fastdecode.decode_block([deep, b"\xff\xfe", LINES[1]])
    assert bad == {0, 1} and events[2] is not None and micros[2] is not None


def test_the_generator_refuses_what_it_cannot_compile():
    """A contract change the compiler does not understand fails at import, not silently."""
    class Pattern(BaseModel):  # only the contract's id pattern has a known translation
        model_config = ConfigDict(extra="forbid")
        x: str = Field(pattern="^a")

    class Validated(BaseModel):  # only the contract's own pure checks are compiled
        model_config = ConfigDict(extra="forbid")
        x: Annotated[int, AfterValidator(lambda v: v)]

    class Sets(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: set[int]

    class Lax(BaseModel):
        x: int

    class Aliased(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int = Field(alias="y")

    class Checked(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int

        @field_validator("x")
        @classmethod
        def _even(cls, v: int) -> int:
            assert v % 2 == 0
            return v

    class Stripped(BaseModel):
        model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
        x: str

    for model in (Pattern, Validated, Sets, Lax, Aliased, Checked, Stripped):
        with pytest.raises(UnsupportedField):
            StructCompiler(__name__).struct(model)


def test_a_datetime_field_compiles_and_reads_as_pydantic_does():
    """A nested datetime (a regrade's ``regraded_from.started_at``) is RFC 3339 text to the
    compiled struct; pydantic's value and the struct's agree, a naive one read as UTC."""
    import msgspec

    class OtherTime(BaseModel):
        model_config = ConfigDict(extra="forbid")
        at: datetime

    struct = StructCompiler(__name__).struct(OtherTime)
    for text in ("2026-03-02T09:00:01Z", "2026-03-02T09:00:01.5+02:00"):
        fast = msgspec.json.decode(f'{{"at": "{text}"}}'.encode(), type=struct)
        assert fast.at == OtherTime.model_validate({"at": text}).at


# ------------------------------------------------------------------ random lines

RAW_NUMBERS = ["1e999", "-1e400", "1.0", "2e3", "-0", "-0.0", "1E2", "0.1e1", "1e-400", "9223372036854775808",
               "-9223372036854775809", "18446744073709551616", "1.5", "3", "0", "-1"]
TS_FORMS = ["2026-03-02T09:00:01Z", "2026-03-02T09:00:01.5+00:00", "2026-03-02T09:00:01.123456Z",
            "2026-03-02T09:00:01.1234567Z", "2026-03-02t09:00:01z", "2026-03-02 09:00:01Z", "2026-03-02T09:00:01",
            "2026-03-02T09:00:01+02:00", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "2026-03-02",
            "0999-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "2026-03-02T23:59:60Z", "1772442001"]
WORDS = ["a=b", "r" * 129, "x\n", ".h", "ok-id", "build", "qa", "review", "passed", "failed", "inconclusive", "target", "regression", "command", "judge",
         "accepted", "infra_error", "cost", "time", "exceeded", "unknown", "within", "negative", "completed",
         "test_deleted", "true", "null", ""]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6), st.sampled_from(TS_FORMS + WORDS),
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
)
value_texts = st.one_of(json_values.map(lambda v: json.dumps(v)), st.sampled_from(RAW_NUMBERS))


_HOLE = "\u2063hole\u2063"


def _mutate(line: bytes, data) -> bytes:
    d = json.loads(line)
    paths = gen.json_paths(d)
    path = data.draw(st.sampled_from(paths))
    op = data.draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "repeat"]))
    parent = d
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    text = data.draw(value_texts)
    if op == "delete" and isinstance(parent, dict):
        del parent[key]
        return json.dumps(d, ensure_ascii=data.draw(st.booleans())).encode()
    if op == "add" and isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["extra", "Seq", "ts ", "usage", "event"]))] = _HOLE
    elif op == "repeat" and isinstance(parent, dict):
        parent[key] = _HOLE  # the hole keeps its place; the old value is written again after it
        out = json.dumps(d).replace(json.dumps(_HOLE), text, 1)
        return out[: out.rindex("}")].encode() + b"," + json.dumps(key).encode() + b":" + text.encode() + b"}" \
            if len(path) == 1 else out.encode()
    else:
        parent[key] = _HOLE
    return json.dumps(d, separators=data.draw(st.sampled_from([(",", ":"), (", ", ": ")]))) \
        .replace(json.dumps(_HOLE), text, 1).encode()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_mutations_are_never_accepted_unless_pydantic_agrees(data):
    line = data.draw(st.sampled_from(LINES))
    _check(_mutate(line, data))


@settings(max_examples=200, deadline=None)
@given(line=st.sampled_from(LINES), ts=st.sampled_from(TS_FORMS), ascii_=st.booleans(), seed=st.randoms())
def test_key_order_spacing_escapes_and_timestamp_forms(line, ts, ascii_, seed):
    d = json.loads(line)
    d["ts"] = ts
    items = list(d.items())
    seed.shuffle(items)
    text = json.dumps(dict(items), ensure_ascii=ascii_, separators=seed.choice([(",", ":"), (" , ", " : ")]))
    _check(text.encode())


def _leaves(tp) -> list:
    """The scalar types inside an annotation, with their Annotated metadata."""
    import types as _types
    import typing

    origin = typing.get_origin(tp)
    if origin is Annotated:
        inner, *meta = typing.get_args(tp)
        return [(inner, [m for x in meta for m in (x.metadata if hasattr(x, "metadata") else [x])])]
    if origin in (list, dict, typing.Union, _types.UnionType):
        return [leaf for a in typing.get_args(tp) for leaf in _leaves(a)]
    return [(tp, [])]


def test_every_contract_number_obeys_the_value_rules():
    """A new event field must use the contract's bounded types: an int without an upper bound could
    not be stored in its column; every model refuses inf/NaN (contract.values, the value rules)."""
    import annotated_types

    unbounded = []
    for model in fastdecode.COMPILER.structs:
        assert model.model_config.get("allow_inf_nan") is False, f"{model.__name__}: floats must be finite"
        for name, info in model.model_fields.items():
            leaves = [(info.annotation, list(info.metadata))] if info.annotation is int else _leaves(info.annotation)
            for tp, meta in leaves:
                if tp is int and not any(isinstance(m, annotated_types.Le) for m in meta):
                    unbounded.append(f"{model.__name__}.{name}")
    assert not unbounded, f"use contract.values.Int32/Count64/… for {unbounded}"
