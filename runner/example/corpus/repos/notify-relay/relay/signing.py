"""Signed inbound requests from partner systems."""

from __future__ import annotations

import hashlib
import hmac

TIMESTAMP_HEADER = "X-Relay-Timestamp"
SIGNATURE_HEADER = "X-Relay-Signature"


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def verify_request(secret: bytes, headers: dict[str, str], body: bytes, now: float) -> bool:
    """True when the request carries a valid signature."""
    timestamp = int(headers[TIMESTAMP_HEADER])
    return sign(secret, timestamp, body) == headers[SIGNATURE_HEADER]
