"""docs/runner.md, "Your first manifest", executed (issue 31, item 2): in a new directory,
each ``sh`` block runs as written and each ``$`` line of a ``text`` block runs with the
real CLI, its output holding every line the document shows (ids, commits, times and this
machine's directory aside; ``…`` stands for lines left out). From an empty git repository
through ``trialhouse init``, the blanks filled, validate, run, ingest and report, to a
report whose outcomes are what the graders intend."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # make test-e2e: kept out of make test's 15 minutes (docs/design.md, 'Test tiers')

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Your first manifest"
HOME = "/home/you/work"
"""The directory the document's outputs were made in, as it shows it."""


def walkthrough() -> list[tuple[str, str]]:
    """The section's fenced blocks in order, as (language, body)."""
    text = (ROOT / "docs" / "runner.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return re.findall(r"^```(\w+)\n(.*?)^```$", text[start:end], flags=re.M | re.S)


def normal(line: str, here: Path) -> str:
    for place in {str(here.resolve()), str(here)}:
        line = line.replace(place, HOME)
    line = re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{6}", "<run>", line)
    line = re.sub(r"\b[0-9a-f]{7,64}\b", "<hex>", line)
    line = re.sub(r"wall_seconds=\d+", "wall_seconds=<n>", line)
    return " ".join(line.split())


def commands(body: str) -> list[tuple[str, list[str]]]:
    """A ``text`` block as (command, the output lines shown after it)."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            out[-1][1].append(line)
    return out


@pytest.mark.slow
def test_the_first_manifest_walkthrough_runs_as_written(tmp_path: Path) -> None:
    blocks = walkthrough()
    assert [lang for lang, _ in blocks].count("text") >= 2 and len(blocks) >= 7, blocks
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "COLUMNS": "100", "NO_COLOR": "1", "GIT_AUTHOR_NAME": "You", "GIT_COMMITTER_NAME": "You",
           "GIT_AUTHOR_EMAIL": "you@example.com", "GIT_COMMITTER_EMAIL": "you@example.com"}
    shown_commands = []
    for lang, body in blocks:
        if lang == "sh":
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, f"{body[:200]}\n{done.stderr[-2000:]}"
            continue
        for command, expected in commands(body):
            shown_commands.append(command)
            done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=900)
            printed = done.stdout + done.stderr
            assert "Traceback" not in printed, printed
            got = {normal(line, tmp_path) for line in printed.splitlines()}
            for line in expected:
                if line.strip() != "…":
                    assert normal(line, tmp_path) in got, f"$ {command}\nmissing: {line}\ngot:\n{printed}"
    assert [c.split()[1] for c in shown_commands if c.startswith("trialhouse ")] == [
        "init", "validate", "validate", "run", "ingest", "report"]
    # The report, checked against what the graders intend, not against the document.
    report = json.loads((tmp_path / "reports" / "first" / "report.json").read_text())
    rows = {r["variant"]: (r["solved"], r["valid"]) for r in report["summary"]["rows"]}
    assert rows == {"my-agent": (4, 4), "my-agent-alt": (2, 4), "null": (0, 4), "reference": (4, 4)}
    assert (tmp_path / "reports" / "first" / "report.html").stat().st_size > 10_000
    started = json.loads((tmp_path / "runs" / "first" / "events.jsonl").open().readline())
    assert started["event"] == "run_started" and started["stages"] == ["build"]
    assert not (tmp_path / "shop" / "shop-trialhouse").exists()
