"""A notification relay: messages, signed inbound requests, fan-out, rate limits."""
