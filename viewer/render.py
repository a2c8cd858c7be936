"""Pages as HTML: Jinja2 templates with autoescape on for every template, so every string
from the warehouse or the evidence is escaped; the only markup that is not escaped here is
the highlighted diff, whose token text ``viewer.diff`` escapes itself. Links are relative
to the page (``viewer.site.relative``), so served pages and bundle files are the same HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2

from analysis import formatting as fmt
from viewer import site


@dataclass(frozen=True)
class Context:
    """What every page is rendered with besides its own data."""

    mode: str  # server | bundle
    warehouse: str
    version: str
    review_file: str | None = None
    token: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _ts(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return fmt.DASH if value is None else str(value)


def _offset(value: Any) -> str:
    return fmt.DASH if value is None else f"+{value:,.1f}s" if value >= 0 else f"{value:,.1f}s"


def _tokens(row: dict[str, Any], prefix: str = "") -> str:
    i, o = row.get(f"{prefix}input_tokens"), row.get(f"{prefix}output_tokens")
    if i is None and o is None:
        return "unknown"
    return f"{fmt.count(i)} in / {fmt.count(o)} out"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("viewer", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(n=fmt.count, num=fmt.number, rate=fmt.rate, usd=fmt.usd, secs=fmt.secs, ts=_ts,
                       offset=_offset, tokens=_tokens, ci=lambda r: fmt.interval(r.get("ci_low"), r.get("ci_high")))
    env.globals.update(site=site, DASH=fmt.DASH)
    return env


@cache
def stylesheet() -> str:
    """The viewer's CSS and Pygments' highlighting classes (package-local: nothing fetched)."""
    from pygments.formatters import HtmlFormatter

    own = resources.files("viewer").joinpath("static", "viewer.css").read_text("utf-8")
    return own + "\n/* Pygments (default style) */\n" + HtmlFormatter(style="default").get_style_defs(".hl")


@cache
def script() -> str:
    return resources.files("viewer").joinpath("static", "viewer.js").read_text("utf-8")


def page(template: str, path: str, ctx: Context, **data: Any) -> str:
    """Render ``template`` as the page at ``path`` (the site-relative path links start from)."""

    def url(target: str) -> str:
        return site.relative(path, target)

    return environment().get_template(template).render(url=url, ctx=ctx, here=path, **data)
