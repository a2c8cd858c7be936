"""Outgoing notifications: e-mail and SMS messages."""

from __future__ import annotations

CHANNELS = ("email", "sms")


class MessageError(ValueError):
    """A message that cannot be sent."""


def build_message(channel: str, recipient: str, body: str) -> dict:
    if channel not in CHANNELS:
        raise MessageError(f"unknown channel {channel!r}")
    if not body:
        raise MessageError("empty body")
    if channel == "email" and "@" not in recipient:
        raise MessageError(f"not an e-mail address: {recipient!r}")
    return {"channel": channel, "recipient": recipient.strip(), "body": body}
