"""Orders: line items, totals and validation."""

from __future__ import annotations


class OrderError(ValueError):
    """An order request that cannot be accepted."""


def _line_total(line: dict) -> int:
    return line["quantity"] * line["unit_price_cents"]


def create_order(customer_id: str, items: list[dict]) -> dict:
    """Build an order from line items ({sku, quantity, unit_price_cents})."""
    if not customer_id:
        raise OrderError("customer_id is required")
    lines = []
    for item in items:
        sku = item.get("sku")
        if not sku:
            raise OrderError("every item needs a sku")
        quantity = item.get("quantity")
        price = item.get("unit_price_cents", 0)
        lines.append({"sku": sku, "quantity": quantity, "unit_price_cents": price})
    return {
        "customer_id": customer_id,
        "items": lines,
        "total_cents": sum(_line_total(line) for line in lines),
    }
