"""Seeded fuzzing of ingest and manifest validation (a helper, loaded by path; not a test module).

Event files: real ``events.jsonl`` lines (``seeds/real_run.jsonl``, an excerpt of a real run of
the example corpus, and a generated run with judgments and flags) get a few random mutations
each — a value anywhere replaced by one of every JSON type or a hostile one (huge, deep,
non-finite, lone surrogates, hostile ids), keys deleted, lines duplicated, deleted, swapped,
blanked, cut, made binary, lines of other runs inserted anywhere (the first line too, the
seq of a good line too), the whole file given a hostile run id. Each file is ingested and
judged against an oracle written apart from ingest (``expected``): its own JSON walk for the
value rules and the pydantic contract for the rest, the file's run by majority. A finding is
a traceback, a good line lost, a bad line accepted, a line neither accepted nor quarantined,
or a warehouse that ``summarize``/``tables``/``sql`` cannot read afterwards.

Manifests: the runner tests' tiny corpus manifest, mutated the same way; ``validate`` must
never raise, and a manifest it accepts must be one a run can use (every value within the
event contract, every derived file name within 255 bytes).

``python tests/fuzz/fuzz.py`` runs it (``make fuzz``); ``tests/fuzz/test_fuzz.py`` runs a
smaller seeded share of the same in ``make test``.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import random
import shutil
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SEEDS = HERE / "seeds"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

INT64 = 2**63
MAX_DEPTH = 32
MAX_LINE_BYTES = 8 * 1024 * 1024


def _load(name: str, path: Path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _eventgen():
    if "fuzz_eventgen" not in sys.modules:
        sys.modules["fuzz_eventgen"] = _load("fuzz_eventgen", REPO / "tests" / "ingest" / "eventgen.py")
    return sys.modules["fuzz_eventgen"]


def seed_files() -> list[list[bytes]]:
    """The good files mutations start from: a real run excerpt and a generated run."""
    from contract.events import dump_event

    gen = _eventgen()
    real = (SEEDS / "real_run.jsonl").read_bytes().splitlines()
    made = [dump_event(e).encode() for e in gen.run_events("fuzz-gen", cases=("c1", "c2", "c3"))]
    return [real, made]


# ------------------------------------------------------------------ hostile values

HOSTILE_IDS = ["a=b", "a\nb", "a'b\"c*?[x]", "r" * 300, "", " lead", "../up", ".hidden", "_x", "ü", "a/b", "a b"]
RAW_NUMBERS = ["1e999", "-1e999", "NaN", "Infinity", "-Infinity", "9223372036854775808", "-9223372036854775809",
               "18446744073709551616", "1" + "0" * 400, "1e308", "-0.0", "1.5", "3", "0", "-1", "2147483648"]


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def hostile_text(rng: random.Random) -> str:
    """JSON text of one value: every JSON type, and values the rules refuse."""
    pick = rng.randrange(14)
    if pick == 0:
        return rng.choice(RAW_NUMBERS)
    if pick == 1:
        return json.dumps(rng.choice(HOSTILE_IDS))
    if pick == 2:
        return '"\\ud800"' if rng.random() < 0.5 else '"x\\udfff"'
    if pick == 3:
        return json.dumps("\x00" + "n" * rng.randrange(3))
    if pick == 4:
        return json.dumps("s" * rng.choice([10_000, 100_000]))
    if pick == 5:
        return _deep(rng.choice([33, 40, 200, 5_000, 100_000]))
    if pick == 6:
        return json.dumps({"k": [1, {"x": rng.choice([None, True, 2.5, "v"])}]})
    if pick == 7:
        return json.dumps([rng.randrange(-5, 5) for _ in range(rng.randrange(4))])
    if pick == 8:
        return rng.choice(["true", "false", "null", "{}", "[]", '""'])
    if pick == 9:
        return str(rng.choice([INT64, -INT64 - 1, 2**64, 10**30, 2**31, -(2**31) - 1, 2**63 - 1]))
    if pick == 10:
        return json.dumps(rng.choice([1e308, -1e308, 5e-324, 0.1, 1e15]))
    if pick == 11:
        return json.dumps(rng.choice(["😀", "é", "\u2028", "\x7f", "tab\there", "2026-13-40T99:99:99Z"]))
    if pick == 12:
        return json.dumps(rng.randrange(-3, 1000))
    return json.dumps(rng.choice(["build", "accepted", "passed", "run_started", "flag", "x" * 129]))


# ------------------------------------------------------------------ event files


def _paths(node: Any) -> list[tuple]:
    return _eventgen().json_paths(node)


_HOLE = "\u2063hole\u2063"


def mutate_value(line: bytes, rng: random.Random) -> bytes:
    """One value (or key) of one line replaced, deleted or added."""
    d = json.loads(line)
    paths = _paths(d)
    path = rng.choice(paths)
    parent = d
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    op = rng.choice(["replace"] * 6 + ["delete", "add"])
    if op == "delete" and isinstance(parent, dict):
        del parent[key]
        return json.dumps(d).encode()
    if op == "add" and isinstance(parent, dict):
        parent[rng.choice(["extra", "seq", "event", "run_id", "schema_version"])] = _HOLE
    else:
        parent[key] = _HOLE
    text = hostile_text(rng)
    ascii_ = rng.random() < 0.5
    return json.dumps(d, ensure_ascii=ascii_).replace(json.dumps(_HOLE, ensure_ascii=ascii_), text, 1).encode()


def _with_run(line: bytes, run_id: str) -> bytes:
    """The line with its run_id set (unchanged when it is not a JSON object)."""
    try:
        d = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if not isinstance(d, dict):
        return line
    d["run_id"] = run_id
    return json.dumps(d, separators=(",", ":")).encode()


def make_event_file(rng: random.Random, run_id: str, seeds: list[list[bytes]]) -> list[bytes]:
    """A seed file under ``run_id`` with a few random mutations (the lines, without newlines)."""
    base = rng.choice(seeds)
    lines = [_with_run(x, run_id) for x in base]
    if rng.random() < 0.2:  # a shorter file: the run_started line and some trials
        lines = lines[: rng.randrange(1, len(lines) + 1)]
    for _ in range(rng.choice([1, 1, 2, 3, 5])):
        kind = rng.randrange(15)
        i = rng.randrange(len(lines)) if lines else 0
        if not lines:
            lines.append(b"{}")
        elif kind <= 3:
            try:
                lines[i] = mutate_value(lines[i], rng)
            except (ValueError, RecursionError, IndexError, TypeError):  # not a JSON object (any more)
                lines[i] = lines[i][: len(lines[i]) // 2]
        elif kind == 4:  # an exact duplicate somewhere after it
            lines.insert(rng.randrange(i, len(lines) + 1), lines[i])
        elif kind == 5:  # a line of another run, anywhere (first too), maybe with a good line's seq
            foreign = _with_run(rng.choice(lines), rng.choice([f"{run_id}-other", "someone-else"]))
            lines.insert(rng.choice([0, rng.randrange(len(lines) + 1)]), foreign)
        elif kind == 6:
            lines.insert(i, rng.choice([b"", b"   ", b"\t", b" \r"]))
        elif kind == 7:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        elif kind == 8:
            lines.insert(i, rng.choice([b"\xff\xfe\x00binary", b"not json", b"[1,2]", b"null", b"{\"event\":{}}",
                                        b'{"event":[1]}', b"\xed\xa0\x80"]))
        elif kind == 9:
            lines.insert(rng.choice([0, i]), _deep(rng.choice([100, 100_000])).encode())
        elif kind == 10:
            del lines[i]
        elif kind == 11 and len(lines) > 1:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 12:  # another schema version
            try:
                d = json.loads(lines[i])
            except (ValueError, RecursionError):
                continue
            if isinstance(d, dict):
                d["schema_version"] = rng.choice([0, 2, -1, "1", None, 1.0])
                lines[i] = json.dumps(d).encode()
        elif kind == 13:  # the whole file under a hostile run id
            hostile = rng.choice(HOSTILE_IDS)
            lines = [_with_run(x, hostile) for x in lines]
        else:  # CRLF line ends
            lines = [x + b"\r" for x in lines]
    return lines


# ------------------------------------------------------------------ the oracle (apart from ingest)


def _rules(value: Any, depth: int = 1) -> bool:
    """The value rules, as docs/design.md states them: 64-bit ints, finite floats, valid
    Unicode (keys too), at most 32 levels of nesting."""
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return -INT64 <= value < INT64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return depth <= MAX_DEPTH and all(_rules(k) and _rules(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return depth <= MAX_DEPTH and all(_rules(v, depth + 1) for v in value)
    return False


def judge_line(raw: bytes):
    """The contract's event of one line, or None when the contract refuses it."""
    from pydantic import ValidationError

    from contract.events import EVENT_ADAPTER, upgrade_event

    if len(raw) + 1 > MAX_LINE_BYTES:
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or not _rules(obj):
        return None
    try:
        return EVENT_ADAPTER.validate_json(raw)
    except (ValidationError, ValueError):
        pass
    try:
        return EVENT_ADAPTER.validate_python(upgrade_event(obj))
    except (ValidationError, ValueError, TypeError, KeyError):
        return None


def _first_wins(own: list, strays: set[int]) -> tuple[set[int], list, dict]:
    """First line with a seq wins (strays excluded): (accepted lines, conflicting (line, event)s,
    seq → (winner line, its (prev, next) seqs))."""
    accepted: set[int] = set()
    seen: dict[int, Any] = {}
    conflicts = []
    place: dict[int, tuple[int, tuple]] = {}
    for n, _raw, e in own:
        if n in strays:
            continue
        if e.seq in seen:
            if seen[e.seq] != e:  # the same event, however spelled, is a repeat
                conflicts.append((n, e))
            continue
        seen[e.seq] = e
        accepted.add(n)
    for n, _raw, e in own:
        if n in accepted:
            place[e.seq] = (n, place_of(own, n, accepted, strays))
    return accepted, conflicts, place


def place_of(own: list, n: int, accepted: set[int], strays: set[int]) -> tuple[int, int | None]:
    """(seq of the last accepted line before line n, seq of the next valid line after it)."""
    before = [e.seq for m, _r, e in own if m < n and m in accepted]
    after = [e.seq for m, _r, e in own if m > n and m not in strays]
    return (before[-1] if before else -1, after[0] if after else None)


def _in_place(where: tuple[int, int | None], seq: int) -> bool:
    prev, nxt = where
    return prev < seq and (nxt is None or seq < nxt)


@dataclass
class Expect:
    run_id: str | None
    accepted: set[int]
    """Line numbers the events table must hold for this file, exactly."""
    must_quarantine: set[int]
    duplicates: int
    good_original: set[int]
    """Line numbers holding an unmutated seed line of the file's run (the "good lines")."""


def expected(lines: list[bytes], originals: set[bytes]) -> Expect:
    """What ingest must make of a file (lines without newlines, the last one complete)."""
    judged = []
    for n, raw in enumerate(lines, 1):
        raw = raw.rstrip(b"\r")
        if not raw.strip(b" \t\r"):
            judged.append((n, raw, "blank"))
            continue
        judged.append((n, raw, judge_line(raw)))
    counts: Counter[str] = Counter()
    started: dict[str, int] = {}
    first: dict[str, int] = {}
    for n, _raw, e in judged:
        if e is None or e == "blank":
            continue
        counts[e.run_id] += 1
        first.setdefault(e.run_id, n)
        if e.event == "run_started":
            started.setdefault(e.run_id, n)
    run = min(counts, key=lambda r: (-counts[r], r not in started, started.get(r, 0), first[r])) if counts else None
    own = [(n, raw, e) for n, raw, e in judged if e not in (None, "blank") and e.run_id == run]
    quarantine = {n for n, _raw, e in judged if e != "blank" and (e is None or e.run_id != run)}
    # Seq conflicts (docs/design.md): the first line with a seq keeps it, unless a later one sits in
    # seq order between its neighbours (the run's last accepted line before it, next valid line
    # after it) and the first one does not.
    strays: set[int] = set()
    while True:
        accepted, conflicts, place = _first_wins(own, strays)
        new = {place[e.seq][0] for n, e in conflicts
               if e.seq in place and _in_place(place_of(own, n, accepted, strays), e.seq)
               and not _in_place(place[e.seq][1], e.seq)} - strays
        if not new:
            break
        strays |= new
    kept = {e.seq: e for n, _r, e in own if n in accepted}
    repeats = {n for n, _r, e in own if n not in accepted and n not in strays and kept.get(e.seq) == e}
    dups = len(repeats)
    quarantine |= {n for n, _r, _e in own if n not in accepted} - repeats
    good = {n for n, raw, _e in own if raw in originals}
    return Expect(run, accepted, quarantine, dups, good)


# ------------------------------------------------------------------ checking a warehouse


def _event_key(raw: bytes) -> str | None:
    e = judge_line(raw.rstrip(b"\r"))
    return None if e is None else e.model_dump_json()


@dataclass
class Findings:
    files: int = 0
    lines: int = 0
    tracebacks: list[str] = field(default_factory=list)
    lost_good: int = 0
    bad_accepted: int = 0
    unaccounted: int = 0
    unreadable: list[str] = field(default_factory=list)
    exit_mismatch: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.tracebacks or self.lost_good or self.bad_accepted or self.unaccounted
                    or self.unreadable or self.exit_mismatch)

    def merge(self, other: Findings) -> None:
        for k, v in vars(other).items():
            setattr(self, k, getattr(self, k) + v)

    def summary(self) -> str:
        return (f"{self.files} files, {self.lines} lines: {len(self.tracebacks)} tracebacks, "
                f"{self.lost_good} lost good lines, {self.bad_accepted} bad lines accepted, "
                f"{self.unaccounted} lines neither accepted nor quarantined, "
                f"{len(self.exit_mismatch)} exit codes not matching the warehouse, "
                f"warehouse unreadable {len(self.unreadable)} times")


def cli(*args: str) -> tuple[int, str]:
    """The CLI in this process: (exit code, output); a traceback is raised, not caught."""
    from trialhouse.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            return (exc.code if isinstance(exc.code, int) else 1), out.getvalue() + err.getvalue()
    return 0, out.getvalue() + err.getvalue()


def readable(wh: Path) -> str | None:
    """None when summarize, tables and sql all read the warehouse; else what failed."""
    for args in (["summarize", "--warehouse", str(wh)], ["tables", "--warehouse", str(wh)],
                 ["sql", "--warehouse", str(wh), "SELECT count(*) FROM events"]):
        try:
            code, out = cli(*args)
        except Exception:  # noqa: BLE001  a traceback is the finding
            return f"{args[0]}: {traceback.format_exc(limit=3)}"
        refused = code == 2 and out.startswith("trialhouse: ") and out.count("\n") == 1
        if code != 0 and not (args[0] == "summarize" and refused):  # a clear one-line refusal reads fine
            return f"{args[0]} exited {code}: {out[-500:]}"
    return None


def ingest_and_check(files: list[tuple[Path, list[bytes], set[bytes]]], wh: Path, *, use_cli: bool) -> Findings:
    """Ingest the files (each ``<dir>/events.jsonl``) in one call and judge each."""
    import duckdb

    from ingest.api import IngestError, ingest_paths

    f = Findings(files=len(files), lines=sum(len(x[1]) for x in files))
    paths = [p.parent for p, _l, _o in files]
    try:
        if use_cli:
            code, out = cli("ingest", *map(str, paths), "--warehouse", str(wh))
        else:
            code, out = 0, ""
            try:
                ingest_paths(paths, wh, allow_quarantine=True)
            except IngestError as exc:
                code, out = exc.exit_code, str(exc)
    except Exception:  # noqa: BLE001  the finding is the traceback
        f.tracebacks.append(traceback.format_exc())
        return f
    con = duckdb.connect()
    try:
        root = str(wh.with_name(wh.stem + ".parquet")).replace("'", "''")
        ev_rows = con.execute(
            f"SELECT source_file, line FROM read_parquet('{root}/events/*/*.parquet', hive_partitioning=true)"  # noqa: S608
        ).fetchall() if list(Path(wh.with_name(wh.stem + ".parquet"), "events").glob("*/*.parquet")) else []
        q_rows = con.execute(
            f"SELECT source_file, line, reason FROM read_parquet('{root}/quarantine/*/*.parquet', hive_partitioning=true)"  # noqa: S608
        ).fetchall()
    finally:
        con.close()
    events_by: dict[str, Counter[int]] = {}
    for src, line in ev_rows:
        events_by.setdefault(src, Counter())[line] += 1
    quar_by: dict[str, dict[int, str]] = {}
    for src, line, reason in q_rows:
        if line is not None:
            quar_by.setdefault(src, {})[line] = reason
    # A row without a line (an event orphaned by a quarantined line, say) is a quarantine too:
    # the CLI's exit code must say so.
    any_quarantine = bool(q_rows)
    claimed: set[str] = set()
    for path, lines, originals in files:
        want = expected(lines, originals)
        if want.run_id in claimed:
            # A run is one events file: a later file of a run already written in this ingest keeps
            # nothing of it, every line quarantined with the reason (``ingest.load.ingest_run``).
            blank = {n for n, raw in enumerate(lines, 1) if not raw.rstrip(b"\r").strip(b" \t\r")}
            want = Expect(want.run_id, set(), set(range(1, len(lines) + 1)) - blank, 0, set())
        elif want.run_id is not None:
            claimed.add(want.run_id)
        got = events_by.get(str(path), Counter())
        if any(c > 1 for c in got.values()):
            f.bad_accepted += sum(c - 1 for c in got.values() if c > 1)
        got_lines = set(got)
        # A good line is lost when no stored line holds its event (the same values, however spelled).
        kept = {_event_key(lines[n - 1]) for n in got_lines if 0 < n <= len(lines)}
        lost = {n for n in want.good_original if _event_key(lines[n - 1]) not in kept}
        extra = got_lines - want.accepted
        missing = want.accepted - got_lines
        quarantined = quar_by.get(str(path), {})
        unaccounted = {n for n in want.must_quarantine if n not in quarantined and n not in got_lines}
        any_quarantine |= bool(quarantined)
        f.lost_good += len(lost)
        f.bad_accepted += len(extra)
        f.unaccounted += len(unaccounted) + len(missing - lost)
        if lost or extra or unaccounted or missing:
            f.details.append(f"{path}: lost {sorted(lost)[:5]} extra {sorted(extra)[:5]} "
                             f"missing {sorted(missing)[:5]} unaccounted {sorted(unaccounted)[:5]}")
    if use_cli and code not in (0, 2) or (use_cli and (code == 0) == any_quarantine):
        f.exit_mismatch.append(f"exit {code} with quarantine={any_quarantine}: {out[-300:]}")
    if (why := readable(wh)) is not None:
        f.unreadable.append(why)
    return f


def fuzz_events(n_files: int, seed: int, work: Path, per_call: int = 20, every_cli: int = 5,
                progress: bool = False) -> Findings:
    """Ingest ``n_files`` mutated files, ``per_call`` per ingest (every ``every_cli``-th call through
    the CLI), into one warehouse; judge every file."""
    rng = random.Random(seed)
    seeds = seed_files()
    originals = {x for s in seeds for x in s}
    total = Findings()
    wh = work / "wh" / "trialhouse.duckdb"
    shutil.rmtree(work, ignore_errors=True)
    for call, start in enumerate(range(0, n_files, per_call)):
        batch = []
        for i in range(start, min(start + per_call, n_files)):
            run_id = f"fz-{seed}-{i:04d}"
            lines = make_event_file(rng, run_id, seeds)
            path = work / "in" / f"f{i:04d}" / "events.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"".join(x + b"\n" for x in lines))
            mine = {_with_run(x, run_id) for x in originals if x.startswith(b"{")} | originals
            batch.append((path, lines, mine))
        total.merge(ingest_and_check(batch, wh, use_cli=call % every_cli == 0))
        if progress:
            print(f"  {min(start + per_call, n_files)}/{n_files} files: {total.summary()}", flush=True)
    return total


# ------------------------------------------------------------------ manifests


def tiny_corpus(root: Path) -> Path:
    kit = _load("fuzz_runner_kit", REPO / "tests" / "runner" / "conftest.py")
    return kit.make_corpus(root)


def mutate_manifest(doc: dict, rng: random.Random) -> str:
    """A manifest's JSON text with a few random mutations (values of every kind, deletions,
    duplicated items, long ids, raw non-finite numbers)."""
    d = copy.deepcopy(doc)
    raw: list[tuple[str, str]] = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        kind = rng.randrange(8)
        paths = _paths(d)
        if not paths:
            break
        if kind == 6:  # a number the run uses (timeouts, repetitions, prices) made hostile
            nums = [p for p in paths if isinstance(_at(d, p), int | float) and not isinstance(_at(d, p), bool)]
            if nums:
                hole = f"\u2063{len(raw)}\u2063"
                _set_at(d, rng.choice(nums), hole)
                raw.append((json.dumps(hole), rng.choice(["Infinity", "1e999", "NaN", "-1", "1e308", "0",
                                                          "9223372036854775808", "86401", "2147483648"])))
            continue
        if kind == 7:  # every id at (or past) a length limit
            n = rng.choice([100, 101, 127, 128, 129, 300])
            for p in paths:
                if p[-1] == "id":
                    _set_at(d, p, f"{len(p)}" + rng.choice("abc") * (n - 1))
            continue
        path = rng.choice(paths)
        parent: Any = d
        for p in path[:-1]:
            parent = parent[p]
        key = path[-1]
        if kind <= 2:
            hole = f"\u2063{len(raw)}\u2063"
            parent[key] = hole
            raw.append((json.dumps(hole), hostile_text(rng)))
        elif kind == 3 and isinstance(parent, dict):
            del parent[key]
        elif kind == 4:
            for coll in ("cases", "variants"):
                items = d.get(coll)
                if isinstance(items, list) and items and rng.random() < 0.5:
                    item = copy.deepcopy(rng.choice(items))
                    if isinstance(item, dict) and rng.random() < 0.7:
                        item["id"] = rng.choice(["x" * rng.choice([100, 101, 128, 129]), "dup", "ok-2"])
                    items.append(item)
        else:
            parent[key] = rng.choice(["a\x00b", "\udc80", "p" * 10_000, "x/" * 3000, "../escape", "/abs", ""])
    ascii_ = rng.random() < 0.5
    text = json.dumps(d, ensure_ascii=ascii_)
    for hole, value in raw:
        text = text.replace(json.dumps(json.loads(hole), ensure_ascii=ascii_), value, 1)
    return text


def _at(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set_at(doc: Any, path: tuple, value: Any) -> None:
    _at(doc, path[:-1])[path[-1]] = value


def manifest_usable(m: Any) -> str | None:
    """Why an accepted manifest could not be run (None when it can): every value the run writes
    into its events must meet the event contract, every derived file name must fit."""
    from contract.envelope import utc_now
    from contract.run_events import CaseInfo, CriterionInfo, RunStarted, VariantInfo
    from contract.trial_events import TrialStarted
    from runner.manifest import config_id

    try:
        variants = [VariantInfo(variant=v.id, config_id=config_id(v, {}), model=v.model, harness=v.harness,
                                   harness_version=v.harness_version, settings=v.settings, agent_kind=v.agent.kind)
                    for v in m.variants]
        cases = [CaseInfo(case_id=c.id, initial_commit="0" * 40,
                             criteria=[CriterionInfo(criterion_id=k.id, layer=k.layer,
                                                        kind="command" if k.command else "judge") for k in c.criteria])
                 for c in m.cases]
        json.dumps(m.model_dump(mode="json"), allow_nan=False)
        for v in variants:
            json.dumps(v.model_dump(mode="json"), allow_nan=False)
        for c in cases:
            for v in variants:
                name = f"{c.case_id}__{v.variant}__r{m.repetitions}"
                if len(name.encode()) > 255:
                    return f"trial directory name of {len(name.encode())} bytes"
                TrialStarted(run_id="r", seq=0, ts=utc_now(), trial_id=name, case_id=c.case_id,
                                variant=v.variant, config_id=v.config_id, repetition=m.repetitions, seed=1,
                                workspace="/w", order=0)
        RunStarted(run_id="r", seq=0, ts=utc_now(), manifest_id=m.id, manifest_path="m.json",
                      manifest_sha256="0" * 64, engine_version="x", os="x", python="x", git_version="x",
                      repository="r", initial_commit="0" * 40, initial_tree="0" * 40,
                      repetitions=m.repetitions, max_attempts=m.max_attempts, timeout_seconds=m.timeout_seconds,
                      max_cost_usd=m.max_cost_usd, variants=variants, cases=cases)
    except Exception as exc:  # noqa: BLE001  any failure is the finding
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    return None


@dataclass
class ManifestFindings:
    manifests: int = 0
    accepted: int = 0
    tracebacks: list[str] = field(default_factory=list)
    unlocated: list[str] = field(default_factory=list)
    accepted_unusable: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not (self.tracebacks or self.unlocated or self.accepted_unusable)

    def summary(self) -> str:
        return (f"{self.manifests} manifests ({self.accepted} accepted): {len(self.tracebacks)} tracebacks, "
                f"{len(self.unlocated)} problems without a location, "
                f"{len(self.accepted_unusable)} accepted but not runnable")


def fuzz_manifests(n: int, seed: int, work: Path, every_cli: int = 10) -> ManifestFindings:
    """Validate ``n`` mutated copies of the tiny corpus manifest (every ``every_cli``-th via the CLI)."""
    from runner.validate import validate_manifest

    rng = random.Random(seed)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    base = tiny_corpus(work / "corpus")
    doc = json.loads(base.read_text())
    out = ManifestFindings(manifests=n)
    for i in range(n):
        path = base.with_name(f"m{i:04d}.json")
        path.write_text(mutate_manifest(doc, rng), encoding="utf-8", errors="surrogatepass")
        try:
            if i % every_cli == 0:
                code, text = cli("validate", "--manifest", str(path))
                if code not in (0, 2):
                    out.tracebacks.append(f"{path.name}: exit {code}: {text[-300:]}")
                continue
            report = validate_manifest(path)
        except Exception:  # noqa: BLE001  the finding
            out.tracebacks.append(f"{path.name}: {traceback.format_exc(limit=4)}")
            continue
        out.unlocated += [f"{path.name}: {p}" for p in report.problems if not p.location or not p.message]
        if report.ok:
            out.accepted += 1
            if (why := manifest_usable(report.manifest)) is not None:
                out.accepted_unusable.append(f"{path.name}: {why}")
    return out
