"""Checks for the shop-service repository (targets and regressions).

Each check observes the code under test in a child process (``see``) and declares what it
must observe (``@check``); the trusted parent in ``_harness`` compares the two.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import tempfile
from pathlib import Path

from _harness import RacyDict, atomic_write_expected, check, in_threads, outcome, raised, run, see_atomic_write

# --- orders ---------------------------------------------------------------
BAD_QUANTITIES = (0, -2, "3", 1.5, None)


@check({f"quantity {bad!r}": raised("OrderError") for bad in BAD_QUANTITIES})
def order_quantity_rejected(see):
    from shop.orders import OrderError, create_order

    for bad in BAD_QUANTITIES:
        see(f"quantity {bad!r}", outcome(OrderError, create_order, "c1",
                                         [{"sku": "A", "quantity": bad, "unit_price_cents": 100}]))


@check({"no items": raised("OrderError"), "items None": raised("OrderError")})
def order_empty_rejected(see):
    from shop.orders import OrderError, create_order

    see("no items", outcome(OrderError, create_order, "c1", []))
    see("items None", outcome(OrderError, create_order, "c1", None))


@check({"order total": 550, "line skus": ["A", "B", "GIFT"], "no customer": raised("OrderError"),
        "a line without sku": raised("OrderError")})
def orders_existing(see):
    from shop.orders import OrderError, create_order

    order = create_order(
        "c1",
        [
            {"sku": "A", "quantity": 1, "unit_price_cents": 250},
            {"sku": "B", "quantity": 3, "unit_price_cents": 100},
            {"sku": "GIFT", "quantity": 1},
        ],
    )
    see("order total", order["total_cents"])
    see("line skus", [line["sku"] for line in order["items"]])
    see("no customer", outcome(OrderError, create_order, "", [{"sku": "A", "quantity": 1}]))
    see("a line without sku", outcome(OrderError, create_order, "c1", [{"quantity": 1}]))


# --- inventory ------------------------------------------------------------
@check({"reservation over stock": raised("InsufficientStock"), "stock after a failed reservation": [5, 1],
        "reservation with repeated sku": raised("InsufficientStock"),
        "stock after a failed reservation with repeated sku": 5})
def reserve_all_or_nothing(see):
    from shop.inventory import InsufficientStock, Inventory

    inv = Inventory({"a": 5, "b": 1})
    see("reservation over stock", outcome(InsufficientStock, inv.reserve_many, [("a", 2), ("b", 3)]))
    see("stock after a failed reservation", (inv.available("a"), inv.available("b")))
    see("reservation with repeated sku", outcome(InsufficientStock, inv.reserve_many, [("a", 3), ("a", 3)]))
    see("stock after a failed reservation with repeated sku", inv.available("a"))


@check({"available() of an unknown sku": 0, "stock after reserve": 3, "reserve over stock": raised("InsufficientStock"),
        "stock after reserve_many": [2, 0]})
def inventory_existing(see):
    from shop.inventory import InsufficientStock, Inventory

    inv = Inventory({"a": 5})
    see("available() of an unknown sku", inv.available("missing"))
    inv.add_stock("b", 4)
    inv.reserve("a", 2)
    see("stock after reserve", inv.available("a"))
    see("reserve over stock", outcome(InsufficientStock, inv.reserve, "a", 10))
    inv.reserve_many([("a", 1), ("b", 4)])
    see("stock after reserve_many", (inv.available("a"), inv.available("b")))


# --- billing --------------------------------------------------------------
BAD_DISCOUNTS = (120, 100.5, -5)


@check({f"apply_discount(1000, {bad!r})": raised("ValueError") for bad in BAD_DISCOUNTS})
def discount_bounds(see):
    from shop.billing import apply_discount

    for bad in BAD_DISCOUNTS:
        see(f"apply_discount(1000, {bad!r})", outcome(ValueError, apply_discount, 1000, bad))


@check({"format_cents(-1234)": "-$12.34", "format_cents(-99999)": "-$999.99"})
def format_negative(see):
    from shop.billing import format_cents

    see("format_cents(-1234)", format_cents(-1234))
    see("format_cents(-99999)", format_cents(-99999))


@check({"apply_discount(1000, 0)": 1000, "apply_discount(1000, 25)": 750, "apply_discount(1000, 100)": 0,
        "format_cents(1205)": "$12.05", "format_cents(0)": "$0.00", "format_cents(100)": "$1.00"})
def billing_existing(see):
    from shop.billing import apply_discount, format_cents

    for percent in (0, 25, 100):
        see(f"apply_discount(1000, {percent})", apply_discount(1000, percent))
    for cents in (1205, 0, 100):
        see(f"format_cents({cents})", format_cents(cents))


# --- counters -------------------------------------------------------------
@check({"count after two concurrent increments": 2, "count after 4 x 100 concurrent increments": 400})
def counter_thread_safe(see):
    from shop.counters import RequestCounter

    counter = RequestCounter()
    counter._counts = RacyDict(counter._counts, "hits")
    in_threads(lambda: counter.increment("hits"), 2)
    see("count after two concurrent increments", counter.get("hits"))
    many = RequestCounter()
    in_threads(lambda: [many.increment("x") for _ in range(100)], 4)
    see("count after 4 x 100 concurrent increments", many.get("x"))


@check({"get() of an unknown key": 0, "first increment": 1, "increment by 4": 5, "snapshot is a copy": {"a": 5}})
def counter_existing(see):
    from shop.counters import RequestCounter

    counter = RequestCounter()
    see("get() of an unknown key", counter.get("missing"))
    see("first increment", counter.increment("a"))
    see("increment by 4", counter.increment("a", 4))
    snap = counter.snapshot()
    snap["a"] = 99
    see("snapshot is a copy", counter.snapshot())


# --- store ----------------------------------------------------------------
@check(atomic_write_expected({"orders": [1, 2]}))
def store_atomic(see):
    from shop.store import JsonStore

    see_atomic_write(
        see,
        lambda path, data: JsonStore(path).save(data),
        lambda path: JsonStore(path).load(),
        "doc.json",
        {"orders": [1, 2]},
        {"orders": object()},
    )


@check({"load() of a missing file": {}, "round trip": {"b": 2, "a": "ü"}})
def store_existing(see):
    from shop.store import JsonStore

    with tempfile.TemporaryDirectory() as tmp:
        see("load() of a missing file", JsonStore(Path(tmp) / "none.json").load())
        store = JsonStore(Path(tmp) / "nested" / "dir" / "doc.json")
        store.save({"b": 2, "a": "ü"})
        see("round trip", JsonStore(store.path).load())


# --- webhooks -------------------------------------------------------------
def _sig(secret: bytes, ts: int, body: bytes) -> str:
    return hmac.new(secret, f"{ts}.".encode() + body, hashlib.sha256).hexdigest()


@check({"valid signature": True, "tampered body": False, "wrong secret": False, "garbage signature": False})
def webhook_signature(see):
    from shop.webhooks import verify_webhook

    secret, body, ts = b"whsec-test", b'{"event": "order.paid", "id": "o1"}', 1_700_000_000
    good = _sig(secret, ts, body)
    see("valid signature", verify_webhook(secret, body, ts, good, now=ts + 10))
    see("tampered body", verify_webhook(secret, body + b" ", ts, good, now=ts + 10))
    see("wrong secret", verify_webhook(b"other", body, ts, good, now=ts + 10))
    see("garbage signature", verify_webhook(secret, body, ts, "zz", now=ts + 10))


@check({"within tolerance": True, "stale delivery": False, "timestamp from the future": False})
def webhook_tolerance(see):
    from shop.webhooks import verify_webhook

    secret, body, ts = b"whsec-test", b'{"event": "order.paid"}', 1_700_000_000
    good = _sig(secret, ts, body)
    see("within tolerance", verify_webhook(secret, body, ts, good, now=ts + 299))
    see("stale delivery", verify_webhook(secret, body, ts, good, now=ts + 301))
    see("timestamp from the future", verify_webhook(secret, body, ts, good, now=ts - 301))


@check({"event": "order.paid", "not json": raised("WebhookError"), "a list": raised("WebhookError"),
        "no event": raised("WebhookError")})
def webhooks_existing(see):
    from shop.webhooks import WebhookError, parse_webhook

    see("event", parse_webhook(json.dumps({"event": "order.paid"}).encode())["event"])
    see("not json", outcome(WebhookError, parse_webhook, b"not json"))
    see("a list", outcome(WebhookError, parse_webhook, b"[1, 2]"))
    see("no event", outcome(WebhookError, parse_webhook, b'{"id": 1}'))


# --- tenants --------------------------------------------------------------
@check({"another tenant's order": raised("AccessDenied"), "no tenant": raised("AccessDenied"), "own order": 100})
def tenant_isolation(see):
    from shop.tenants import AccessDenied, OrderRepository

    repo = OrderRepository()
    repo.add("t1", "o1", {"total_cents": 100})
    see("another tenant's order", outcome(AccessDenied, repo.get, "t2", "o1"))
    see("no tenant", outcome(AccessDenied, repo.get, "", "o1"))
    see("own order", repo.get("t1", "o1")["total_cents"])


@check({"own order": "o1", "missing order": raised("OrderNotFound"), "list_orders": ["o2"]})
def tenants_existing(see):
    from shop.tenants import OrderNotFound, OrderRepository

    repo = OrderRepository()
    repo.add("t1", "o1", {"total_cents": 100})
    repo.add("t2", "o2", {"total_cents": 200})
    see("own order", repo.get("t1", "o1")["order_id"])
    see("missing order", outcome(OrderNotFound, repo.get, "t1", "missing"))
    see("list_orders", [o["order_id"] for o in repo.list_orders("t2")])


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
