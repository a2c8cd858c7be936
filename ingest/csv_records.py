"""Reading a CSV file a bounded record at a time, each problem kept with its line (docs/security.md,
"Review files and CSV exports").

Review and annotation files come from people and spreadsheets, so one bad record must not
stop the import or exhaust memory: a field past ``csv.field_size_limit`` (128 KiB), a record
past ``RECORD_MAX`` bytes (one line, or the lines of a quoted field; never held whole: the
rest of an over-long line is skipped as it is read), text that is not UTF-8, or a line the
``csv`` module cannot parse is a ``Record`` with its problem and its first line number, for
the importer to quarantine; the records after it are read as usual. A file of more than
``RECORDS_MAX`` records is refused (``TooManyRecords``) before the importer writes anything.
"""

from __future__ import annotations

import codecs
import csv
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

MiB = 1024 * 1024
RECORD_MAX = MiB
"""Bytes one CSV record (or one JSONL line) may have."""
EXCERPT_MAX = 4096
"""Characters of a bad record kept as its quarantined raw text."""
RECORDS_MAX = 50_000
"""Records one file may have."""
TEXT_MAX = 64 * MiB
"""Bytes of records one file may have (over-long records skipped unread do not count).

Every record becomes a row or a quarantined row held until the file is written, so these two
bounds are the import's memory bound. The rows are held as Arrow chunks
(``warehouse.schema.TableRows``): 306 MB peak at the worst measured (50,000 reviews with
1.2 KB notes; 299 MB for 500 with 130 KB notes; tests/ingest/test_ingest_review_csv.py), under
the 500 MB every hostile file keeps to. Held as dicts it was 466 MB here and 503 MB on CI.
A file past either is refused before anything is written: split it."""


class TooManyRecords(ValueError):
    """The file has more than ``RECORDS_MAX`` records or ``TEXT_MAX`` bytes of them."""

    def __init__(self, line: int) -> None:
        super().__init__(f"more than {RECORDS_MAX:,} records or {TEXT_MAX // MiB} MiB of them (by line {line:,}); "
                         "split the file and import the parts")


@dataclass(frozen=True)
class Record:
    """One record: its first line, its fields by header name (None when it could not be read)
    and why not, and its text as read (at most ``EXCERPT_MAX`` characters)."""

    line: int
    fields: dict[str, str] | None
    problem: str | None
    raw: str


class _LineProblem(Exception):
    """Raised by ``_Lines`` inside the ``csv`` reader: this record is over-long or not UTF-8."""


class _Lines:
    """The file's lines as text for ``csv.reader``, counting lines and the bytes of the record
    being read; a record past ``RECORD_MAX`` or a line that is not UTF-8 raises ``_LineProblem``
    (the iterator goes on after it, and so does the ``csv`` reader)."""

    def __init__(self, f: BinaryIO, limit: int = RECORD_MAX) -> None:
        self.f, self.limit = f, limit
        self.line = 0
        self.start = 1
        self.used = 0
        self.total = 0
        self.raw: list[str] = []
        self.kept = 0

    def new_record(self) -> None:
        self.start, self.used, self.raw, self.kept = self.line + 1, 0, [], 0

    def excerpt(self) -> str:
        return "".join(self.raw)[:EXCERPT_MAX]

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        data = self.f.readline(self.limit - self.used + 1)
        if not data:
            raise StopIteration
        self.line += 1
        self.used += len(data)
        if self.used > self.limit:
            self._keep(data[:EXCERPT_MAX].decode("utf-8", errors="replace"))
            while not data.endswith(b"\n") and (data := self.f.readline(MiB)):
                pass  # the rest of the line, read and dropped
            raise _LineProblem(f"a record longer than the {self.limit:,} bytes a record may have; not parsed")
        if self.line == 1 and data.startswith(codecs.BOM_UTF8):
            data = data[len(codecs.BOM_UTF8):]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            self._keep(data[:EXCERPT_MAX].decode("utf-8", errors="replace"))
            raise _LineProblem(f"not UTF-8 text (byte {e.start + 1} of line {self.line})") from None
        self.total += len(data)
        if self.total > TEXT_MAX:
            raise TooManyRecords(self.line)
        self._keep(text)
        return text

    def _keep(self, text: str) -> None:
        if self.kept < EXCERPT_MAX:
            self.raw.append(text[:EXCERPT_MAX - self.kept])
            self.kept += len(self.raw[-1])


def _next(reader: Iterator[list[str]], lines: _Lines) -> tuple[list[str] | None, str | None] | None:
    """The next record's fields or its problem; None at the end of the file."""
    lines.new_record()
    try:
        return next(reader), None
    except StopIteration:
        return None
    except _LineProblem as e:
        return None, str(e)
    except csv.Error as e:
        return None, f"not readable CSV ({e})"


def csv_records(f: BinaryIO, limit: int = RECORD_MAX) -> tuple[list[str], Iterator[Record]]:
    """The header (stripped names; [] for an empty file) and the records after it of the CSV
    file open as ``f``; blank lines are skipped. A header that cannot be read raises
    ``ValueError`` with the reason."""
    lines = _Lines(f, limit)
    reader = csv.reader(lines)
    got = _next(reader, lines)
    if got is None:
        return [], iter(())
    header, problem = got
    if header is None:
        raise ValueError(f"line 1 (the header): {problem}")
    names = [h.strip() for h in header]

    def records() -> Iterator[Record]:
        n = 0
        while (got := _next(reader, lines)) is not None:
            row, problem = got
            if row == []:
                continue
            if (n := n + 1) > RECORDS_MAX:
                raise TooManyRecords(lines.start)
            fields = None if row is None else {k: v.strip() for k, v in zip(names, row, strict=False)}
            yield Record(lines.start, fields, problem, lines.excerpt().rstrip("\r\n"))

    return names, records()


def jsonl_records(f: BinaryIO, limit: int = RECORD_MAX) -> Iterator[tuple[int, str | None, str | None, str]]:
    """``(line, text, problem, excerpt)`` of every non-blank line of a JSON-lines file open as
    ``f``: a line past ``limit`` bytes or not UTF-8 has text None and the problem (it is never
    held whole)."""
    lines = _Lines(f, limit)
    n = 0
    while True:
        lines.new_record()
        try:
            text, problem = next(lines), None
        except StopIteration:
            return
        except _LineProblem as e:
            text, problem = None, str(e)
        if text is not None and not text.strip():
            continue
        if (n := n + 1) > RECORDS_MAX:
            raise TooManyRecords(lines.start)
        yield lines.start, text, problem, lines.excerpt()
