"""Warehouse stock keeping: SKUs, bins, transfers, ids and snapshots."""
