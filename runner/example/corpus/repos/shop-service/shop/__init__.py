"""A small order, inventory and billing service (standard library only)."""
