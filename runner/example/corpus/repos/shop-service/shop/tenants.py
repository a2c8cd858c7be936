"""Orders stored per tenant (every shop on the platform is a tenant)."""

from __future__ import annotations


class OrderNotFound(KeyError):
    """No order with that id."""


class OrderRepository:
    def __init__(self) -> None:
        self._orders: dict[str, dict] = {}

    def add(self, tenant_id: str, order_id: str, order: dict) -> None:
        self._orders[order_id] = {**order, "tenant_id": tenant_id, "order_id": order_id}

    def get(self, tenant_id: str, order_id: str) -> dict:
        """Return one of the tenant's orders."""
        try:
            return self._orders[order_id]
        except KeyError:
            raise OrderNotFound(order_id) from None

    def list_orders(self, tenant_id: str) -> list[dict]:
        return [o for o in self._orders.values() if o["tenant_id"] == tenant_id]
