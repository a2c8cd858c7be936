"""Checks for the inventory-core repository (targets and regressions).

Each check observes the code under test in a child process (``see``) and declares what it
must observe (``@check``); the trusted parent in ``_harness`` compares the two.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _harness import RacyDict, atomic_write_expected, check, in_threads, outcome, raised, run, see_atomic_write

BAD_SKUS = ("", "   ", "ABCDE-1234", "AB-12", "AB1234", "A1-1234", "AB-12345")


@check({f"parse_sku({bad!r})": raised("InvalidSku") for bad in BAD_SKUS})
def sku_rejects_bad(see):
    from invcore.sku import InvalidSku, parse_sku

    for bad in BAD_SKUS:
        see(f"parse_sku({bad!r})", outcome(InvalidSku, parse_sku, bad))


@check({"parse_sku(' ab-1234 ')": "AB-1234", "parse_sku('XYZ-0001')": "XYZ-0001"})
def sku_existing(see):
    from invcore.sku import parse_sku

    see("parse_sku(' ab-1234 ')", parse_sku(" ab-1234 "))
    see("parse_sku('XYZ-0001')", parse_sku("XYZ-0001"))


@check({"take(0)": raised("ValueError"), "take(-3)": raised("ValueError"), "quantity after rejected takes": 5})
def take_rejects_non_positive(see):
    from invcore.stock import Warehouse

    wh = Warehouse("north")
    wh.put("AB-1234", 5)
    see("take(0)", outcome(ValueError, wh.take, "AB-1234", 0))
    see("take(-3)", outcome(ValueError, wh.take, "AB-1234", -3))
    see("quantity after rejected takes", wh.quantity("AB-1234"))


@check({"transfer over capacity": raised("CapacityExceeded"), "quantities after a failed transfer": [10, 0]})
def transfer_atomic(see):
    from invcore.stock import CapacityExceeded, Warehouse, transfer

    src, dst = Warehouse("src"), Warehouse("dst", capacity=5)
    src.put("AB-1234", 10)
    see("transfer over capacity", outcome(CapacityExceeded, transfer, src, dst, "AB-1234", 8))
    see("quantities after a failed transfer", (src.quantity("AB-1234"), dst.quantity("AB-1234")))


@check({"put returns the new quantity": 12, "take returns the new quantity": 10,
        "take more than stocked": raised("InsufficientStock"), "put over capacity": raised("CapacityExceeded"),
        "transfer returns the destination quantity": 4, "quantities after transfer": [6, 4]})
def stock_existing(see):
    from invcore.stock import CapacityExceeded, InsufficientStock, Warehouse, transfer

    src, dst = Warehouse("src", capacity=20), Warehouse("dst", capacity=20)
    see("put returns the new quantity", src.put("AB-1234", 12))
    see("take returns the new quantity", src.take("AB-1234", 2))
    see("take more than stocked", outcome(InsufficientStock, src.take, "AB-1234", 11))
    see("put over capacity", outcome(CapacityExceeded, src.put, "CD-0001", 11))
    see("transfer returns the destination quantity", transfer(src, dst, "AB-1234", 4))
    see("quantities after transfer", (src.quantity("AB-1234"), dst.quantity("AB-1234")))


@check({"distinct ids from two concurrent calls": 2, "distinct ids from 4 x 100 calls": 400})
def ids_thread_safe(see):
    from invcore.ids import IdAllocator

    alloc = IdAllocator()
    alloc._state = RacyDict(alloc._state, "next")
    see("distinct ids from two concurrent calls", len(set(in_threads(alloc.next_id, 2))))
    many = IdAllocator()
    batches = in_threads(lambda: [many.next_id() for _ in range(100)], 4)
    see("distinct ids from 4 x 100 calls", len({i for batch in batches for i in batch}))


@check({"first ids": ["MOV-000001", "MOV-000002"], "custom prefix and start": "ADJ-000042"})
def ids_existing(see):
    from invcore.ids import IdAllocator

    alloc = IdAllocator()
    see("first ids", [alloc.next_id(), alloc.next_id()])
    see("custom prefix and start", IdAllocator("ADJ", 42).next_id())


@check(atomic_write_expected({"AB-1234": 3}))
def snapshot_atomic(see):
    from invcore.snapshot import read_snapshot, write_snapshot

    see_atomic_write(see, write_snapshot, read_snapshot, "stock.json", {"AB-1234": 3}, {"AB-1234": object()})


@check({"round trip": {"AB-1234": 3, "CD-0001": 0}, "a version 2 file": raised("ValueError")})
def snapshot_existing(see):
    from invcore.snapshot import read_snapshot, write_snapshot

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.json"
        write_snapshot(path, {"AB-1234": 3, "CD-0001": 0})
        see("round trip", read_snapshot(path))
        path.write_text(json.dumps({"version": 2, "stock": {}}), encoding="utf-8")
        see("a version 2 file", outcome(ValueError, read_snapshot, path))


CHECKS = {f.__name__: f for f in [
    sku_rejects_bad, sku_existing, take_rejects_non_positive, transfer_atomic, stock_existing,
    ids_thread_safe, ids_existing, snapshot_atomic, snapshot_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
