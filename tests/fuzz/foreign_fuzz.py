"""Fuzzing of the foreign importers (Harbor, Terminal-Bench, SWE-bench, mini-swe-agent,
Inspect's JSON log): each case copies one fixture, mutates one value of one of its JSON
files (or truncates the file), and ingests it into a fresh warehouse. A clear error
(``IngestError``) or a quarantined record is a fine outcome; a traceback is a finding.

Used by ``tests/ingest/formats/test_formats_foreign_fuzz.py`` (a few cases per format) and
``make fuzz`` (``tests/fuzz/fuzz.py --foreign N``).
"""

from __future__ import annotations

import json
import random
import shutil
import traceback
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "ingest" / "formats" / "fixtures"
SOURCES = [  # (format, fixture path)
    ("harbor", "harbor/2026-01-10__12-00-00"),
    ("terminal-bench", "terminal_bench/2025-06-01__10-00-00"),
    ("swebench", "swebench/20250901_agentx_model-a"),
    ("mini-swe-agent", "mini_swe_agent/run1"),
    ("inspect", "inspect/mixed.json"),
]
ODD = [None, True, False, 0, -1, -(2**63) - 1, 2**64, 1e308, -1e308, 1.5, "", " ", "x", "\x00",
       "\ud800", "9999-12-31T23:00:00-14:00", "0001-01-01T00:30:00+01:00", "2026-03-01T24:00:00Z",
       "not a date", "NaN", "Infinity", [], {}, [None], {"": None}, "a" * 5000, "../../etc/passwd",
       "x=y/z*?[", "\n", "1e999"]


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    yield path


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def mutate(root: Path, rng: random.Random) -> str:
    """Mutate one JSON file under ``root`` (a file or a folder); returns what was done."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*.json") if p.is_file())
    target = rng.choice(files)
    data = target.read_bytes()
    try:
        doc = json.loads(data)
    except ValueError:  # mutated into invalid JSON already
        doc = None
    if doc is None or rng.random() < 0.1:
        target.write_bytes(data[: rng.randrange(max(1, len(data)))])
        return f"{target.name}: truncated"
    paths = [p for p in _leaves(doc) if p]
    if not paths:
        return f"{target.name}: no values"
    where = rng.choice(paths)
    value = rng.choice(ODD)
    if rng.random() < 0.2 and isinstance(where[-1], str):  # a key removed instead
        parent = doc
        for p in where[:-1]:
            parent = parent[p]
        del parent[where[-1]]
        what = "removed"
    else:
        _set(doc, where, value)
        what = f"= {value!r:.40}"
    target.write_bytes(json.dumps(doc).encode("utf-8", errors="surrogatepass"))
    return f"{target.name}: {'/'.join(map(str, where))} {what}"


def one_case(fmt: str, fixture: str, seed: int, workdir: Path) -> str | None:
    """One mutated copy ingested; the finding (a traceback), or None."""
    from ingest.api import ingest_paths
    from ingest.errors import IngestError

    rng = random.Random(seed)
    case = workdir / f"{fmt}-{seed}"
    shutil.rmtree(case, ignore_errors=True)
    case.mkdir(parents=True)
    src = FIXTURES / fixture
    dst = case / src.name
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)
    done = [mutate(dst, rng) for _ in range(rng.choice([1, 1, 2, 3]))]
    try:
        ingest_paths([dst], case / "wh" / "w.duckdb", format=fmt, allow_quarantine=True)
    except IngestError:
        return None
    except Exception:
        return f"{fmt} seed {seed} ({'; '.join(done)}):\n{traceback.format_exc()}"
    return None


def fuzz(cases: int, seed: int, workdir: Path) -> list[str]:
    """``cases`` mutated copies, spread over the formats; every traceback found."""
    found = []
    for k in range(cases):
        fmt, fixture = SOURCES[k % len(SOURCES)]
        if (finding := one_case(fmt, fixture, seed * 10_000 + k, workdir)) is not None:
            found.append(finding)
    return found
