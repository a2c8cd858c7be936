"""Checks for the inventory-core repository (targets and regressions)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from _harness import RacyDict, check_atomic_write, equal, in_threads, raises, run


def sku_rejects_bad():
    from invcore.sku import InvalidSku, parse_sku

    for bad in ("", "   ", "ABCDE-1234", "AB-12", "AB1234", "A1-1234", "AB-12345"):
        raises(InvalidSku, parse_sku, bad)


def sku_existing():
    from invcore.sku import parse_sku

    equal(parse_sku(" ab-1234 "), "AB-1234", "parse_sku(' ab-1234 ')")
    equal(parse_sku("XYZ-0001"), "XYZ-0001", "parse_sku('XYZ-0001')")


def take_rejects_non_positive():
    from invcore.stock import Warehouse

    wh = Warehouse("north")
    wh.put("AB-1234", 5)
    raises(ValueError, wh.take, "AB-1234", 0)
    raises(ValueError, wh.take, "AB-1234", -3)
    equal(wh.quantity("AB-1234"), 5, "quantity after rejected takes")


def transfer_atomic():
    from invcore.stock import CapacityExceeded, Warehouse, transfer

    src, dst = Warehouse("src"), Warehouse("dst", capacity=5)
    src.put("AB-1234", 10)
    raises(CapacityExceeded, transfer, src, dst, "AB-1234", 8)
    equal((src.quantity("AB-1234"), dst.quantity("AB-1234")), (10, 0), "quantities after a failed transfer")


def stock_existing():
    from invcore.stock import CapacityExceeded, InsufficientStock, Warehouse, transfer

    src, dst = Warehouse("src", capacity=20), Warehouse("dst", capacity=20)
    equal(src.put("AB-1234", 12), 12, "put returns the new quantity")
    equal(src.take("AB-1234", 2), 10, "take returns the new quantity")
    raises(InsufficientStock, src.take, "AB-1234", 11)
    raises(CapacityExceeded, src.put, "CD-0001", 11)
    equal(transfer(src, dst, "AB-1234", 4), 4, "transfer returns the destination quantity")
    equal((src.quantity("AB-1234"), dst.quantity("AB-1234")), (6, 4), "quantities after transfer")


def ids_thread_safe():
    from invcore.ids import IdAllocator

    alloc = IdAllocator()
    alloc._state = RacyDict(alloc._state, "next")
    ids = in_threads(alloc.next_id, 2)
    equal(len(set(ids)), 2, f"distinct ids from two concurrent calls {ids}")
    many = IdAllocator()
    batches = in_threads(lambda: [many.next_id() for _ in range(100)], 4)
    equal(len({i for batch in batches for i in batch}), 400, "distinct ids from 4 x 100 calls")


def ids_existing():
    from invcore.ids import IdAllocator

    alloc = IdAllocator()
    equal([alloc.next_id(), alloc.next_id()], ["MOV-000001", "MOV-000002"], "first ids")
    equal(IdAllocator("ADJ", 42).next_id(), "ADJ-000042", "custom prefix and start")


def snapshot_atomic():
    from invcore.snapshot import read_snapshot, write_snapshot

    check_atomic_write(write_snapshot, read_snapshot, "stock.json", {"AB-1234": 3}, {"AB-1234": object()})


def snapshot_existing():
    from invcore.snapshot import read_snapshot, write_snapshot

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.json"
        write_snapshot(path, {"AB-1234": 3, "CD-0001": 0})
        equal(read_snapshot(path), {"AB-1234": 3, "CD-0001": 0}, "round trip")
        path.write_text(json.dumps({"version": 2, "stock": {}}), encoding="utf-8")
        raises(ValueError, read_snapshot, path)


CHECKS = {f.__name__: f for f in [
    sku_rejects_bad, sku_existing, take_rejects_non_positive, transfer_atomic, stock_existing,
    ids_thread_safe, ids_existing, snapshot_atomic, snapshot_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
