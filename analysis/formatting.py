"""Every display formatter, in one place: the CLI, the report and the charts write numbers alike.

Rules (docs/reports.md): a count always stands beside its percentage (``16/34 (47%)``);
counts and tokens get thousands separators and never scientific notation; unknown is
written as unknown (or ``—`` in a table cell), never as 0; rates are percentages, estimated
probabilities (pass^k) plain numbers; intervals are clipped to the possible range for
display only (JSON keeps the exact statistic). Pure functions of plain values: no Rich,
no HTML, no escaping (each renderer escapes for its own medium).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

DASH = "—"
SIMULATED = "SIMULATED"


def _float(v: Any) -> float | None:
    if v is None:
        return None
    if v == "inf":
        return math.inf
    if v == "-inf":
        return -math.inf
    return float(v)


def count(v: Any) -> str:
    """An integer count with thousands separators: ``12,345``; ``—`` when unknown."""
    if v is None:
        return DASH
    return f"{int(v):,}"


def number(v: Any, digits: int = 1, unknown: str = DASH) -> str:
    """A measured quantity (a median of steps or tokens): ``54,734.5``, ``16``, ``2,596,070``.

    Whole values print without decimals, others with ``digits``; never in scientific
    notation (``2.59607e+06`` is what ``{:g}`` would print).
    """
    f = _float(v)
    if f is None:
        return unknown
    if math.isinf(f):
        return "∞" if f > 0 else "−∞"
    if f == int(f):
        return f"{int(f):,}"
    return f"{f:,.{digits}f}"


def pct(k: Any, n: Any) -> str:
    """``3/4 (75%)``: a count always stands beside its percentage."""
    if n is None or k is None:
        return DASH
    if n == 0:
        return f"{count(k)}/0 (—)"
    return f"{count(k)}/{count(n)} ({100 * k / n:.0f}%)"


def rate(r: Any) -> str:
    """A rate as a percentage with one decimal: ``91.3%``."""
    f = _float(r)
    return DASH if f is None else f"{100 * f:.1f}%"


def interval(lo: Any, hi: Any, *, percent: bool = True, bounds: tuple[float, float] = (0.0, 1.0)
             ) -> str:
    """``80.0–97.0%`` (or ``0.800–0.970``), clipped to ``bounds`` (a rate lies in [0, 1])."""
    a, b = _float(lo), _float(hi)
    if a is None or b is None:
        return DASH
    a, b = max(a, bounds[0]), min(b, bounds[1])
    if percent:
        return f"{100 * a:.1f}–{100 * b:.1f}%"
    return f"{a:.3f}–{b:.3f}"


def usd(v: Any, coverage: Any = None) -> str:
    """``$0.2081``; ``∞ (none accepted)``; ``unknown (cost known for 40% of trials)``."""
    f = _float(v)
    if f is not None and math.isinf(f):
        return "∞ (none accepted)"
    if f is None:
        if coverage is not None:
            return f"unknown (cost known for {100 * float(coverage):.0f}% of trials)"
        return "unknown"
    return f"${f:,.4f}"


def secs(v: Any) -> str:
    """Seconds with one decimal: ``12.3s``."""
    f = _float(v)
    return DASH if f is None else f"{f:,.1f}s"


def when(v: Any) -> str:
    """A point in time to the minute, in UTC: ``2026-11-23 09:15 UTC``; a UTC midnight is
    the date alone (``2026-11-23``). Takes a datetime or an ISO string; ``—`` when unknown."""
    from datetime import UTC, datetime

    if v is None or v == "":
        return DASH
    t = v if isinstance(v, datetime) else datetime.fromisoformat(str(v))
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    if (t.hour, t.minute, t.second, t.microsecond) == (0, 0, 0, 0):
        return t.date().isoformat()
    return t.strftime("%Y-%m-%d %H:%M UTC")


def pval(p: Any) -> str:
    """A p-value: three decimals, ``<0.001`` below that."""
    f = _float(p)
    if f is None:
        return DASH
    return f"{f:.3f}" if f >= 0.001 else "<0.001"


def prob(v: Any) -> str:
    """An estimated probability (pass^k: not a count ratio), so a number, not a percentage."""
    f = _float(v)
    return DASH if f is None else f"{f:.3f}"


MINUS = "−"


def _minus(text: str) -> str:
    """A typographic minus sign (U+2212), as in ``−3.1``, never a hyphen."""
    return text.replace("-", MINUS)


def signed(v: Any, *, unit: str = "", money: bool = False) -> str:
    """A signed difference: rates as percentage points (``+3.0 pp``), ``+1.5s``, ``−$0.0217``."""
    f = _float(v)
    if f is None:
        return DASH
    if money:
        return f"{'+' if f >= 0 else MINUS}${abs(f):,.4f}"
    if unit:
        return _minus(f"{f:+,.1f}") + unit
    return _minus(f"{100 * f:+.1f}") + " pp"


def diff_ci(v: Any, lo: Any, hi: Any) -> str:
    """A difference of rates in points with its interval: ``+3.0 pp (−20.4 to +26.4)``.

    A difference of rates lies in [−1, 1]; a t interval can cross that, so the display
    shows the possible part (JSON keeps the exact interval).
    """
    if v is None:
        return DASH
    span = points_range(lo, hi)
    return signed(v) if span is None else f"{signed(v)} ({span})"


def points_range(lo: Any, hi: Any) -> str | None:
    """An interval of a difference of rates in points, clipped to [−100, +100]:
    ``−3.1 to +7.5``; None when unknown."""
    a, b = _float(lo), _float(hi)
    if a is None or b is None:
        return None
    a, b = max(a, -1.0), min(b, 1.0)
    return f"{_minus(f'{100 * a:+.1f}')} to {_minus(f'{100 * b:+.1f}')}"


def ratio_change(new: Any, old: Any) -> str | None:
    """``−8%``: how much ``new`` differs from ``old`` relative to it; None when undefined."""
    a, b = _float(new), _float(old)
    if a is None or b is None or b == 0 or math.isinf(a) or math.isinf(b):
        return None
    return _minus(f"{100 * (a / b - 1):+.0f}%")


def front_status(role: str | None, on_front: bool | None) -> str:
    """Where a configuration stands on a Pareto front, in words."""
    if role == "baseline":
        return "baseline (reference point, not ranked)"
    if role == "ineligible":
        return "INELIGIBLE (off the front)"
    if on_front is None:
        return "not placed (cost unknown)"
    return "on the front" if on_front else "dominated"


def listing(names: Iterable[str], limit: int = 3) -> str:
    """``a, b, c and 21 more``: long lists of names cut to ``limit`` with a count."""
    items = list(names)
    if not items:
        return DASH
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"


def config_label(variant: str | None, model: str | None, harness: str | None,
                 harness_version: str | None, config_id: str | None = None,
                 simulated: bool | None = False) -> str:
    """A short human name for a configuration; simulated ones say so (``… SIMULATED``)."""
    if variant:
        name = variant
    else:
        parts = [p for p in (model, harness) if p]
        name = " / ".join(parts) or (config_id or "?")[:12]
        if harness_version and harness:
            name += f"@{harness_version}"
    return f"{name} {SIMULATED}" if simulated else name


def label(row: Mapping[str, Any], simulated: set[str] | frozenset[str] | None = None) -> str:
    """``config_label`` of a configuration record; simulated when the record says so or its
    id is in ``simulated``."""
    cid = row.get("config_id")
    sim = bool(row.get("simulated")) or (simulated is not None and cid in simulated)
    return config_label(row.get("variant"), row.get("model"), row.get("harness"),
                        row.get("harness_version"), cid, sim)


def label_with_id(row: Mapping[str, Any], simulated: set[str] | frozenset[str] | None = None
                  ) -> str:
    """The label plus the id prefix that ``--baseline``/``--candidate`` accept:
    ``sim-alpha-minimal [aa72aaa0]`` (the terminal's configuration column)."""
    cid = str(row.get("config_id") or "")
    name = label(row, simulated)
    sim = name.endswith(" " + SIMULATED)
    base = name.removesuffix(" " + SIMULATED) if sim else name
    out = f"{base} [{cid[:8]}]" if cid else base
    return f"{out} {SIMULATED}" if sim else out
