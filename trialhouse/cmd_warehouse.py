"""CLI commands for the warehouse area (thin: parse options, call one library function, print)."""

from __future__ import annotations

from trialhouse.app import app  # noqa: F401
