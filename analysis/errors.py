"""Expected errors of the analysis package: the CLI prints them as one line, no traceback."""

from __future__ import annotations


class AnalysisError(Exception):
    """Base class; exit_code is what the CLI exits with."""

    user_error = True
    exit_code = 2
