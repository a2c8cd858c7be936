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


def print_view(view: View) -> None:
    """A view in the terminal: its lines, its tables laid out to fit the terminal's width
    (``trialhouse.fit``: piped, whole rows), then the lines after and the notes."""
    from trialhouse.fit import draw

    con = console()
    for line in view.lines:
        con.print(text(line))
    for table in view.tables:
        for part in draw(table, con.width, text):
            con.print(part)
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


QUARANTINE_SHOWN = 5
"""Quarantined lines an import prints (then the count and the SQL that lists them all)."""


def _quarantine_lines(result: Any, warehouse: Any) -> tuple[list[dict], list[str]]:
    """The first quarantined lines of an import (file, line, reason) and the lines that say
    how many there are and how to list them all."""
    if not result.quarantined:
        return [], []
    from ingest.api import quarantine_sample

    sample = [{"file": f, "line": n, "reason": r}
              for f, n, r in quarantine_sample(warehouse, result, QUARANTINE_SHOWN)]
    ids = ", ".join(f"'{b.ingest_batch_id}'" for b in result.batches
                    if b.quarantined and b.ingest_batch_id)
    first = "" if len(sample) == result.quarantined else f"; the first {len(sample)}"
    lines = [f"quarantined {result.quarantined:,} line(s){first}:"]
    lines += [f"  {q['file']}:{q['line'] if q['line'] is not None else '?'}: {q['reason']}"
              for q in sample]
    # a command line printed for the user to run, never executed here; ids are our batch ids
    query = ("SELECT source_file, line, reason FROM quarantine "  # noqa: S608
             f"WHERE ingest_batch_id IN ({ids}) ORDER BY 1, 2")
    lines.append(f'all of them: trialhouse sql -w {warehouse} "{query}"')
    return sample, lines


def print_ingest(result: Any, as_json: bool, warehouse: Any = None) -> None:
    """What an import wrote (``ingest.api.IngestResult``): per batch its run, format, rows
    per table and quarantined lines, then the notes and the totals, and the first
    quarantined lines with their reasons (``warehouse`` given); or its JSON form."""
    sample, qlines = _quarantine_lines(result, warehouse) if warehouse is not None else ([], [])
    if as_json:
        echo_json({**result.to_dict(), "quarantine_sample": sample})
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
           f"{total.get('events', 0):,} events, {result.quarantined:,} quarantined"] + qlines))


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


IDENTIFYING = frozenset({"name", "kind", "variant", "configuration", "config_id", "run_id",
                         "trial_id", "case_id", "task_id", "category", "assigned_by", "universe",
                         "metric", "model", "harness", "reviewer", "source_format"})
"""Columns of a query result that name its rows (kept whole when the terminal is narrow)."""


def frame_table(df: Any, limit: int, caption: str = "") -> Any:
    """A query result's first ``limit`` rows as an ``analysis.document.Table``: numbers for
    people, the first column and the id-like ones (``IDENTIFYING``) naming the rows."""
    from analysis.document import Column, Table

    cols = [Column(c, numeric=df.schema[c].is_numeric(),
                   identifying=i == 0 or c in IDENTIFYING) for i, c in enumerate(df.columns)]
    return Table(caption, cols, [[_human(v) for v in row] for row in df.head(limit).iter_rows()])


def print_frame(df: Any, limit: int, caption: str = "", caption_piped: bool = False) -> None:
    """A query result: a table that fits the terminal (``trialhouse.fit``: wrapped, in
    blocks, or one record per row), tab-separated values with a header row when stdout is
    not a terminal."""
    con = console()
    if not con.is_terminal:  # piped (TTY_COMPATIBLE=1 or FORCE_COLOR make it a terminal)
        if caption and caption_piped:  # several results in one output name each
            click.echo(caption)
        click.echo("\t".join(df.columns))
        for row in df.iter_rows():
            click.echo("\t".join(_tsv(v) for v in row))
        return
    from trialhouse.fit import draw

    for part in draw(frame_table(df, limit, caption), con.width, text):
        con.print(part)
    more = f" (showing {limit})" if df.height > limit else ""
    con.print(text(f"{df.height:,} row(s){more}"))
