"""Helpers for tests on real harness recordings (fixtures/real/<harness>-<version>/<scenario>/).

Each scenario directory holds what the real CLI wrote (stdout, stderr, rollout or
trajectory), the gateway's ``model_call`` records of the same run, and ``meta.json``
(version, settings, stage start). ``record_real.py`` rewrites them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

REAL = Path(__file__).parent / "fixtures" / "real"
TOOLS_BIN = Path(__file__).resolve().parents[3] / "tools" / "bin"


@dataclass
class Recording:
    dir: Path
    meta: dict

    @property
    def harness(self) -> str:
        return self.meta["harness"]

    @property
    def version(self) -> str:
        return self.meta["version"]

    @property
    def started(self) -> datetime:
        return datetime.fromisoformat(self.meta["stage_started_at"])

    @property
    def stdout(self) -> Path:
        return self.dir / "stdout"

    @property
    def stderr(self) -> Path:
        return self.dir / "stderr"

    @property
    def stream(self) -> bool:
        return self.meta["settings"].get("output_format") == "stream-json"

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in (self.dir / "model_calls.jsonl").read_text().splitlines() if line]

    def gateway_tokens(self) -> tuple[int, int, int]:
        """Token sums over the gateway's successful calls (what the provider reported)."""
        ok = [c for c in self.calls() if c["status"] == 200]
        return tuple(sum(c[k] or 0 for c in ok) for k in ("input_tokens", "output_tokens", "cache_read_tokens"))

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.stdout.read_text().splitlines() if line.strip()]

    def __repr__(self) -> str:
        return f"{self.harness}-{self.version}/{self.dir.name}"


def recordings(harness: str, scenario: str) -> list[Recording]:
    found = [Recording(d, json.loads((d / "meta.json").read_text()))
             for d in sorted(REAL.glob(f"{harness}-*/{scenario}")) if (d / "meta.json").is_file()]
    assert found, f"no recording of {harness}/{scenario}: run tests/runner/agents/record_real.py"
    return found


def params(harness: str, scenario: str):
    return pytest.mark.parametrize("rec", recordings(harness, scenario), ids=repr)


def tool(name: str) -> str:
    """A pinned CLI from ``make tools``; a missing one is a setup failure, never a skip."""
    path = TOOLS_BIN / name
    assert path.exists(), f"{path} is missing: run `make tools` (make test does it first)"
    return str(path)
