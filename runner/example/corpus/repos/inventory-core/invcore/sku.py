"""Stock-keeping unit codes such as "AB-1234"."""

from __future__ import annotations


class InvalidSku(ValueError):
    """A SKU code that does not match the catalogue format."""


def parse_sku(raw: str) -> str:
    """Normalise a SKU typed by a person: trim spaces, upper-case."""
    return raw.strip().upper()
