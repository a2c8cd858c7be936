"""Expected errors of the warehouse package: the CLI prints them as one line, no traceback."""

from __future__ import annotations


class WarehouseError(Exception):
    """Base class; exit_code is what the CLI exits with."""

    user_error = True
    exit_code = 2


def duckdb_message(exc: Exception) -> str:
    """The text of an error DuckDB raised. DuckDB quotes part of a value in some messages, cut
    at a byte count; cut inside a character, the message is not UTF-8 and the Python binding
    raises ``UnicodeDecodeError`` over the message's bytes instead of its own error
    (duckdb-python#93), so those bytes are decoded here, the cut character replaced."""
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        return exc.object.decode("utf-8", errors="replace")
    return str(exc)
