"""A visible check for shop-service (``visible: true`` in the sweep manifest): the agent may run it.

It is deliberately the easy half of the hidden target check ``rejects-bad-quantity``: a
change that refuses a quantity of 0 but lets -2, "3" or 1.5 through passes here and fails
there, which is the gap between visible and hidden results the report shows
(docs/example-corpus.md, "The budget sweep and the visible check").
"""

from __future__ import annotations

from _harness import raises, run


def order_zero_rejected():
    from shop.orders import OrderError, create_order

    raises(OrderError, create_order, "c1", [{"sku": "A", "quantity": 0, "unit_price_cents": 100}])


if __name__ == "__main__":
    run({"order_zero_rejected": order_zero_rejected})
