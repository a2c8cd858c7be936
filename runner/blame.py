"""The denominator rule, in one place: whose fault a failure the runner met is.

``infra_error`` leaves a trial out of every rate, so it must mean that the cause was out
of the agent's reach: the runner, the machine, the provider (a missing binary, a gateway
upstream error, a lost worker). What the runner cannot process because of what the agent
left behind — a name no file system or parser takes, a change too long or too large, a
file that cannot be read — is the agent's: the trial is ``agent_output_error``, a
failure that stays in every denominator (docs/design.md, "The denominator rule").
An agent that fails could otherwise turn its failures into abstentions.
"""

from __future__ import annotations

import errno

from runner.flags import UnreadablePatch
from runner.outcome import Stop

AGENT_OUTPUT_ERRORS = (OSError, UnicodeError, UnreadablePatch)
"""What processing the agent's files may raise that ``agent_output_problem`` may charge to it."""

AGENT_OUTPUT_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.EILSEQ, errno.ELOOP, errno.EFBIG,
                                 errno.EISDIR, errno.ENOTDIR, errno.EACCES, errno.EPERM})
"""Errors a file operation on the agent's files fails with because of those files: a
name or path too long, a name the file system refuses, a link loop, a file too large, a
file turned into a directory or the reverse, a mode that forbids the runner reading it."""


def agent_output_problem(exc: BaseException) -> str | None:
    """Why ``exc``, raised while the runner processed what the agent left, is charged to
    the agent (None: it is the runner's or the machine's, an ``infra_error``)."""
    if isinstance(exc, UnreadablePatch):
        return str(exc)
    if isinstance(exc, UnicodeError):
        return f"a name or text the agent left is not valid UTF-8 ({exc})"
    if isinstance(exc, OSError) and exc.errno in AGENT_OUTPUT_ERRNOS:
        where = f": {exc.filename!r}"[:300] if exc.filename else ""
        return f"a file the agent left cannot be processed ({errno.errorcode.get(exc.errno or 0, exc.errno)}{where})"
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        return agent_output_problem(cause)
    return None


def agent_output_reason(exc: BaseException, what: str) -> str | None:
    """The ``agent_output_error`` reason for ``exc`` raised while ``what``, or None."""
    problem = agent_output_problem(exc)
    return None if problem is None else f"agent output error while {what}: {problem}"


def charged(exc: BaseException, what: str) -> Stop | None:
    """The agent's failure (an ungraded ``agent_output_error`` stop) when ``exc`` came from
    what it left, else None."""
    reason = agent_output_reason(exc, what)
    return None if reason is None else Stop("agent_output_error", reason, grade=False)
