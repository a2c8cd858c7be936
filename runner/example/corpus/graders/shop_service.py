"""Checks for the shop-service repository (targets and regressions)."""

from __future__ import annotations

import hashlib
import hmac
import json
import tempfile
from pathlib import Path

from _harness import RacyDict, check_atomic_write, equal, in_threads, raises, run


# --- orders ---------------------------------------------------------------
def order_quantity_rejected():
    from shop.orders import OrderError, create_order

    for bad in (0, -2, "3", 1.5, None):
        raises(OrderError, create_order, "c1", [{"sku": "A", "quantity": bad, "unit_price_cents": 100}])


def order_empty_rejected():
    from shop.orders import OrderError, create_order

    raises(OrderError, create_order, "c1", [])
    raises(OrderError, create_order, "c1", None)


def orders_existing():
    from shop.orders import OrderError, create_order

    order = create_order(
        "c1",
        [
            {"sku": "A", "quantity": 1, "unit_price_cents": 250},
            {"sku": "B", "quantity": 3, "unit_price_cents": 100},
            {"sku": "GIFT", "quantity": 1},
        ],
    )
    equal(order["total_cents"], 550, "order total")
    equal([line["sku"] for line in order["items"]], ["A", "B", "GIFT"], "line skus")
    raises(OrderError, create_order, "", [{"sku": "A", "quantity": 1}])
    raises(OrderError, create_order, "c1", [{"quantity": 1}])


# --- inventory ------------------------------------------------------------
def reserve_all_or_nothing():
    from shop.inventory import InsufficientStock, Inventory

    inv = Inventory({"a": 5, "b": 1})
    raises(InsufficientStock, inv.reserve_many, [("a", 2), ("b", 3)])
    equal((inv.available("a"), inv.available("b")), (5, 1), "stock after a failed reservation")
    raises(InsufficientStock, inv.reserve_many, [("a", 3), ("a", 3)])
    equal(inv.available("a"), 5, "stock after a failed reservation with repeated sku")


def inventory_existing():
    from shop.inventory import InsufficientStock, Inventory

    inv = Inventory({"a": 5})
    equal(inv.available("missing"), 0, "available() of an unknown sku")
    inv.add_stock("b", 4)
    inv.reserve("a", 2)
    equal(inv.available("a"), 3, "stock after reserve")
    raises(InsufficientStock, inv.reserve, "a", 10)
    inv.reserve_many([("a", 1), ("b", 4)])
    equal((inv.available("a"), inv.available("b")), (2, 0), "stock after reserve_many")


# --- billing --------------------------------------------------------------
def discount_bounds():
    from shop.billing import apply_discount

    for bad in (120, 100.5, -5):
        raises(ValueError, apply_discount, 1000, bad)


def format_negative():
    from shop.billing import format_cents

    equal(format_cents(-1234), "-$12.34", "format_cents(-1234)")
    equal(format_cents(-99999), "-$999.99", "format_cents(-99999)")


def billing_existing():
    from shop.billing import apply_discount, format_cents

    equal(apply_discount(1000, 0), 1000, "apply_discount(1000, 0)")
    equal(apply_discount(1000, 25), 750, "apply_discount(1000, 25)")
    equal(apply_discount(1000, 100), 0, "apply_discount(1000, 100)")
    equal(format_cents(1205), "$12.05", "format_cents(1205)")
    equal(format_cents(0), "$0.00", "format_cents(0)")
    equal(format_cents(100), "$1.00", "format_cents(100)")


# --- counters -------------------------------------------------------------
def counter_thread_safe():
    from shop.counters import RequestCounter

    counter = RequestCounter()
    counter._counts = RacyDict(counter._counts, "hits")
    in_threads(lambda: counter.increment("hits"), 2)
    equal(counter.get("hits"), 2, "count after two concurrent increments")
    many = RequestCounter()
    in_threads(lambda: [many.increment("x") for _ in range(100)], 4)
    equal(many.get("x"), 400, "count after 4 x 100 concurrent increments")


def counter_existing():
    from shop.counters import RequestCounter

    counter = RequestCounter()
    equal(counter.get("missing"), 0, "get() of an unknown key")
    equal(counter.increment("a"), 1, "first increment")
    equal(counter.increment("a", 4), 5, "increment by 4")
    snap = counter.snapshot()
    snap["a"] = 99
    equal(counter.snapshot(), {"a": 5}, "snapshot is a copy")


# --- store ----------------------------------------------------------------
def store_atomic():
    from shop.store import JsonStore

    check_atomic_write(
        lambda path, data: JsonStore(path).save(data),
        lambda path: JsonStore(path).load(),
        "doc.json",
        {"orders": [1, 2]},
        {"orders": object()},
    )


def store_existing():
    from shop.store import JsonStore

    with tempfile.TemporaryDirectory() as tmp:
        equal(JsonStore(Path(tmp) / "none.json").load(), {}, "load() of a missing file")
        store = JsonStore(Path(tmp) / "nested" / "dir" / "doc.json")
        store.save({"b": 2, "a": "ü"})
        equal(JsonStore(store.path).load(), {"b": 2, "a": "ü"}, "round trip")


# --- webhooks -------------------------------------------------------------
def _sig(secret: bytes, ts: int, body: bytes) -> str:
    return hmac.new(secret, f"{ts}.".encode() + body, hashlib.sha256).hexdigest()


def webhook_signature():
    from shop.webhooks import verify_webhook

    secret, body, ts = b"whsec-test", b'{"event": "order.paid", "id": "o1"}', 1_700_000_000
    good = _sig(secret, ts, body)
    equal(verify_webhook(secret, body, ts, good, now=ts + 10), True, "valid signature")
    equal(verify_webhook(secret, body + b" ", ts, good, now=ts + 10), False, "tampered body")
    equal(verify_webhook(b"other", body, ts, good, now=ts + 10), False, "wrong secret")
    equal(verify_webhook(secret, body, ts, "zz", now=ts + 10), False, "garbage signature")


def webhook_tolerance():
    from shop.webhooks import verify_webhook

    secret, body, ts = b"whsec-test", b'{"event": "order.paid"}', 1_700_000_000
    good = _sig(secret, ts, body)
    equal(verify_webhook(secret, body, ts, good, now=ts + 299), True, "within tolerance")
    equal(verify_webhook(secret, body, ts, good, now=ts + 301), False, "stale delivery")
    equal(verify_webhook(secret, body, ts, good, now=ts - 301), False, "timestamp from the future")


def webhooks_existing():
    from shop.webhooks import WebhookError, parse_webhook

    equal(parse_webhook(json.dumps({"event": "order.paid"}).encode())["event"], "order.paid", "event")
    raises(WebhookError, parse_webhook, b"not json")
    raises(WebhookError, parse_webhook, b"[1, 2]")
    raises(WebhookError, parse_webhook, b'{"id": 1}')


# --- tenants --------------------------------------------------------------
def tenant_isolation():
    from shop.tenants import AccessDenied, OrderRepository

    repo = OrderRepository()
    repo.add("t1", "o1", {"total_cents": 100})
    raises(AccessDenied, repo.get, "t2", "o1")
    raises(AccessDenied, repo.get, "", "o1")
    equal(repo.get("t1", "o1")["total_cents"], 100, "own order")


def tenants_existing():
    from shop.tenants import OrderNotFound, OrderRepository

    repo = OrderRepository()
    repo.add("t1", "o1", {"total_cents": 100})
    repo.add("t2", "o2", {"total_cents": 200})
    equal(repo.get("t1", "o1")["order_id"], "o1", "own order")
    raises(OrderNotFound, repo.get, "t1", "missing")
    equal([o["order_id"] for o in repo.list_orders("t2")], ["o2"], "list_orders")


CHECKS = {f.__name__: f for f in [
    order_quantity_rejected, order_empty_rejected, orders_existing,
    reserve_all_or_nothing, inventory_existing,
    discount_bounds, format_negative, billing_existing,
    counter_thread_safe, counter_existing,
    store_atomic, store_existing,
    webhook_signature, webhook_tolerance, webhooks_existing,
    tenant_isolation, tenants_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
