"""Shared fixtures for ingest tests: the event generator and a fresh warehouse path."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("ingest_eventgen", Path(__file__).with_name("eventgen.py"))
eventgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eventgen)

GOLDEN = Path(__file__).with_name("golden")


@pytest.fixture
def gen():
    return eventgen


@pytest.fixture
def wh(tmp_path: Path) -> Path:
    return tmp_path / "wh" / "trialhouse.duckdb"


@pytest.fixture
def golden() -> Path:
    return GOLDEN


@pytest.fixture(params=["recent", "folded"])
def trial_ids_mode(request, monkeypatch):
    """Resolved trial ids kept as strings (recent) or, in this process, all folded into digests."""
    if request.param == "folded":
        from ingest.seen import TrialIds

        monkeypatch.setattr(TrialIds, "RECENT", 1)
    return request.param
