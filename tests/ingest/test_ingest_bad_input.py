"""Each way one changed line of a real ``events.jsonl`` used to crash ingest or lose good lines.

The file is an excerpt of a real run of the example corpus (``tests/fuzz/seeds/real_run.jsonl``).
For every case: no exception, every other line of the file ingested, the changed line
quarantined with a reason naming what is wrong, and the warehouse still readable by
``summarize``, ``tables`` and ``sql`` — and by the next ingest of a good run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest

import warehouse
from ingest.api import ingest_paths

SEED = Path(__file__).resolve().parents[1] / "fuzz" / "seeds" / "real_run.jsonl"
LINES = SEED.read_bytes().splitlines()
RUN = json.loads(LINES[0])["run_id"]
USAGE_LINE = next(i for i, x in enumerate(LINES) if b'"event":"stage_finished"' in x and b'"input_tokens":' in x
                  and b'"input_tokens":null' not in x)
FINISH_LINE = next(i for i, x in enumerate(LINES) if b'"event":"trial_finished"' in x)


def _set(i: int, **changes) -> list[bytes]:
    d = json.loads(LINES[i])
    d.update(changes)
    out = list(LINES)
    out[i] = json.dumps(d).encode()
    return out


def _raw_replace(i: int, old: bytes, new: bytes) -> list[bytes]:
    assert old in LINES[i]
    out = list(LINES)
    out[i] = LINES[i].replace(old, new, 1)
    return out


def _ingest(tmp_path: Path, lines: list[bytes], name: str = "run") -> tuple[Path, Path]:
    p = tmp_path / name / "events.jsonl"
    p.parent.mkdir(parents=True)
    p.write_bytes(b"".join(x + b"\n" for x in lines))
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    ingest_paths([p.parent], wh, allow_quarantine=True)
    return p, wh


def _stored(wh: Path, src: Path) -> tuple[set[int], dict[int, str]]:
    con = warehouse.open(wh, read_only=True)
    try:
        lines = {r[0] for r in con.execute("SELECT line FROM events WHERE source_file = ?", [str(src)]).fetchall()}
        quarantine = dict(con.execute("SELECT line, reason FROM quarantine WHERE source_file = ? AND line IS NOT NULL",
                                      [str(src)]).fetchall())
    finally:
        con.close()
    return lines, quarantine


def _cli_reads(wh: Path) -> None:
    """summarize, tables and sql read the warehouse (exit 0, no traceback; summarize of a warehouse
    holding only quarantine says so and exits 2)."""
    import contextlib
    import io

    from trialhouse.cli import main

    for args in (["summarize", "--warehouse", str(wh)], ["tables", "--warehouse", str(wh)],
                 ["sql", "--warehouse", str(wh), "SELECT count(*) FROM events"]):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf), pytest.raises(SystemExit) as exc:
            main(args)
        empty = args[0] == "summarize" and "ingest a run first" in buf.getvalue()
        assert exc.value.code == 0 or (empty and exc.value.code == 2), (args, buf.getvalue())
        assert "Traceback" not in buf.getvalue()


def _assert_only_line_quarantined(tmp_path: Path, lines: list[bytes], bad: int, *needles: str) -> None:
    src, wh = _ingest(tmp_path, lines)
    got, quarantined = _stored(wh, src)
    assert got == set(range(1, len(lines) + 1)) - {bad + 1}, "every other line is ingested"
    assert set(quarantined) == {bad + 1}, quarantined
    for n in needles:
        assert n in quarantined[bad + 1], quarantined[bad + 1]
    _cli_reads(wh)


def test_a_blank_or_whitespace_line_is_skipped(tmp_path):
    """Was: ValueError 'Arrays were not all the same length' (payload built from the whole block)."""
    for k, blank in enumerate((b"", b"   ", b"\t \r")):
        lines = [*LINES[:5], blank, *LINES[5:]]
        src, wh = _ingest(tmp_path / str(k), lines)
        got, quarantined = _stored(wh, src)
        assert got == set(range(1, len(lines) + 1)) - {6} and not quarantined


@pytest.mark.parametrize(("field", "value"), [("seq", 2**63), ("seq", 10**30)])
def test_an_integer_beyond_64_bits_is_quarantined(tmp_path, field, value):
    """Was: OverflowError (seq ≥ 2^63)."""
    _assert_only_line_quarantined(tmp_path, _set(7, **{field: value}), 7, "seq", "out of range")


def test_a_token_count_beyond_64_bits_is_quarantined(tmp_path):
    """Was: OverflowError (usage.input_tokens ≥ 2^63)."""
    d = json.loads(LINES[USAGE_LINE])
    d["usage"]["input_tokens"] = 2**64
    lines = list(LINES)
    lines[USAGE_LINE] = json.dumps(d).encode()
    _assert_only_line_quarantined(tmp_path, lines, USAGE_LINE, "usage.input_tokens")


def test_schema_version_0_with_an_event_key_is_quarantined(tmp_path):
    """Was: KeyError 'type' in the v0 upgrader."""
    _assert_only_line_quarantined(tmp_path, _set(7, schema_version=0), 7, "schema_version 0")


@pytest.mark.parametrize("value", [{}, [1], 5, None])
def test_an_event_name_that_is_not_a_string_is_quarantined(tmp_path, value):
    """Was: TypeError 'unhashable type'."""
    _assert_only_line_quarantined(tmp_path, _set(7, event=value), 7, "event")


def test_a_lone_surrogate_escape_is_quarantined(tmp_path):
    """Was: a serialization error when the payload was written."""
    i = next(i for i, x in enumerate(LINES) if b'"event":"grading"' in x)
    lines = _raw_replace(i, b'"criterion_id":"', b'"criterion_id":"\\ud800')
    _assert_only_line_quarantined(tmp_path, lines, i)
    lines = _raw_replace(i, b'"event":"grading"', b'"event":"grading","x":"\\udfff"')
    _assert_only_line_quarantined(tmp_path / "2", lines, i, "Unicode")


def test_deep_nesting_on_the_first_line_is_quarantined(tmp_path):
    """Was: RecursionError when it was the first line (on line 2 it was quarantined already)."""
    deep = b"[" * 100_000 + b"]" * 100_000
    for at in (0, 1):
        lines = [*LINES[:at], deep, *LINES[at:]]
        src, wh = _ingest(tmp_path / str(at), lines)
        got, quarantined = _stored(wh, src)
        assert got == set(range(1, len(lines) + 1)) - {at + 1}
        assert "nested" in quarantined[at + 1] or "JSON" in quarantined[at + 1], quarantined


def test_a_run_id_of_300_characters_quarantines_the_file_and_keeps_the_warehouse(tmp_path):
    """Was: OSError 'File name too long' for the partition directory."""
    long_id = "r" * 300
    lines = [x.replace(RUN.encode(), long_id.encode()) for x in LINES]
    src, wh = _ingest(tmp_path, lines, name="long-run")
    got, quarantined = _stored(wh, src)
    assert not got and len(quarantined) == len(lines)
    assert all("run_id" in r and "128" in r for r in quarantined.values())
    _cli_reads(wh)


@pytest.mark.parametrize("hostile", ["a=b", "a\nb", "a'b\"c*?[x]"])
def test_a_hostile_run_id_never_reaches_a_path_and_later_ingests_still_work(tmp_path, hostile):
    """Was: a DuckDB error, and the partition left on disk broke summarize/tables/sql and every
    later ingest until removed by hand."""
    lines = [x.replace(json.dumps(RUN).encode(), json.dumps(hostile).encode()) for x in LINES]
    src, wh = _ingest(tmp_path, lines, name="hostile")
    got, quarantined = _stored(wh, src)
    assert not got and len(quarantined) == len(lines)
    parts = {p.name for p in (wh.parent / "trialhouse.parquet").glob("*/run_id=*")}
    assert parts == {"run_id=hostile"}, parts  # the file's quarantine, under its directory's name
    _cli_reads(wh)
    good = tmp_path / "good" / "events.jsonl"
    good.parent.mkdir()
    good.write_bytes(SEED.read_bytes())
    ingest_paths([good.parent], wh, allow_quarantine=True)
    assert _stored(wh, good)[0] == set(range(1, len(LINES) + 1))
    _cli_reads(wh)


def test_a_foreign_line_taking_a_good_seq_quarantines_only_itself(tmp_path):
    """Was: the good line with that seq was quarantined ("seq already used")."""
    d = json.loads(LINES[10])
    d["run_id"] = "someone-else"
    lines = [*LINES[:5], json.dumps(d).encode(), *LINES[5:]]  # before the line whose seq it takes
    _assert_only_line_quarantined(tmp_path, lines, 5, "someone-else", "differs from this file's run")


def test_a_foreign_line_first_quarantines_only_itself(tmp_path):
    """Was: every good line was quarantined (the first accepted line decided the file's run)."""
    d = json.loads(LINES[0])
    d["run_id"] = "someone-else"
    _assert_only_line_quarantined(tmp_path, [json.dumps(d).encode(), *LINES], 0, "someone-else")


def test_a_stray_line_with_a_good_lines_seq_quarantines_only_itself(tmp_path):
    """A line of the same run carrying another line's seq, placed before it: the line in seq order keeps it."""
    d = json.loads(LINES[40])
    d["seq"] = json.loads(LINES[300])["seq"]
    lines = [*LINES[:41], json.dumps(d).encode(), *LINES[41:]]
    _assert_only_line_quarantined(tmp_path, lines, 41, "seq", "in seq order")


@pytest.mark.parametrize("value", [b"Infinity", b"-Infinity", b"NaN", b"1e999"])
def test_non_finite_durations_are_refused_like_non_finite_costs(tmp_path, value):
    """Was: duration_s Infinity/1e999 accepted (latency p95 printed inf) while cost_usd NaN was refused."""
    lines = list(LINES)
    lines[FINISH_LINE], n = re.subn(rb'"duration_s":[0-9.eE+-]+', b'"duration_s":' + value, LINES[FINISH_LINE], count=1)
    assert n == 1
    _assert_only_line_quarantined(tmp_path, lines, FINISH_LINE, "duration_s", "finite")
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    con = duckdb.connect()
    try:
        root = str(wh.parent / "trialhouse.parquet" / "trials" / "*" / "*.parquet")
        assert con.execute("SELECT count(*) FROM read_parquet(?) WHERE NOT isfinite(duration_s)", [root]).fetchone() == (0,)
    finally:
        con.close()


def test_the_same_event_spelled_otherwise_is_a_repeat_not_a_conflict(tmp_path):
    """A line repeated with other spacing or ``1.0`` for ``1`` holds the same event: dropped and
    counted as a duplicate, never quarantined as 'a different event' (nor does it push out the line)."""
    d = json.loads(LINES[40])
    d["schema_version"] = 1.0
    respelled = json.dumps(d, indent=1).replace("\n", "").encode()
    lines = [*LINES[:41], respelled, *LINES[41:]]
    src, wh = _ingest(tmp_path, lines)
    got, quarantined = _stored(wh, src)
    assert got == set(range(1, len(lines) + 1)) - {42} and not quarantined


def test_a_second_file_of_a_run_in_one_ingest_cannot_replace_the_first(tmp_path):
    """Was: writing a run replaces its partition, so of two files holding the same run (a copy,
    or a file whose own lines are all refused but for one line of that run) the later one
    silently replaced the first: its rows and its quarantine were gone (found by ``make fuzz``)."""
    first, second = tmp_path / "a" / "events.jsonl", tmp_path / "b" / "events.jsonl"
    for p, lines in ((first, LINES), (second, LINES[:-1])):  # the second a shorter copy (a run stopped earlier)
        p.parent.mkdir()
        p.write_bytes(b"".join(x + b"\n" for x in lines))
    wh = tmp_path / "wh" / "trialhouse.duckdb"
    ingest_paths([first.parent, second.parent], wh, allow_quarantine=True)
    assert _stored(wh, first)[0] == set(range(1, len(LINES) + 1))
    got, quarantined = _stored(wh, second)
    assert not got and set(quarantined) == set(range(1, len(LINES)))
    assert all(f"already read from {first}" in r for r in quarantined.values())
    con = warehouse.open(wh, read_only=True)
    try:
        runs = con.execute("SELECT run_id FROM runs").fetchall()
    finally:
        con.close()
    assert runs == [(RUN,)]
    _cli_reads(wh)
    # On its own, the second file replaces the run (re-ingest), as before.
    ingest_paths([second.parent], wh, allow_quarantine=True)
    assert _stored(wh, second)[0] == set(range(1, len(LINES))) and not _stored(wh, first)[0]
