"""The viewer's expected error: one line on stderr and a non-zero exit (``trialhouse.cli``)."""

from __future__ import annotations


class ViewerError(Exception):
    """A problem the user can fix (a refused host, a reviews file that cannot be written)."""

    user_error = True
    exit_code = 2
