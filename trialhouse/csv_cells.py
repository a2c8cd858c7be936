"""CSV cells a spreadsheet will not evaluate (docs/security.md, "CSV exports").

Warehouse text comes from agents, graders and foreign files: a task id, a note or a reason
that starts with ``=`` (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``) becomes a live formula
when the CSV is opened in a spreadsheet. As the OWASP "CSV Injection" guidance describes,
every text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
single quote in front (the spreadsheet then shows the text); the CSV writer quotes a cell
holding the separator or a quote, so no cell can start another. A text that is exactly a
number (``-0.5``, ``+3``, ``1e-05``) is left as it is: a spreadsheet reads it as that number,
which is no formula. ``--raw`` turns this off for a reader that wants the bytes as stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import IO, TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import polars as pl

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_RE = r"^[=+\-@\t\r]"
_NUMBER_RE = r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$"
_NUMBER = re.compile(_NUMBER_RE)
_META_KEY = "trialhouse.csv_raw"


def neutral(value: Any) -> Any:
    """``value`` with a ``'`` before it when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _NUMBER.match(value):
        return "'" + value
    return value


def write_rows(out: IO[str], rows: Iterable[Sequence[Any]]) -> None:
    """``rows`` as CSV lines ending in ``\\n`` on ``out``, a cell holding a carriage return
    quoted like one holding a newline (Python's ``csv`` before 3.12 quotes only the characters
    of its line terminator, and a bare CR splits the row in a CSV reader)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    for row in rows:
        buf.seek(0)
        buf.truncate()
        w.writerow(row)
        out.write(buf.getvalue()[:-2] + "\n")


def neutral_frame(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` with every text cell (and column name) passed through ``neutral``."""
    import polars as pl

    exprs = []
    for name, dtype in df.schema.items():
        col = pl.col(name)
        if dtype == pl.String:
            risky = col.str.contains(_FORMULA_RE) & ~col.str.contains(_NUMBER_RE)
            col = pl.when(risky).then(pl.lit("'") + col).otherwise(col)
        exprs.append(col.alias(neutral(name)))
    return df.select(exprs) if exprs else df


def raw_requested() -> bool:
    """Whether the running command was given ``--raw`` (``raw_option``)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx and ctx.find_root().meta.get(_META_KEY))


def _remember(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.find_root().meta[_META_KEY] = True


raw_option = click.option(
    "--raw", is_flag=True, expose_value=False, callback=_remember,
    help="With --csv: cells exactly as stored (by default a text cell starting with =, +, -, @, "
         "tab or CR gets a ' in front so a spreadsheet does not run it; docs/security.md).")
