"""The root click group and the conventions every command module follows.

Command modules (``trialhouse/cmd_*.py``) import only click and the standard library at
module level (rich only inside the functions that print tables) and import library code
inside the command body, so start-up stays fast: ``trialhouse summarize --json`` pays
for click, not for rich, pydantic or polars.

Expected errors: any exception whose class sets ``user_error = True`` (each package's
``errors.py``) is printed as one line, ``trialhouse: <message>``, and exits with its
``exit_code`` (default 2), never with a traceback. Usage problems found in the CLI layer
raise ``click.UsageError`` / ``click.BadParameter`` (exit 2, also one line; see
``trialhouse.cli.main``).
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import click

CONTEXT_SETTINGS = {
    "help_option_names": ["-h", "--help"],
    # TRIALHOUSE_<COMMAND>_<PARAM> sets any option, e.g. TRIALHOUSE_SUMMARIZE_HOLDOUT=exclude.
    "auto_envvar_prefix": "TRIALHOUSE",
    "show_default": True,
    "max_content_width": 120,
}


class Command(click.Command):
    """A command whose ``Example:`` paragraph is printed verbatim (not re-wrapped), so it
    can be copied from ``-h`` in one piece."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            # "\b" alone on the line before a paragraph is click's "do not rewrap" marker.
            self.help = re.sub(r"(?m)^([ \t]*)Example:", "\\1\b\n\\1Example:", self.help)


class Group(click.Group):
    """The root group: commands in registration order (help lists them as they are grouped
    in the code: analysis, report, runner, warehouse), not alphabetically."""

    command_class = Command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


class Choice(click.Choice):
    """``click.Choice`` whose error names the choices in words: ``'maybe' must be include,
    exclude or only``."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            *head, last = self.choices
            words = f"{', '.join(head)} or {last}" if head else last
            self.fail(f"{value!r} must be {words}", param, ctx)


@click.group(
    cls=Group,
    name="trialhouse",
    no_args_is_help=True,
    context_settings=CONTEXT_SETTINGS,
)
def app() -> None:
    """Reproducible benchmark and analytics pipeline for AI coding agents."""


DEFAULT_WAREHOUSE = Path("demo/warehouse/trialhouse.duckdb")

# Every option shows its environment variable in --help (explicit or TRIALHOUSE_<CMD>_<PARAM>).
option = functools.partial(click.option, show_envvar=True)

warehouse_option = option(
    "--warehouse",
    "-w",
    type=click.Path(path_type=Path),
    default=DEFAULT_WAREHOUSE,
    envvar="TRIALHOUSE_WAREHOUSE",
    help="DuckDB warehouse file (env TRIALHOUSE_WAREHOUSE).",
)


def json_option(name: str = "json_out"):
    """``--json``; ``name`` is the parameter name (and so the auto env var suffix)."""
    return option("--json", name, is_flag=True, help="Machine-readable JSON on stdout.")


def listed(values: tuple[str, ...]) -> list[str] | None:
    """A repeatable option's values as a list, or None when it was not given."""
    return list(values) or None


class CommandError(Exception):
    """Raised by command modules for problems found in the CLI layer that are not usage
    errors (e.g. a query that returns nothing to show)."""

    user_error = True

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def echo_json(obj: object) -> None:
    import json

    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str, allow_nan=False))


def no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


@app.command()
def version() -> None:
    """Print the trialhouse version.

    Example: trialhouse version
    """
    from contract.files import engine_version

    click.echo(engine_version())
