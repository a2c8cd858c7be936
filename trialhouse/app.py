"""The root Typer app and the conventions every command module follows.

Command modules (``trialhouse/cmd_*.py``) import only typer/rich at module level and
import library code inside the command body, so ``trialhouse --help`` stays fast.

Expected errors: any exception whose class sets ``user_error = True`` (each package's
``errors.py``) is printed as one line, ``trialhouse: <message>``, and exits with its
``exit_code`` (default 2), never with a traceback.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="trialhouse",
    help="Reproducible benchmark and analytics pipeline for AI coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "TRIALHOUSE"},
)

DEFAULT_WAREHOUSE = Path("demo/warehouse/trialhouse.duckdb")

WarehouseOpt = Annotated[
    Path,
    typer.Option(
        "--warehouse",
        "-w",
        envvar="TRIALHOUSE_WAREHOUSE",
        help="DuckDB warehouse file (env TRIALHOUSE_WAREHOUSE).",
        show_default=True,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


class CommandError(Exception):
    """Raised by command modules for usage problems detected in the CLI layer."""

    user_error = True

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def echo_json(obj: object) -> None:
    import json

    typer.echo(json.dumps(obj, indent=2, sort_keys=False, default=str, allow_nan=False))


def no_color() -> bool:
    return bool(os.environ.get("NO_COLOR"))


@app.command()
def version() -> None:
    """Print the trialhouse version.

    Example: trialhouse version
    """
    from trialhouse import __version__

    typer.echo(__version__)


@app.callback()
def _root() -> None:
    """Reproducible benchmark and analytics pipeline for AI coding agents."""
