"""Differential fuzzing of the runs-jsonl importer: the columnar path against the row path.

The columnar path (DuckDB) decides which lines it can prove valid without Python; the row
path (``json.loads`` + pydantic) is the judge. Where DuckDB's JSON parser is more lenient
than Python's (it allows a trailing comma, for one), a line the row path quarantines could
load on the columnar path. So each file here is made of lines mutated at the byte and token
level — odd numbers, odd escapes, odd keys, odd whitespace, odd timestamps, broken
structure — and both paths must give the same trials (every column), the same quarantine
(line, reason, raw text) and the same notes.

Used by ``tests/ingest/formats/test_formats_runs_jsonl_fuzz.py`` (a few seeds) and by
``make fuzz`` (``tests/fuzz/fuzz.py --runs-jsonl N``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

VALUES = [
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "-0", "-0.0", "0.0", "1.0", "1E2", "1e-2", "2.5e+3",
    '"6"', '"1.5"', "true", "false", "null", "[]", "{}", "[1,]", '{"a": 1,}', "[1, 2]",
    str(2**63 - 1), str(2**63), str(2**64), str(-(2**63) - 1), str(2**31 - 1), str(2**31), "0x10", "01",
    ".5", "+1", "1.", "-", '"\\u0000"', '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', '"\\/"', '"a\\"b"',
    '"\x7f"', '"e\u0301"', '"\u00e9"', '"\\t"', '"\\n"', '"\\x41"', '"\\u0041"', "'x'", '"tab\there"',
    '"ghp_' + "a1B2" * 9 + '"', '"  "', '""', '"solved"', '"Solved"', '" solved"', '"failed"',
    '"infra_error"', '"2026-03-01T10:00:00Z"', '"2026-03-01T10:00:00+24:00"', '"2026-03-01T24:00:00Z"',
    '"2026-03-01T10:00:60Z"', '"2026-03-01t10:00:00z"', '"2026-03-01T10:00Z"', '"2026-03-01T10:00:00.1234567Z"',
    '"2026-03-01T10:00:00+0530"', '"2026-03-01T10:00:00-00:00"', '"2026-02-30T10:00:00Z"',
    '"2026-03-01T10:00:00.5+05:30"', '"0001-01-01T00:00:00Z"', '"9999-12-31T23:59:59+14:00"',
    '"2026-03-01 10:00:00Z"', '"2026-03-01"', '"10:00:00"', '"2026-03-01T10:00:00"',
    '"0000-01-01T00:00:00Z"', '"0001-01-01T00:30:00+01:00"', '"9999-12-31T23:00:00-14:00"',
    '"2026-03-01T10:00:00+23:59"', '"2026-03-01T10:00:00.000000Z"', '"2026-13-01T10:00:00Z"',
    '"\\u0041"', '"\\"', '"\u00e9\\"', '"x\\u0000"', '"\ud83d"', '"\ufeff"', '"\u2028"',
]
KEYS = ["model", "harness", "harness_version", "task_id", "trial", "status", "input_tokens",
        "output_tokens", "steps", "cost_usd", "repo", "benchmark", "system_id", "wall_seconds",
        "failure_mode", "started_at"]
ODD_KEYS = ["Model", "MODEL", "mod\\u0065l", "trial ", " trial", "", "familiarity", "model\\u0000",
            "cost_USD", "x" * 40]
SPACES = [" ", "\t", "\x0c", "\x0b", "\xa0", "\u2028", "\ufeff", "\x00", "\r", "  \t "]


def _base(rng: random.Random, i: int) -> dict:
    line = {"model": f"model-{i % 3}", "harness": f"h{i % 2}", "harness_version": "1.0",
            "task_id": f"task-{i // 6}", "trial": i % 6,
            "status": rng.choice(["solved", "failed", "infra_error"]),
            "input_tokens": rng.randrange(0, 10_000), "output_tokens": rng.randrange(0, 1000),
            "steps": rng.randrange(0, 50)}
    for key, value in (("cost_usd", round(rng.uniform(0, 3), 4)), ("repo", "o/r"), ("benchmark", "b"),
                       ("wall_seconds", round(rng.uniform(0, 900), 3)),
                       ("started_at", f"2026-03-{1 + i % 28:02d}T10:00:00Z"), ("failure_mode", "x")):
        if rng.random() < 0.4:
            line[key] = value
    return line


def _encode(obj: dict, rng: random.Random) -> str:
    sep = rng.choice([(", ", ": "), (",", ":"), (" , ", " : ")])
    return json.dumps(obj, separators=sep, ensure_ascii=rng.random() < 0.5)


def _mutate(text: str, obj: dict, rng: random.Random) -> str:
    """One mutation of an encoded line, at the token level where it can be."""
    kind = rng.randrange(12)
    if kind == 0:  # a value replaced by an odd literal
        return _replace_value(obj, rng.choice(list(obj)), rng.choice(VALUES), rng)
    if kind == 1:  # a trailing comma, in the object or before its end
        cut = text.rstrip().rfind("}")
        return text[:cut] + rng.choice([",", ", ", ",\t", " ,"]) + text[cut:]
    if kind == 2:  # odd whitespace somewhere between tokens
        cut = rng.choice([0, 1, len(text) - 1, len(text)] + [i + 1 for i, c in enumerate(text) if c in ",:"])
        return text[:cut] + rng.choice(SPACES) + text[cut:]
    if kind == 3:  # an odd key, added or renaming one
        key = rng.choice(ODD_KEYS)
        if rng.random() < 0.5 and obj:
            old = rng.choice(list(obj))
            return text.replace(json.dumps(old), '"' + key + '"', 1)
        return text[:-1] + f', "{key}": {rng.choice(VALUES)}' + "}"
    if kind == 4:  # a repeated key, with the same or another value
        key = rng.choice(KEYS)
        return text[:-1] + f', "{key}": {rng.choice(VALUES + [json.dumps(obj.get(key))])}' + "}"
    if kind == 5:  # truncated
        return text[: rng.randrange(len(text))]
    if kind == 6:  # two values on one line, or garbage after the object
        return text + rng.choice([" " + text, "x", " // c", " /* c */", "\x00", ",", "}", " null"])
    if kind == 7:  # a comment or a single-quoted string inside
        return text.replace(", ", rng.choice([", /* c */ ", ", // c\n", ", '"]), 1)
    if kind == 8:  # a nested value
        key = rng.choice(KEYS)
        return _replace_value(obj, key, rng.choice(['{"x": 1}', "[[1]]", '[{"a": [1, 2]}]']), rng)
    if kind == 9:  # a byte flipped (may make the line invalid UTF-8 once written as bytes)
        i = rng.randrange(len(text))
        return text[:i] + rng.choice(['"', "\\", "{", "}", ":", ",", "\u00e9", "\ud800", "0"]) + text[i + 1:]
    if kind == 10:  # several odd values at once
        for key in rng.sample(list(obj), min(3, len(obj))):
            text = _replace_value(obj, key, rng.choice(VALUES), rng)
            obj = {**obj, key: None}
        return text
    return text.upper() if rng.random() < 0.1 else text.replace('"', "'", 1)


def _replace_value(obj: dict, key: str, literal: str, rng: random.Random) -> str:
    marker = "\x01MARK\x01"
    text = _encode({**obj, key: marker}, rng)
    return text.replace(json.dumps(marker), literal, 1)


def write_file(path: Path, n: int, seed: int) -> Path:
    """A runs-jsonl file of ``n`` lines: about a third mutated, a few blank or repeated."""
    rng = random.Random(seed)
    lines: list[str] = []
    for i in range(n):
        obj = _base(rng, i)
        text = _encode(obj, rng)
        r = rng.random()
        if r < 0.35:
            text = _mutate(text, obj, rng)
        elif r < 0.37:
            text = rng.choice(["", " ", "\t", "\x0c"])
        elif r < 0.39 and lines:
            text = lines[-1]
        lines.append(text)
    ends = ["\n", "\r\n", "\r"] if rng.random() < 0.3 else ["\n"]
    data = "".join(line + rng.choice(ends) for line in lines)
    path.write_bytes(data.encode("utf-8", errors="surrogatepass"))
    return path


def differences(path: Path, prices=None) -> list[str]:
    """Every way the two paths disagree on ``path`` (empty: they agree)."""
    import traceback

    from ingest.errors import IngestError
    from ingest.formats.runs_jsonl import load

    out: list[str] = []
    results = []
    for row_path_only in (False, True):
        try:
            [batch] = load(path, prices, row_path_only=row_path_only)
            results.append(batch)
        except IngestError as e:
            results.append(e)
        except Exception:  # a traceback is a finding, whichever path raised it
            return [f"{path}: {'row path' if row_path_only else 'columnar'} raised:\n{traceback.format_exc()}"]
    fast, slow = results
    if isinstance(fast, IngestError) or isinstance(slow, IngestError):
        if str(fast) != str(slow):
            out.append(f"{path}: columnar {fast!s:.200} / row path {slow!s:.200}")
        return out
    for table in ("trials", "attempts", "configs", "cases"):
        a, b = fast.table_rows(table), slow.table_rows(table)
        if len(a) != len(b):
            la = {r.get("source_key") for r in a} if table == "trials" else set()
            lb = {r.get("source_key") for r in b} if table == "trials" else set()
            out.append(f"{path}: {table}: {len(a)} rows columnar, {len(b)} row path; "
                       f"only columnar {sorted(la - lb)[:5]}, only row path {sorted(lb - la)[:5]}")
            continue
        for x, y in zip(a, b, strict=True):
            if x != y:
                out.append(f"{path}: {table} {x.get('source_key') or x.get('case_id') or ''}: "
                           + str({k: (x[k], y.get(k)) for k in x if x[k] != y.get(k)})[:400])
    qa = [(q.line, q.reason, q.raw_text) for q in fast.quarantine]
    qb = [(q.line, q.reason, q.raw_text) for q in slow.quarantine]
    if qa != qb:
        only_a, only_b = [q for q in qa if q not in qb], [q for q in qb if q not in qa]
        out.append(f"{path}: quarantine differs: only columnar {only_a[:3]!r:.400}; only row path {only_b[:3]!r:.400}")
    if fast.notes != slow.notes:
        out.append(f"{path}: notes differ: {fast.notes} / {slow.notes}")
    return out


def fuzz(files: int, lines: int, seed: int, workdir: Path) -> list[str]:
    """``files`` mutated files of ``lines`` lines each; every difference found."""
    workdir.mkdir(parents=True, exist_ok=True)
    found: list[str] = []
    for k in range(files):
        found += differences(write_file(workdir / f"runs-{seed}-{k}.jsonl", lines, seed * 1000 + k))
    return found
