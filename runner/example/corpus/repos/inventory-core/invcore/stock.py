"""Warehouses holding stock in bins, with a capacity per warehouse."""

from __future__ import annotations


class InsufficientStock(Exception):
    """Taking more units than the warehouse holds."""


class CapacityExceeded(Exception):
    """Putting more units than the warehouse can hold."""


class Warehouse:
    def __init__(self, name: str, capacity: int = 1000) -> None:
        self.name = name
        self.capacity = capacity
        self._bins: dict[str, int] = {}

    def quantity(self, sku: str) -> int:
        return self._bins.get(sku, 0)

    def total(self) -> int:
        return sum(self._bins.values())

    def put(self, sku: str, quantity: int) -> int:
        if self.total() + quantity > self.capacity:
            raise CapacityExceeded(f"{self.name}: capacity {self.capacity} exceeded")
        self._bins[sku] = self.quantity(sku) + quantity
        return self._bins[sku]

    def take(self, sku: str, quantity: int) -> int:
        have = self.quantity(sku)
        if quantity > have:
            raise InsufficientStock(f"{self.name}: wanted {quantity} of {sku}, have {have}")
        self._bins[sku] = have - quantity
        return self._bins[sku]


def transfer(source: Warehouse, destination: Warehouse, sku: str, quantity: int) -> int:
    """Move units between warehouses; returns the destination's new quantity."""
    source.take(sku, quantity)
    return destination.put(sku, quantity)
