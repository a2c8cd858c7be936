"""Cases on the shop-service repository (familiar to the agents: ``known``)."""

from __future__ import annotations

from runner.example.spec import CaseSpec, Check, Edit

R = "shop-service"
ORDERS_OK = Check("orders-keep-working", "Valid orders still total correctly; missing customer or sku still rejected", "orders_existing", "regression")
INVENTORY_OK = Check("inventory-keeps-working", "Reservations, stock additions and unknown SKUs behave as before", "inventory_existing", "regression")
BILLING_OK = Check("billing-keeps-working", "Discounts of 0-100% and positive amounts format as before", "billing_existing", "regression")

_QTY = '        quantity = item.get("quantity")\n'
_LOOP = "    lines = []\n    for item in items:\n"

CASES = [
    CaseSpec(
        id="order-quantity-validation", repo=R, difficulty="easy", task_class="validation", subsystem="orders",
        prompt=(
            "Customers have managed to place orders with a quantity of 0 or -2, and one integration "
            "sends quantities as strings, which makes the order totals nonsense. Please make "
            "`shop.orders.create_order` reject any line whose quantity is not a positive integer "
            "(zero, negative, floats, strings or missing) by raising the existing `OrderError`, "
            "naming the SKU in the message. Valid orders must keep working exactly as today."
        ),
        checks=(Check("rejects-bad-quantity", "create_order raises OrderError for zero, negative, non-integer or missing quantities", "order_quantity_rejected"), ORDERS_OK),
        correct=(Edit("shop/orders.py", _QTY, _QTY + '        if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity <= 0:\n            raise OrderError(f"quantity for {sku} must be a positive integer, got {quantity!r}")\n'),),
        wrong=(Edit("shop/orders.py", _QTY, _QTY + '        if quantity == 0:\n            raise OrderError(f"quantity for {sku} must not be zero")\n'),),
        regression=(Edit("shop/orders.py", _QTY, _QTY + '        if not isinstance(quantity, int) or quantity < 2:\n            raise OrderError(f"quantity for {sku} must be a positive integer")\n'),
                    Edit("shop/orders.py", 'price = item.get("unit_price_cents", 0)', 'price = item["unit_price_cents"]')),
    ),
    CaseSpec(
        id="order-empty-items", repo=R, difficulty="easy", task_class="validation", subsystem="orders",
        prompt=(
            "Our checkout occasionally posts an order with an empty item list (or no list at all), and "
            "`create_order` happily creates a $0 order that then confuses fulfilment. Make "
            "`shop.orders.create_order` raise `OrderError` when `items` is empty or None, before "
            "anything else is built. Everything else about order creation should stay the same."
        ),
        checks=(Check("rejects-empty-order", "create_order raises OrderError for an empty or missing item list", "order_empty_rejected"), ORDERS_OK),
        correct=(Edit("shop/orders.py", _LOOP, '    if not items:\n        raise OrderError("an order needs at least one item")\n' + _LOOP),),
        wrong=(Edit("shop/orders.py", _LOOP, '    if items is None:\n        raise OrderError("an order needs an item list")\n' + _LOOP),),
        regression=(Edit("shop/orders.py", _LOOP, '    if not items:\n        raise OrderError("an order needs at least one item")\n' + _LOOP),
                    Edit("shop/orders.py", 'price = item.get("unit_price_cents", 0)', 'price = item["unit_price_cents"]')),
    ),
    CaseSpec(
        id="discount-bounds", repo=R, difficulty="easy", task_class="validation", subsystem="billing", holdout=True,
        prompt=(
            "A promo misconfiguration applied a 120% discount and we ended up with negative invoice "
            "totals. `shop.billing.apply_discount` should only accept percentages from 0 to 100 "
            "inclusive and raise `ValueError` for anything outside that range. A 0% discount must still "
            "return the total unchanged and 100% must still return 0."
        ),
        checks=(Check("rejects-out-of-range-discount", "apply_discount raises ValueError for percentages outside 0..100", "discount_bounds"), BILLING_OK),
        correct=(Edit("shop/billing.py", '    """Return the total after a percentage discount, rounded to the nearest cent."""\n', '    """Return the total after a percentage discount, rounded to the nearest cent."""\n    if not 0 <= percent <= 100:\n        raise ValueError(f"discount must be between 0 and 100 percent, got {percent}")\n'),),
        wrong=(Edit("shop/billing.py", '    """Return the total after a percentage discount, rounded to the nearest cent."""\n', '    """Return the total after a percentage discount, rounded to the nearest cent."""\n    if percent > 100:\n        raise ValueError(f"discount above 100 percent: {percent}")\n'),),
        regression=(Edit("shop/billing.py", '    """Return the total after a percentage discount, rounded to the nearest cent."""\n', '    """Return the total after a percentage discount, rounded to the nearest cent."""\n    if not 0 < percent <= 100:\n        raise ValueError(f"discount must be between 0 and 100 percent, got {percent}")\n'),),
    ),
    CaseSpec(
        id="format-cents-negative", repo=R, difficulty="medium", task_class="api", subsystem="billing",
        prompt=(
            "Refunds show up on statements as `$-13.66` when they should read `-$12.34`. Please fix "
            "`shop.billing.format_cents` so negative amounts are formatted with a leading minus sign "
            "followed by the usual dollar format (e.g. -1234 -> `-$12.34`, -5 -> `-$0.05`). Positive "
            "amounts and zero must keep their current format, including the two-digit cents."
        ),
        checks=(Check("formats-negative-amounts", "format_cents(-1234) == '-$12.34' and format_cents(-99999) == '-$999.99'", "format_negative"), BILLING_OK),
        correct=(Edit("shop/billing.py", '    return f"${cents // 100}.{cents % 100:02d}"\n', '    sign = "-" if cents < 0 else ""\n    cents = abs(cents)\n    return f"{sign}${cents // 100}.{cents % 100:02d}"\n'),),
        wrong=(Edit("shop/billing.py", '    return f"${cents // 100}.{cents % 100:02d}"\n', '    sign = "-" if cents < 0 else ""\n    return f"{sign}${abs(cents) // 100}.{cents % 100:02d}"\n'),),
        regression=(Edit("shop/billing.py", '    return f"${cents // 100}.{cents % 100:02d}"\n', '    sign = "-" if cents < 0 else ""\n    cents = abs(cents)\n    return f"{sign}${cents // 100}.{cents % 100}"\n'),),
    ),
    CaseSpec(
        id="request-counter-thread-safe", repo=R, difficulty="hard", task_class="concurrency", subsystem="counters", compile_check=True,
        prompt=(
            "Our per-endpoint request counts are lower than the load balancer's numbers under load. "
            "`shop.counters.RequestCounter.increment` is called from many worker threads at once and "
            "loses updates. Make the counter thread-safe so that concurrent increments are never lost, "
            "without changing its public methods (`increment` returns the new value, `get` returns 0 for "
            "unknown keys, `snapshot` returns a copy)."
        ),
        checks=(Check("no-lost-increments", "Concurrent increments from many threads are all counted", "counter_thread_safe"),
                Check("counter-keeps-working", "increment/get/snapshot behave as before", "counter_existing", "regression")),
        correct=(Edit("shop/counters.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n"),
                 Edit("shop/counters.py", "        self._counts: dict[str, int] = {}\n", "        self._counts: dict[str, int] = {}\n        self._lock = threading.Lock()\n"),
                 Edit("shop/counters.py", "        current = self._counts.get(key, 0)\n        self._counts[key] = current + amount\n        return current + amount\n",
                      "        with self._lock:\n            current = self._counts.get(key, 0)\n            self._counts[key] = current + amount\n            return current + amount\n"),
                 Edit("shop/counters.py", "        return dict(self._counts)\n", "        with self._lock:\n            return dict(self._counts)\n")),
        wrong=(Edit("shop/counters.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n"),
               Edit("shop/counters.py", "        current = self._counts.get(key, 0)\n        self._counts[key] = current + amount\n        return current + amount\n",
                    "        with threading.Lock():\n            current = self._counts.get(key, 0)\n            self._counts[key] = current + amount\n            return current + amount\n")),
        regression=(Edit("shop/counters.py", "from __future__ import annotations\n", "from __future__ import annotations\n\nimport threading\n"),
                    Edit("shop/counters.py", "        self._counts: dict[str, int] = {}\n", "        self._counts: dict[str, int] = {}\n        self._lock = threading.Lock()\n"),
                    Edit("shop/counters.py", "        current = self._counts.get(key, 0)\n        self._counts[key] = current + amount\n        return current + amount\n",
                         "        with self._lock:\n            current = self._counts.get(key, 0)\n            self._counts[key] = current + amount\n            return current + amount\n"),
                    Edit("shop/counters.py", "    def get(self, key: str) -> int:\n        return self._counts.get(key, 0)\n", "    def get(self, key: str) -> int | None:\n        return self._counts.get(key)\n")),
    ),
    CaseSpec(
        id="json-store-atomic-save", repo=R, difficulty="hard", task_class="persistence", subsystem="store", compile_check=True,
        prompt=(
            "After a crash during `JsonStore.save` we found a truncated, unreadable `orders.json` and lost "
            "the previous data. Make `shop.store.JsonStore.save` atomic: write the new document to a "
            "temporary file in the same directory, flush it, then rename it over the target, and clean up "
            "the temporary file if anything fails. A failed save must leave the previous document intact. "
            "Loading a missing file must still return `{}` and saving must still create missing parent directories."
        ),
        checks=(Check("atomic-save", "A failed save keeps the previous document and leaves no temporary files; the target is never written in place", "store_atomic"),
                Check("store-keeps-working", "Round trips, missing files and nested directories behave as before", "store_existing", "regression")),
        correct=(Edit("shop/store.py", "import json\nfrom pathlib import Path\n", "import json\nimport os\nimport tempfile\nfrom pathlib import Path\n"),
                 Edit("shop/store.py", '        with open(self.path, "w", encoding="utf-8") as fh:\n            json.dump(data, fh, indent=2, sort_keys=True)\n',
                      '        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")\n'
                      '        try:\n            with os.fdopen(fd, "w", encoding="utf-8") as fh:\n                json.dump(data, fh, indent=2, sort_keys=True)\n'
                      '                fh.flush()\n                os.fsync(fh.fileno())\n            os.replace(tmp, self.path)\n'
                      '        except BaseException:\n            Path(tmp).unlink(missing_ok=True)\n            raise\n')),
        wrong=(Edit("shop/store.py", '        with open(self.path, "w", encoding="utf-8") as fh:\n            json.dump(data, fh, indent=2, sort_keys=True)\n',
                    '        text = json.dumps(data, indent=2, sort_keys=True)\n        with open(self.path, "w", encoding="utf-8") as fh:\n            fh.write(text)\n'),),
        regression=(Edit("shop/store.py", "import json\nfrom pathlib import Path\n", "import json\nimport os\nimport tempfile\nfrom pathlib import Path\n"),
                    Edit("shop/store.py", '        self.path.parent.mkdir(parents=True, exist_ok=True)\n        with open(self.path, "w", encoding="utf-8") as fh:\n            json.dump(data, fh, indent=2, sort_keys=True)\n',
                         '        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")\n'
                         '        try:\n            with os.fdopen(fd, "w", encoding="utf-8") as fh:\n                json.dump(data, fh, indent=2, sort_keys=True)\n'
                         '            os.replace(tmp, self.path)\n'
                         '        except BaseException:\n            Path(tmp).unlink(missing_ok=True)\n            raise\n')),
    ),
    CaseSpec(
        id="inventory-reserve-all-or-nothing", repo=R, difficulty="hard", task_class="transactions", subsystem="inventory", compile_check=True,
        prompt=(
            "When one line of a multi-line order is out of stock, `Inventory.reserve_many` raises "
            "`InsufficientStock` but the earlier lines stay reserved, so stock leaks away. Make "
            "`shop.inventory.Inventory.reserve_many` all-or-nothing: either every line is reserved or, if "
            "any line cannot be satisfied, it raises `InsufficientStock` and no stock changes at all. "
            "Note that an order may list the same SKU on several lines."
        ),
        checks=(Check("all-or-nothing", "A failing reserve_many raises InsufficientStock and leaves all stock unchanged (also with repeated SKUs)", "reserve_all_or_nothing"), INVENTORY_OK),
        correct=(Edit("shop/inventory.py", '        """Reserve every (sku, quantity) line of an order."""\n        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n',
                      '        """Reserve every (sku, quantity) line of an order, or none of them."""\n        needed: dict[str, int] = {}\n        for sku, quantity in lines:\n            needed[sku] = needed.get(sku, 0) + quantity\n'
                      '        for sku, quantity in needed.items():\n            if quantity > self.available(sku):\n                raise InsufficientStock(f"{sku}: wanted {quantity}, have {self.available(sku)}")\n'
                      '        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n'),),
        wrong=(Edit("shop/inventory.py", '        """Reserve every (sku, quantity) line of an order."""\n        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n',
                    '        """Reserve every (sku, quantity) line of an order, or none of them."""\n        for sku, quantity in lines:\n            if quantity > self.available(sku):\n                raise InsufficientStock(f"{sku}: wanted {quantity}, have {self.available(sku)}")\n'
                    '        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n'),),
        regression=(Edit("shop/inventory.py", '        """Reserve every (sku, quantity) line of an order."""\n        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n',
                         '        """Reserve every (sku, quantity) line of an order, or none of them."""\n        needed: dict[str, int] = {}\n        for sku, quantity in lines:\n            needed[sku] = needed.get(sku, 0) + quantity\n'
                         '        for sku, quantity in needed.items():\n            if quantity > self.available(sku):\n                raise InsufficientStock(f"{sku}: wanted {quantity}, have {self.available(sku)}")\n'
                         '        for sku, quantity in lines:\n            self.reserve(sku, quantity)\n'),
                    Edit("shop/inventory.py", "        return self._stock.get(sku, 0)\n", "        return self._stock[sku]\n")),
    ),
    CaseSpec(
        id="webhook-signature-verification", repo=R, difficulty="hard", task_class="security", subsystem="webhooks", holdout=True, compile_check=True,
        prompt=(
            "We accept payment webhooks without checking who sent them. Add "
            "`verify_webhook(secret: bytes, body: bytes, timestamp: int, signature: str, now: float | None = None, "
            "tolerance: int = 300) -> bool` to `shop/webhooks.py`. The provider signs `f\"{timestamp}.\"` "
            "followed by the raw body with HMAC-SHA256 and sends the lowercase hex digest. Return True only "
            "for a matching signature (compare in constant time) whose timestamp is within `tolerance` "
            "seconds of `now` (default: the current time) in either direction; never raise for a malformed "
            "signature. `parse_webhook` must keep working as it does now."
        ),
        checks=(Check("valid-signatures-only", "verify_webhook accepts the provider's signature and rejects tampered bodies, wrong secrets and garbage", "webhook_signature"),
                Check("timestamp-tolerance", "verify_webhook rejects deliveries more than 300 s old or in the future", "webhook_tolerance"),
                Check("parse-keeps-working", "parse_webhook still decodes bodies and raises WebhookError for bad ones", "webhooks_existing", "regression")),
        correct=(Edit("shop/webhooks.py", "import json\n", "import hashlib\nimport hmac\nimport json\nimport time\n"),
                 Edit("shop/webhooks.py", "    return payload\n",
                      '    return payload\n\n\ndef verify_webhook(\n    secret: bytes, body: bytes, timestamp: int, signature: str, now: float | None = None, tolerance: int = 300\n) -> bool:\n'
                      '    """True only for the provider\'s signature on a fresh delivery (replays are rejected)."""\n'
                      '    current = time.time() if now is None else now\n    if abs(current - timestamp) > tolerance:\n        return False\n'
                      '    expected = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()\n'
                      '    return hmac.compare_digest(expected.encode(), signature.encode())\n')),
        wrong=(Edit("shop/webhooks.py", "import json\n", "import hashlib\nimport hmac\nimport json\n"),
               Edit("shop/webhooks.py", "    return payload\n",
                    '    return payload\n\n\ndef verify_webhook(\n    secret: bytes, body: bytes, timestamp: int, signature: str, now: float | None = None, tolerance: int = 300\n) -> bool:\n'
                    '    """True for the provider\'s signature."""\n'
                    '    expected = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()\n'
                    '    return hmac.compare_digest(expected.encode(), signature.encode())\n')),
        regression=(Edit("shop/webhooks.py", "import json\n", "import hashlib\nimport hmac\nimport json\nimport time\n"),
                    Edit("shop/webhooks.py", "    return payload\n",
                         '    return payload\n\n\ndef verify_webhook(\n    secret: bytes, body: bytes, timestamp: int, signature: str, now: float | None = None, tolerance: int = 300\n) -> bool:\n'
                         '    """True only for the provider\'s signature on a fresh delivery (replays are rejected)."""\n'
                         '    current = time.time() if now is None else now\n    if abs(current - timestamp) > tolerance:\n        return False\n'
                         '    expected = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()\n'
                         '    return hmac.compare_digest(expected.encode(), signature.encode())\n'),
                    Edit("shop/webhooks.py", '        raise WebhookError("body must be an object with an event field")\n', '        raise ValueError("body must be an object with an event field")\n')),
    ),
    CaseSpec(
        id="tenant-order-access", repo=R, difficulty="hard", task_class="access-control", subsystem="tenants", compile_check=True,
        prompt=(
            "Security review finding: `OrderRepository.get(tenant_id, order_id)` returns another tenant's "
            "order if you know its id. Add an `AccessDenied` exception (a `PermissionError`) to "
            "`shop/tenants.py` and make `get` raise it whenever the order belongs to a different tenant "
            "(including an empty tenant id). Unknown order ids must still raise `OrderNotFound`, and "
            "`list_orders` must keep returning only the tenant's own orders."
        ),
        checks=(Check("cross-tenant-denied", "get() raises AccessDenied for another tenant's order and returns the tenant's own", "tenant_isolation"),
                Check("tenants-keep-working", "Own orders, unknown ids (OrderNotFound) and list_orders behave as before", "tenants_existing", "regression")),
        correct=(Edit("shop/tenants.py", "class OrderRepository:\n", 'class AccessDenied(PermissionError):\n    """The order exists but belongs to another tenant."""\n\n\nclass OrderRepository:\n'),
                 Edit("shop/tenants.py", "        try:\n            return self._orders[order_id]\n        except KeyError:\n            raise OrderNotFound(order_id) from None\n",
                      '        try:\n            order = self._orders[order_id]\n        except KeyError:\n            raise OrderNotFound(order_id) from None\n'
                      '        if order["tenant_id"] != tenant_id:\n            raise AccessDenied(f"order {order_id} belongs to another tenant")\n        return order\n')),
        wrong=(Edit("shop/tenants.py", "class OrderRepository:\n", 'class AccessDenied(PermissionError):\n    """The order exists but belongs to another tenant."""\n\n\nclass OrderRepository:\n'),
               Edit("shop/tenants.py", "        try:\n            return self._orders[order_id]\n",
                    '        if tenant_id is None:\n            raise AccessDenied("a tenant id is required")\n        try:\n            return self._orders[order_id]\n')),
        regression=(Edit("shop/tenants.py", "class OrderRepository:\n", 'class AccessDenied(PermissionError):\n    """The order exists but belongs to another tenant."""\n\n\nclass OrderRepository:\n'),
                    Edit("shop/tenants.py", "        try:\n            return self._orders[order_id]\n        except KeyError:\n            raise OrderNotFound(order_id) from None\n",
                         '        order = self._orders.get(order_id)\n        if order is None or order["tenant_id"] != tenant_id:\n'
                         '            raise AccessDenied(f"order {order_id} is not available to this tenant")\n        return order\n')),
    ),
]
