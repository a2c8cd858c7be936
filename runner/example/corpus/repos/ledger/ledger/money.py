"""Amounts as integer cents, parsed from user text such as "12.34"."""

from __future__ import annotations

from decimal import Decimal


class AmountError(ValueError):
    """Text that is not a valid non-negative amount with at most two decimals."""


def parse_amount(text: str) -> int:
    """Parse "12.34" into 1234 cents."""
    return int(Decimal(text.strip()) * 100)


def format_amount(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"
