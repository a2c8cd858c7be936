"""A unified diff as files, hunks and highlighted lines, with patch-inspection flags on them.

Parsed with unidiff (as the runner's patch inspection parses it), highlighted with
Pygments one hunk at a time (a lexer by file name; plain text when none fits). Every
token's text is escaped here before it is wrapped in a span, so the result is safe HTML.
A flag names a file and, for the kinds that quote what was added (``broad handler added:
…``, ``skip added: …``), the lines: those lines get an anchor and the flag links to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath

from markupsafe import Markup, escape

MAX_LINES = 4000
"""Diff lines drawn per patch; the rest of the files are listed with their counts only."""


@dataclass
class Line:
    kind: str  # add | del | ctx | note
    old: int | None
    new: int | None
    html: Markup
    text: str = ""
    anchor: str | None = None
    flags: list[str] = field(default_factory=list)


@dataclass
class FileDiff:
    index: int
    path: str
    status: str  # added | removed | modified | renamed | binary
    added: int
    removed: int
    hunks: list[list[Line]] = field(default_factory=list)
    shown: bool = True
    flags: list[dict] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"f{self.index}"


@dataclass
class Diff:
    files: list[FileDiff]
    error: str | None = None
    raw: str | None = None
    hidden_lines: int = 0
    prefix: str = "d"

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)


def _lexer(path: str):
    return _lexer_for(PurePosixPath(path).name if "." not in PurePosixPath(path).name
                      else "x" + PurePosixPath(path).suffix)


@cache
def _lexer_for(name: str):
    """A lexer per file suffix (Pygments tries every lexer's patterns on each lookup)."""
    from pygments.lexers import get_lexer_for_filename
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    try:
        return get_lexer_for_filename(name, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def highlight_lines(text: str, lexer) -> list[Markup]:
    """One escaped, highlighted HTML string per line of ``text`` (its newlines dropped)."""
    from pygments.token import STANDARD_TYPES

    lines: list[list[str]] = [[]]
    for ttype, value in lexer.get_tokens(text):
        css = STANDARD_TYPES.get(ttype) or STANDARD_TYPES.get(ttype.parent, "")
        for i, part in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if part:
                esc = str(escape(part))
                lines[-1].append(f'<span class="{css}">{esc}</span>' if css else esc)
    if lines and not lines[-1] and text.endswith("\n"):
        lines.pop()
    return [Markup("".join(parts)) for parts in lines]


def _strip(name: str | None) -> str | None:
    if name is None or name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def _status(pf) -> str:
    if pf.is_binary_file:
        return "binary"
    if pf.is_added_file:
        return "added"
    if pf.is_removed_file:
        return "removed"
    if getattr(pf, "is_rename", False):
        return "renamed"
    return "modified"


def _hunk(hunk, lexer, anchor: str) -> list[Line]:
    values = [line.value.rstrip("\n") for line in hunk]
    html = highlight_lines("\n".join(values) + "\n", lexer) if values else []
    html += [Markup("")] * (len(values) - len(html))
    out = []
    for line, h in zip(hunk, html, strict=False):
        kind = "add" if line.is_added else "del" if line.is_removed else "ctx"
        if line.line_type == "\\":
            kind = "note"
        ref = f"{anchor}-n{line.target_line_no}" if line.is_added else None
        out.append(Line(kind, line.source_line_no, line.target_line_no, h, line.value.rstrip("\n"), ref))
    return out


def cut_at_file(text: str) -> str:
    """A truncated patch up to its last whole file (never a half file)."""
    at = text.rfind("\ndiff --git ")
    return text[: at + 1] if at > 0 else text


def parse(text: str, max_lines: int = MAX_LINES, prefix: str = "d") -> Diff:
    """Files with their hunks highlighted, up to ``max_lines`` diff lines in all."""
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch = PatchSet(text)
    except (UnidiffParseError, ValueError) as exc:
        return Diff([], error=f"not a unified diff ({exc}); shown as text", raw=text[:200_000], prefix=prefix)
    files, budget, hidden = [], max_lines, 0
    for i, pf in enumerate(patch):
        path = _strip(pf.target_file) if not pf.is_removed_file else _strip(pf.source_file)
        fd = FileDiff(i, path or pf.path, _status(pf), pf.added, pf.removed)
        size = sum(len(h) for h in pf)
        if size > budget:
            fd.shown = False
            hidden += size
        else:
            budget -= size
            lexer = _lexer(fd.path)
            fd.hunks = [_hunk(h, lexer, f"{prefix}{fd.anchor}") for h in pf]
        files.append(fd)
    return Diff(files, hidden_lines=hidden, prefix=prefix)


def attach_flags(diff: Diff, flags: list[dict]) -> list[dict]:
    """Each flag with ``target`` (the anchor of its lines or of its file, None when the diff
    does not show it); the matching lines are marked with the flag kind."""
    out = []
    for flag in flags:
        target = None
        quoted = _quoted(flag.get("detail") or "")
        for fd in diff.files:
            if fd.path != flag.get("path"):
                continue
            fd.flags.append(flag)
            target = f"{diff.prefix}{fd.anchor}"
            for hunk in fd.hunks:
                for line in hunk:
                    if line.kind == "add" and any(q and line.text.strip().startswith(q) for q in quoted):
                        line.flags.append(flag["kind"])
                        if target == f"{diff.prefix}{fd.anchor}" and line.anchor:
                            target = line.anchor
        out.append({**flag, "target": target})
    return out


def _quoted(detail: str) -> list[str]:
    """What a flag's detail quotes from the added lines (``…added: a; b``)."""
    _head, sep, rest = detail.partition("added: ")
    return [q.strip() for q in rest.split("; ")] if sep else []
