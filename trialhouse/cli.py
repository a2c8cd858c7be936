"""Entry point: registers every command module on the root app and maps errors."""

from __future__ import annotations

import sys

# Registering a module = importing it; each adds its commands to ``app``.
from trialhouse import cmd_analysis, cmd_report, cmd_runner, cmd_warehouse  # noqa: E402,F401,I001
from trialhouse.app import app


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; expected errors become one line on stderr and a non-zero exit.

    Usage errors are typer's (exit 2). Library errors marked ``user_error`` print
    ``trialhouse: <message>`` and exit with their ``exit_code``. Ctrl-C exits 130.
    """
    try:
        app(args=argv, prog_name="trialhouse")
    except KeyboardInterrupt:
        print("trialhouse: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        if getattr(type(exc), "user_error", False):
            print(f"trialhouse: {exc}", file=sys.stderr)
            sys.exit(getattr(exc, "exit_code", 2))
        raise
