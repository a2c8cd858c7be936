"""Entry point: registers every command module on the root app and maps errors."""

from __future__ import annotations

import sys

import click

from trialhouse.app import app

# Registering a module = importing it; each adds its commands to ``app``.
from trialhouse import cmd_runner, cmd_warehouse, cmd_analysis, cmd_report, cmd_demo  # noqa: E402,F401,I001


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; expected errors become one line on stderr and a non-zero exit."""
    try:
        app(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        print("trialhouse: interrupted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("trialhouse: interrupted", file=sys.stderr)
        sys.exit(130)
    except click.exceptions.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # noqa: BLE001 - mapped below or re-raised
        if getattr(type(exc), "user_error", False):
            print(f"trialhouse: {exc}", file=sys.stderr)
            sys.exit(getattr(exc, "exit_code", 2))
        raise
    sys.exit(0)
