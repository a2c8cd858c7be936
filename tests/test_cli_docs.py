"""Every command is documented: in the README, and with an example in its own help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from trialhouse.cli import app

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = sorted(app.commands)


def _help(name: str) -> str:
    """The command's -h output, as a user sees it."""
    command = app.commands[name]
    with click.Context(app, info_name="trialhouse") as parent:
        with click.Context(command, info_name=name, parent=parent) as ctx:
            return command.get_help(ctx)


def _choices(command: str, param: str) -> tuple[str, ...]:
    (p,) = [p for p in app.commands[command].params if p.name == param]
    assert isinstance(p.type, click.Choice), (command, param, p.type)
    return tuple(p.type.choices)


def test_there_are_commands() -> None:
    assert {"validate", "run", "ingest", "summarize", "compare", "report"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_is_in_the_readme(name: str) -> None:
    assert f"trialhouse {name}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", COMMANDS)
def test_command_help_ends_with_an_example(name: str) -> None:
    command = app.commands[name]
    assert "Example:" in (command.help or ""), f"{name}: help has no 'Example:' line"
    # printed in one piece (not re-wrapped), so it can be copied from -h
    example = [ln.strip() for ln in _help(name).splitlines() if ln.strip().startswith("Example:")]
    assert len(example) == 1 and example[0].startswith(f"Example: trialhouse {name}"), example


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help(name: str) -> None:
    missing = [p.name for p in app.commands[name].params
               if isinstance(p, click.Option) and not p.help]
    assert not missing, f"{name}: options without help: {missing}"


def test_cli_choices_match_the_library() -> None:
    """The CLI spells out its choices (so parsing imports no library code); they must not drift."""
    from typing import get_args

    from analysis.filters import Holdout
    from analysis.pareto import X_CHOICES
    from ingest.annotations import KINDS
    from ingest.api import FORMATS

    assert _choices("ingest", "format") == tuple(FORMATS)
    assert _choices("annotate", "kind") == tuple(KINDS)
    assert _choices("pareto", "x") == tuple(X_CHOICES)
    for name in ("summarize", "compare", "consistency", "pareto", "matrix", "failures",
                 "familiarity", "latency", "trajectory"):
        assert _choices(name, "holdout") == get_args(Holdout)


def test_python_dash_m_works() -> None:
    proc = subprocess.run([sys.executable, "-m", "trialhouse", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "summarize" in proc.stdout


def test_the_readme_shows_commands_a_new_user_can_type() -> None:
    """Issue 31, item 8: the tour says how `trialhouse` gets on the PATH before its first
    bare `trialhouse …`, and no sample output carries a maintainer's absolute path (the demo's
    sample once printed `wrote /work/main/demo/corpus/manifest.json`)."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    activation = readme.index("source .venv/bin/activate")
    first_bare = min(m.start() for m in re.finditer(r"^\$ trialhouse ", readme, flags=re.M))
    assert activation < first_bare
    samples = "\n".join(re.findall(r"^```text\n(.*?)^```$", readme, flags=re.M | re.S))
    assert samples and not re.findall(r"(?<![\w.])/(?:work|tmp|root|home|Users)/\S+", samples)
