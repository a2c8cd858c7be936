"""Discounts and money formatting (all amounts in integer cents)."""

from __future__ import annotations


def apply_discount(total_cents: int, percent: float) -> int:
    """Return the total after a percentage discount, rounded to the nearest cent."""
    return round(total_cents * (100 - percent) / 100)


def format_cents(cents: int) -> str:
    """Format cents as dollars, e.g. 1205 -> "$12.05"."""
    return f"${cents // 100}.{cents % 100:02d}"
