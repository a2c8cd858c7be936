"""Stock levels and reservations."""

from __future__ import annotations


class InsufficientStock(Exception):
    """Not enough units of a SKU to satisfy a reservation."""


class Inventory:
    def __init__(self, stock: dict[str, int] | None = None) -> None:
        self._stock: dict[str, int] = dict(stock or {})

    def add_stock(self, sku: str, quantity: int) -> None:
        self._stock[sku] = self._stock.get(sku, 0) + quantity

    def available(self, sku: str) -> int:
        return self._stock.get(sku, 0)

    def reserve(self, sku: str, quantity: int) -> None:
        have = self.available(sku)
        if quantity > have:
            raise InsufficientStock(f"{sku}: wanted {quantity}, have {have}")
        self._stock[sku] = have - quantity

    def reserve_many(self, lines: list[tuple[str, int]]) -> None:
        """Reserve every (sku, quantity) line of an order."""
        for sku, quantity in lines:
            self.reserve(sku, quantity)
