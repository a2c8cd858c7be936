"""Incoming payment-provider webhooks."""

from __future__ import annotations

import json


class WebhookError(ValueError):
    """A webhook that cannot be accepted."""


def parse_webhook(body: bytes) -> dict:
    """Decode a webhook body; it must be a JSON object with an "event" field."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WebhookError(f"body is not JSON: {exc}") from exc
    if not isinstance(payload, dict) or "event" not in payload:
        raise WebhookError("body must be an object with an event field")
    return payload
