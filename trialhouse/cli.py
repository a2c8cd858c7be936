"""Entry point: registers every command module on the root group and maps errors."""

from __future__ import annotations

import sys

import click

# Registering a module = importing it; each adds its commands to ``app``.
from trialhouse import (  # noqa: E402,F401,I001
    cmd_analysis,
    cmd_budget,
    cmd_judges,
    cmd_regrade,
    cmd_report,
    cmd_rollout,
    cmd_runner,
    cmd_stats,
    cmd_view,
    cmd_warehouse,
)
from trialhouse.app import app


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; expected errors become one line on stderr and a non-zero exit.

    Always ends with ``SystemExit``. Usage errors (click's, exit 2) print one line,
    ``trialhouse: <message> (see '<command> -h')``; no arguments at all prints the help
    on stdout and exits 2. Library errors marked ``user_error`` print
    ``trialhouse: <message>`` and exit with their ``exit_code``. Ctrl-C exits 130.
    """
    try:
        rc = app.main(args=argv, prog_name="trialhouse", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help())
        sys.exit(exc.exit_code)
    except click.ClickException as exc:  # UsageError, BadParameter, ...
        message = " ".join(exc.format_message().split())  # one line (Choice lists span several)
        ctx = getattr(exc, "ctx", None)
        if ctx is not None:
            message = f"{message.removesuffix('.')} (see '{ctx.command_path} -h')"
        print(f"trialhouse: {message}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        print("trialhouse: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        # DuckDB handles SIGINT during a query itself and raises this instead of KeyboardInterrupt.
        if type(exc) is RuntimeError and str(exc) == "Query interrupted":
            print("trialhouse: interrupted", file=sys.stderr)
            sys.exit(130)
        if getattr(type(exc), "user_error", False):
            print(f"trialhouse: {exc}", file=sys.stderr)
            sys.exit(getattr(exc, "exit_code", 2))
        raise
    # standalone_mode=False returns the exit code of ``ctx.exit(n)`` / ``click.exceptions.Exit``
    # (e.g. --help, validate's exit 2), or the command's return value (None) on success.
    sys.exit(rc if isinstance(rc, int) else 0)
