"""Bad input never crashes and never loses good data: a seeded share of ``make fuzz``, plus
hypothesis-driven mutations of the same kinds (``fuzzlib`` says what is mutated and judged)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_spec = importlib.util.spec_from_file_location("fuzzlib", Path(__file__).with_name("fuzzlib.py"))
fuzzlib = importlib.util.module_from_spec(_spec)
sys.modules["fuzzlib"] = fuzzlib  # dataclasses look their module up
_spec.loader.exec_module(fuzzlib)

SEEDS = fuzzlib.seed_files()
_N = itertools.count()


def _explain(f) -> str:
    return "\n".join([f.summary(), *f.details[:10], *f.tracebacks[:3], *f.unreadable[:3], *f.exit_mismatch[:3]])


@pytest.mark.slow
def test_seeded_event_files(tmp_path):
    """60 mutated files, 20 per ingest (a few through the CLI), judged line by line against the
    oracle; ``make fuzz`` runs 520 (kept small here for make test's time budget)."""
    found = fuzzlib.fuzz_events(60, seed=7, work=tmp_path / "events")
    assert found.files == 60 and found.lines > 12_000
    assert found.ok(), _explain(found)


def test_seeded_manifests(tmp_path):
    found = fuzzlib.fuzz_manifests(150, seed=7, work=tmp_path / "manifests")
    assert found.accepted > 5, "the mutations must leave some manifests valid, or nothing is tested"
    assert found.ok(), "\n".join([found.summary(), *found.tracebacks[:3], *found.accepted_unusable[:5]])


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("prop")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_any_mutated_file_keeps_every_good_line_and_quarantines_every_bad_one(shared, rng):
    """For any file: every line that ingests alone ingests in the mix (a foreign, duplicate or bad
    line only quarantines itself), every other line is quarantined with a reason, no traceback,
    and the warehouse stays readable."""
    # Everything an example does comes from ``rng`` and it gets a warehouse of its own, so a
    # failure replays exactly (hypothesis reports it as found, not as "flaky").
    i = next(_N)
    run_id = f"prop-{rng.getrandbits(32):08x}"
    use_cli = rng.random() < 0.2
    lines = fuzzlib.make_event_file(rng, run_id, SEEDS)
    path = shared / "in" / f"p{i:04d}" / "events.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    originals = {fuzzlib._with_run(x, run_id) for s in SEEDS for x in s}
    found = fuzzlib.ingest_and_check([(path, lines, originals)], shared / "wh" / f"w{i:04d}.duckdb",
                                     use_cli=use_cli)
    assert found.ok(), _explain(found)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rng=st.randoms(use_true_random=False))
def test_validate_never_raises_and_accepts_only_runnable_manifests(tmp_path_factory, rng):
    from runner.validate import validate_manifest

    base = _tiny(tmp_path_factory)
    path = base.with_name(f"h{next(_N)}.json")
    path.write_text(fuzzlib.mutate_manifest(json.loads(base.read_text()), rng), encoding="utf-8",
                    errors="surrogatepass")
    report = validate_manifest(path)
    assert all(p.location and p.message for p in report.problems)
    if report.ok:
        assert fuzzlib.manifest_usable(report.manifest) is None


_TINY: list[Path] = []


def _tiny(factory) -> Path:
    if not _TINY:
        _TINY.append(fuzzlib.tiny_corpus(factory.mktemp("tiny") / "corpus"))
    return _TINY[0]
