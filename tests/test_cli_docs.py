"""Every command is documented: in the README, and with an example in its own help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer

from trialhouse.cli import app

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_there_are_commands() -> None:
    assert {"validate", "run", "ingest", "summarize", "compare", "report"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_the_readme(name: str) -> None:
    assert f"trialhouse {name}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", COMMANDS)
def test_command_help_ends_with_an_example(name: str) -> None:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    assert "Example:" in (command.help or ""), f"{name}: help has no 'Example:' line"


def test_python_dash_m_works() -> None:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "summarize" in proc.stdout
