"""Checks for the notify-relay repository (targets and regressions).

Each check observes the code under test in a child process (``see``) and declares what it
must observe (``@check``); the trusted parent in ``_harness`` compares the two.
"""

from __future__ import annotations

import hashlib
import hmac

from _harness import RacyDict, check, in_threads, outcome, raised, run

BAD_NUMBERS = ("555-1234", "+12ab34567", "+", "0044207946", "+0123456789")


@check({**{f"sms to {bad!r}": raised("MessageError") for bad in BAD_NUMBERS}, "valid number": "+14155550123"})
def sms_recipient_checked(see):
    from relay.messages import MessageError, build_message

    for bad in BAD_NUMBERS:
        see(f"sms to {bad!r}", outcome(MessageError, build_message, "sms", bad, "hi"))
    see("valid number", build_message("sms", " +14155550123 ", "hi")["recipient"])


@check({"e-mail message": "email", "sms message": "+447911123456", "a fax": raised("MessageError"),
        "an empty body": raised("MessageError"), "a bad address": raised("MessageError")})
def messages_existing(see):
    from relay.messages import MessageError, build_message

    see("e-mail message", build_message("email", "ops@example.com", "hi")["channel"])
    see("sms message", build_message("sms", "+447911123456", "hi")["recipient"])
    see("a fax", outcome(MessageError, build_message, "fax", "x", "hi"))
    see("an empty body", outcome(MessageError, build_message, "email", "ops@example.com", ""))
    see("a bad address", outcome(MessageError, build_message, "email", "not-an-address", "hi"))


def _headers(signing, secret, ts, body):
    return {signing.TIMESTAMP_HEADER: str(ts), signing.SIGNATURE_HEADER: signing.sign(secret, ts, body)}


@check({"fresh request": True, "replayed old request": False, "timestamp from the future": False})
def replay_window(see):
    from relay import signing

    secret, body, ts = b"partner-key", b'{"to": "+14155550123"}', 1_700_000_000
    headers = _headers(signing, secret, ts, body)
    see("fresh request", signing.verify_request(secret, headers, body, now=ts + 5))
    see("replayed old request", signing.verify_request(secret, headers, body, now=ts + 301))
    see("timestamp from the future", signing.verify_request(secret, headers, body, now=ts - 301))


@check({"no headers": False, "no timestamp": False, "non-numeric timestamp": False})
def malformed_headers(see):
    from relay import signing

    secret, body, ts = b"partner-key", b"{}", 1_700_000_000
    headers = _headers(signing, secret, ts, body)
    see("no headers", signing.verify_request(secret, {}, body, now=ts))
    only_sig = {signing.SIGNATURE_HEADER: headers[signing.SIGNATURE_HEADER]}
    see("no timestamp", signing.verify_request(secret, only_sig, body, now=ts))
    bad_ts = {**headers, signing.TIMESTAMP_HEADER: "yesterday"}
    see("non-numeric timestamp", signing.verify_request(secret, bad_ts, body, now=ts))


@check({"signature format": "v1=" + hmac.new(b"k", b"100.x", hashlib.sha256).hexdigest(), "valid request": True,
        "tampered body": False})
def signing_existing(see):
    from relay import signing

    see("signature format", signing.sign(b"k", 100, b"x"))
    headers = _headers(signing, b"k", 100, b"x")
    see("valid request", signing.verify_request(b"k", headers, b"x", now=100))
    see("tampered body", signing.verify_request(b"k", headers, b"y", now=100))


@check({"deliveries for tenant-a": 1, "messages received by (tenant-a, tenant-b)": [1, 0]})
def topic_isolation(see):
    from relay.hub import Hub

    hub, got_a, got_b = Hub(), [], []
    hub.subscribe("tenant-a", "orders", got_a.append)
    hub.subscribe("tenant-b", "orders", got_b.append)
    see("deliveries for tenant-a", hub.publish("tenant-a", "orders", {"id": 1}))
    see("messages received by (tenant-a, tenant-b)", (len(got_a), len(got_b)))


@check({"deliveries": 1, "delivered message": [{"id": 1, "tenant_id": "t"}], "deliveries after unsubscribe": 0,
        "deliveries to an empty topic": 0})
def hub_existing(see):
    from relay.hub import Hub

    hub, got = Hub(), []
    hub.subscribe("t", "orders", got.append)
    see("deliveries", hub.publish("t", "orders", {"id": 1}))
    see("delivered message", list(got))
    hub.unsubscribe("t", "orders", got.append)
    see("deliveries after unsubscribe", hub.publish("t", "orders", {"id": 2}))
    see("deliveries to an empty topic", hub.publish("t", "nobody", {"id": 3}))


@check({"grants for one token and two concurrent callers": [False, True], "grants from a 50-token bucket": 50})
def bucket_thread_safe(see):
    from relay.ratelimit import TokenBucket

    bucket = TokenBucket(1, 0.0, clock=lambda: 1000.0)
    bucket._state = RacyDict(bucket._state, "tokens", pause_at=2)
    see("grants for one token and two concurrent callers", sorted(in_threads(bucket.try_acquire, 2)))
    many = TokenBucket(50, 0.0, clock=lambda: 1000.0)
    results = in_threads(lambda: [many.try_acquire() for _ in range(10)], 16)
    see("grants from a 50-token bucket", sum(r.count(True) for r in results))


@check({"grants from a full bucket": 10, "tokens after 0.5 s at 5/s": 2.5, "grants after refill": 2,
        "refill is capped at capacity": 10.0})
def ratelimit_existing(see):
    from relay.ratelimit import TokenBucket

    now = [0.0]
    bucket = TokenBucket(10, 5.0, clock=lambda: now[0])
    see("grants from a full bucket", sum(bucket.try_acquire() for _ in range(12)))
    now[0] = 0.5
    see("tokens after 0.5 s at 5/s", bucket.available())
    see("grants after refill", sum(bucket.try_acquire() for _ in range(5)))
    now[0] = 100.0
    see("refill is capped at capacity", bucket.available())


CHECKS = {f.__name__: f for f in [
    sms_recipient_checked, messages_existing, replay_window, malformed_headers, signing_existing,
    topic_isolation, hub_existing, bucket_thread_safe, ratelimit_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
