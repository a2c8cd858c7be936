"""The one renderer every analysis command uses: a table in a terminal, ``--json`` or ``--csv``.

A command parses its options, calls one library function and hands the result here with
the view that lays it out (``trialhouse.views``). ``--json`` prints the result's JSON form
(keys in docs/analysis.md), ``--csv`` its flat records, and otherwise the view's tables go
to Rich. Every text reaches Rich as a ``Text`` object, never as a markup string, so a
configuration id such as ``[aa72aaa0]`` or a note with brackets prints as written; the
word SIMULATED is highlighted wherever it appears.

rich and the library are imported inside the functions (start-up stays click-only).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import click

from trialhouse.app import echo_json, no_color

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

_SIM = re.compile(r"(?<![\w-])SIMULATED(?![\w-])")


@dataclass
class View:
    """What a terminal shows of one result: lines, tables (``analysis.document.Table``),
    then notes (warnings)."""

    lines: list[str] = field(default_factory=list)
    tables: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)  # lines printed after the tables


def output_format(json_out: bool, csv_out: bool) -> str:
    if json_out and csv_out:
        raise click.UsageError("choose one of --json and --csv")
    return "json" if json_out else "csv" if csv_out else "table"


def console() -> Console:
    from rich.console import Console

    con = Console(no_color=no_color(), highlight=False, emoji=False)
    if not con.is_terminal:  # piped: whole rows (no wrapping), not rich's 80 columns
        con.width = 10_000
    return con


def text(value: Any) -> Text:
    """A plain string as Rich text: no markup parsed, SIMULATED highlighted."""
    from rich.text import Text

    t = Text(str(value))
    t.highlight_regex(_SIM, "bold yellow")
    return t


def rich_table(table: Any) -> Any:
    """An ``analysis.document.Table`` as a Rich table."""
    from rich.table import Table

    from analysis.document import cell_text

    t = Table(title=text(table.caption) if table.caption else None, title_justify="left",
              show_lines=False)
    cells = [[cell_text(c) for c in row] for row in table.rows]
    for i, col in enumerate(table.columns):
        # Names keep up to 40 characters on a line before they wrap; numbers never wrap.
        longest = max((len(r[i]) for r in cells), default=0)
        t.add_column(text(col.name), justify=col.align, overflow="fold",
                     no_wrap=col.numeric, min_width=None if col.numeric else min(longest, 40))
    for row in cells:
        t.add_row(*[text(c) for c in row])
    return t


def print_view(view: View) -> None:
    con = console()
    for line in view.lines:
        con.print(text(line))
    for table in view.tables:
        con.print(rich_table(table))
    for line in view.after:
        con.print(text(line))
    for note in view.notes:
        from rich.text import Text

        con.print(Text("note: ", style="yellow") + text(note))


def write_csv(records: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> None:
    """The records as CSV on stdout, every text cell a spreadsheet would evaluate neutralised
    (``trialhouse.csv_cells``) unless the command was given ``--raw``."""
    from trialhouse.csv_cells import neutral, raw_requested, write_rows

    cell = (lambda v: v) if raw_requested() else neutral
    rows = list(records)
    cols = list(columns or (rows[0].keys() if rows else []))
    write_rows(sys.stdout, [[cell(k) for k in cols],
                            *(["" if r.get(k) is None else cell(r.get(k)) for k in cols] for r in rows)])


def emit(result: Any, view: Callable[[Any], View], fmt: str,
         head: Mapping[str, Any] | None = None) -> None:
    """Print ``result`` as ``fmt``: json (``head`` then ``result.as_dict()``), csv
    (``result.records()``) or the terminal ``view``."""
    if fmt == "json":
        echo_json({**(head or {}), **result.as_dict()})
    elif fmt == "csv":
        write_csv(result.records())
    else:
        print_view(view(result))


def print_ingest(result: Any, as_json: bool) -> None:
    """What an import wrote (``ingest.api.IngestResult``): per batch its run, format, rows
    per table and quarantined lines, then the notes and the totals; or its JSON form."""
    if as_json:
        echo_json(result.to_dict())
        return
    from analysis.document import Table, columns

    rows = [[b.run_id, b.source_format,
             ", ".join(f"{k} {v:,}" for k, v in b.rows.items() if v) or "-",
             f"{b.quarantined:,}", "unchanged" if b.unchanged else (b.ingest_batch_id or "")]
            for b in result.batches]
    total = result.rows
    print_view(View(
        tables=[Table("ingest", columns(["run_id", "format", "rows per table", "quarantined",
                                         "batch"], [False, False, False, True, False]), rows)],
        after=[f"note: {b.run_id}: {note}" for b in result.batches for note in b.notes]
        + [f"total: {len(result.batches)} batch(es), {total.get('trials', 0):,} trials, "
           f"{total.get('events', 0):,} events, {result.quarantined:,} quarantined"]))


def _human(v: Any) -> str:
    """A SQL value for a person: thousands separators, no scientific notation, ∅ for null."""
    if v is None:
        return "∅"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, Decimal) and v == v.to_integral_value():
        v = int(v)  # DuckDB's sum of integers is a HUGEINT
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float | Decimal):
        v = float(v)
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        return f"{v:,.6f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else f"{v:,.0f}"
    return str(v)


def _tsv(v: Any) -> str:
    if v is None:
        return ""
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def print_frame(df: Any, limit: int) -> None:
    """A query result: a table in a terminal (one record per block when the columns do not
    fit), tab-separated values with a header row when stdout is not a terminal."""
    con = console()
    if not con.is_terminal:  # piped (TTY_COMPATIBLE=1 or FORCE_COLOR make it a terminal)
        click.echo("\t".join(df.columns))
        for row in df.iter_rows():
            click.echo("\t".join(_tsv(v) for v in row))
        return
    from rich.table import Table

    shown = df.head(limit)
    cells = [[_human(v) for v in row] for row in shown.iter_rows()]
    widths = [max([len(c), *(min(len(r[i]), 40) for r in cells)])
              for i, c in enumerate(df.columns)]
    if sum(widths) + 3 * len(widths) + 1 <= con.width:
        t = Table(show_lines=False)
        for i, col in enumerate(df.columns):
            numeric = df.schema[col].is_numeric()
            t.add_column(text(col), justify="right" if numeric else "left", no_wrap=numeric,
                         min_width=min(widths[i], 12))
        for r in cells:
            t.add_row(*[text(c) for c in r])
        con.print(t)
    else:  # too wide: one block per record, column names down the left
        name_w = max(len(c) for c in df.columns)
        for n, r in enumerate(cells, 1):
            con.print(text(f"-[ row {n} ]" + "-" * max(0, min(con.width, 60) - 12)))
            for col, v in zip(df.columns, r, strict=True):
                con.print(text(f"{col.ljust(name_w)} │ {v}"))
    more = f" (showing {limit})" if df.height > limit else ""
    con.print(text(f"{df.height:,} row(s){more}"))
