"""Terminal tables that fit: an ``analysis.document.Table`` laid out for a terminal width.

Columns have priorities: the identifying ones (configuration, universe, slice, metric,
run…) come first and are never shrunk below their longest value while the widest other
column still fits beside them (past that the widest is trimmed, down to ``IDENT_FLOOR``, its
long values cut in the middle, ``abc…xyz``, and listed in full under the table); the others
follow in their order. The layout, first that fits:

1. every column at its natural width;
2. one table with the text columns wrapped (never below their header or ``WRAP_MIN``);
3. blocks: the identifying columns repeated, the others spread over at most
   ``MAX_BLOCKS`` tables in order (a numeric column never wraps, a header never wraps);
4. one record per row: each column's name and value on a line of its own.

Pure layout (``plan``) apart from drawing with Rich (``draw``); widths are terminal cells
(``rich.cells.cell_len``), so ``—``, ``τ²`` and ``…`` count as one. docs/design.md, "Terminal
tables that fit".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WRAP_MIN = 16
"""Narrowest a wrapping text column gets (or its header, if longer)."""
MAX_BLOCKS = 4
"""More blocks than this and one record per row reads better."""
ELLIPSIS = "…"


CAP = 48
"""Widest an identifying column gets: a longer value is cut in the middle (and listed)."""
IDENT_FLOOR = 24
"""Narrowest an identifying column is trimmed to (or its header, or its longest value)."""
MIN_ROOM = 10
"""Fewest cells left beside the identifying columns for another column; less: records."""


def _ident_widths(table: Any, ids: list[int], natural: list[int], width: int) -> dict[int, int]:
    """The identifying columns' widths: natural up to ``CAP``; when together they leave less
    than ``MIN_ROOM`` beside them, the widest is trimmed first, never below ``IDENT_FLOOR``
    (or its header)."""
    from rich.cells import cell_len

    widths = {i: min(natural[i], CAP) for i in ids}
    floor = {i: min(widths[i], max(cell_len(table.columns[i].name), IDENT_FLOOR)) for i in ids}
    excess = sum(widths.values()) - (width - 3 * len(ids) - 1 - (MIN_ROOM + 3))
    while excess > 0:
        wide = [i for i in ids if widths[i] > floor[i]]
        if not wide:
            break
        top = max(widths[i] for i in wide)
        for i in wide:
            if widths[i] == top and excess > 0:
                widths[i] -= 1
                excess -= 1
    return widths


def shorten(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` cells, keeping both ends (an id's suffix,
    ``[aa72aaa0]``, is what ``--baseline`` takes)."""
    from rich.cells import cell_len, set_cell_size

    if cell_len(text) <= limit:
        return text
    tail = (limit - 1) // 2
    head = limit - 1 - tail
    rev = set_cell_size(text[::-1], tail)[::-1] if tail else ""
    return set_cell_size(text, head) + ELLIPSIS + rev


@dataclass
class Layout:
    """How one table is shown at a width: ``blocks`` of column indexes with their widths,
    or ``records``; ``cells`` with identifying values cut to fit; the full forms cut."""

    kind: str  # "table" | "blocks" | "records"
    blocks: list[list[tuple[int, int]]] = field(default_factory=list)
    cells: list[list[str]] = field(default_factory=list)
    shortened: list[str] = field(default_factory=list)


def _natural(table: Any, cells: list[list[str]]) -> list[int]:
    from rich.cells import cell_len

    return [max([cell_len(c.name), *(max((cell_len(x) for x in text.split("\n")), default=0)
                                     for text in (r[i] for r in cells))])
            for i, c in enumerate(table.columns)]


def _minimum(table: Any, natural: list[int]) -> list[int]:
    """Narrowest each column may be: a number never wraps, a text wraps down to WRAP_MIN
    (never below its header)."""
    from rich.cells import cell_len

    return [n if c.numeric or c.identifying else min(n, max(cell_len(c.name), WRAP_MIN))
            for c, n in zip(table.columns, natural, strict=True)]


def _span(widths: list[int]) -> int:
    """A boxed table's width: each column has a cell of padding each side and a rule."""
    return sum(widths) + 3 * len(widths) + 1


def _grow(cols: list[int], widths: dict[int, int], natural: list[int], room: int) -> None:
    """Give ``room`` spare cells to the columns below their natural width, in order."""
    for i in cols:
        extra = min(room, natural[i] - widths[i])
        if extra > 0:
            widths[i] += extra
            room -= extra


def plan(table: Any, width: int) -> Layout:
    """The layout of ``table`` at ``width`` cells (see the module docstring)."""
    from analysis.document import cell_text

    cells = [[cell_text(c) for c in row] for row in table.rows]
    natural = _natural(table, cells)
    n = len(table.columns)
    if _span(natural) <= width:
        return Layout("table", [[(i, natural[i]) for i in range(n)]], cells)
    ids = [i for i, c in enumerate(table.columns) if c.identifying]
    rest = [i for i in range(n) if i not in ids]
    ident = _ident_widths(table, ids, natural, width)
    room = width - _span(list(ident.values())) - 3
    if rest and room < MIN_ROOM:
        return _records(table, cells, width)
    least = _minimum(table, natural)
    blocks = _pack(ids, rest, ident, least, width)
    if blocks is None:
        return _records(table, cells, width)
    out: list[list[tuple[int, int]]] = []
    for cols in blocks:  # identifying columns keep one width in every block
        widths = {**ident, **{i: least[i] for i in cols}}
        _grow([*cols, *ids] if len(blocks) == 1 else cols, widths, natural,
              width - _span(list(widths.values())))
        out.append([(i, widths[i]) for i in (*ids, *cols)])
    first = dict(out[0])
    shortened, cut = _cut(cells, {i: first[i] for i in ids})
    return Layout("table" if len(out) == 1 else "blocks", out, cut, shortened)


def _pack(ids: list[int], rest: list[int], ident: dict[int, int], least: list[int],
          width: int) -> list[list[int]] | None:
    """The non-identifying columns spread over blocks beside the identifying ones, in
    order; None when one column does not fit beside them or the blocks are too many."""
    base = _span(list(ident.values()))
    blocks: list[list[int]] = [[]]
    used = base
    for i in rest:
        need = least[i] + 3
        if base + need > width:
            return None
        if used + need > width:
            blocks.append([])
            used = base
        blocks[-1].append(i)
        used += need
    if len(blocks) > MAX_BLOCKS or (not ids and len(blocks) > 1):
        return None
    return blocks


def _cut(cells: list[list[str]], widths: dict[int, int]) -> tuple[list[str], list[list[str]]]:
    """Identifying values longer than their column, cut in the middle; the full forms."""
    from rich.cells import cell_len

    full: list[str] = []
    out = []
    for row in cells:
        new = list(row)
        for i, w in widths.items():
            if cell_len(row[i]) > w:
                new[i] = shorten(row[i], w)
                if row[i] not in full:
                    full.append(row[i])
        out.append(new)
    return full, out


def _records(table: Any, cells: list[list[str]], width: int) -> Layout:
    """One record per row; a value wider than its line is cut (identifying) or wrapped."""
    from rich.cells import cell_len

    label = max(cell_len(c.name) for c in table.columns)
    room = max(8, width - label - 1)
    ids = {i: room for i, c in enumerate(table.columns) if c.identifying}
    shortened, cut = _cut(cells, ids)
    return Layout("records", [], cut, shortened)


def draw(table: Any, width: int, text: Any) -> list[Any]:
    """Rich renderables for ``table`` at ``width`` (``text`` makes a Rich Text of a string,
    SIMULATED highlighted), then the names shown cut, in full."""
    layout = plan(table, width)
    out: list[Any] = (_draw_records(table, layout, width, text) if layout.kind == "records"
                      else _draw_blocks(table, layout, text))
    if layout.shortened:
        out.append(text("Shortened above, in full:"))
        out += [text(f"  {full}") for full in layout.shortened]
    return out


def _draw_blocks(table: Any, layout: Layout, text: Any) -> list[Any]:
    from rich.table import Table

    out = []
    total = len(layout.blocks)
    for k, block in enumerate(layout.blocks, 1):
        title = table.caption + (f" [{k}/{total}]" if total > 1 else "")
        t = Table(title=text(title) if title else None, title_justify="left", show_lines=False)
        for i, w in block:
            col = table.columns[i]
            t.add_column(text(col.name), justify=col.align, width=w, overflow="fold",
                         no_wrap=col.numeric or col.identifying)
        for row in layout.cells:
            t.add_row(*[text(row[i]) for i, _ in block])
        out.append(t)
    return out


def _draw_records(table: Any, layout: Layout, width: int, text: Any) -> list[Any]:
    from rich.table import Table

    out: list[Any] = [text(table.caption)] if table.caption else []
    label = max(len(c.name) for c in table.columns)
    for k, row in enumerate(layout.cells, 1):
        head = f"── {k} of {len(layout.cells)} "
        out.append(text(head + "─" * max(0, min(width, 60) - len(head))))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=label, no_wrap=True)
        grid.add_column(overflow="fold")
        for col, value in zip(table.columns, row, strict=True):
            grid.add_row(text(col.name), text(value))
        out.append(grid)
    if not layout.cells:
        out.append(text("(no rows)"))
    return out
