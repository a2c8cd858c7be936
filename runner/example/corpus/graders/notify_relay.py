"""Checks for the notify-relay repository (targets and regressions)."""

from __future__ import annotations

import hashlib
import hmac

from _harness import RacyDict, equal, in_threads, raises, run


def sms_recipient_checked():
    from relay.messages import MessageError, build_message

    for bad in ("555-1234", "+12ab34567", "+", "0044207946", "+0123456789"):
        raises(MessageError, build_message, "sms", bad, "hi")
    equal(build_message("sms", " +14155550123 ", "hi")["recipient"], "+14155550123", "valid number")


def messages_existing():
    from relay.messages import MessageError, build_message

    equal(build_message("email", "ops@example.com", "hi")["channel"], "email", "e-mail message")
    equal(build_message("sms", "+447911123456", "hi")["recipient"], "+447911123456", "sms message")
    raises(MessageError, build_message, "fax", "x", "hi")
    raises(MessageError, build_message, "email", "ops@example.com", "")
    raises(MessageError, build_message, "email", "not-an-address", "hi")


def _headers(signing, secret, ts, body):
    return {signing.TIMESTAMP_HEADER: str(ts), signing.SIGNATURE_HEADER: signing.sign(secret, ts, body)}


def replay_window():
    from relay import signing

    secret, body, ts = b"partner-key", b'{"to": "+14155550123"}', 1_700_000_000
    headers = _headers(signing, secret, ts, body)
    equal(signing.verify_request(secret, headers, body, now=ts + 5), True, "fresh request")
    equal(signing.verify_request(secret, headers, body, now=ts + 301), False, "replayed old request")
    equal(signing.verify_request(secret, headers, body, now=ts - 301), False, "timestamp from the future")


def malformed_headers():
    from relay import signing

    secret, body, ts = b"partner-key", b"{}", 1_700_000_000
    headers = _headers(signing, secret, ts, body)
    equal(signing.verify_request(secret, {}, body, now=ts), False, "no headers")
    only_sig = {signing.SIGNATURE_HEADER: headers[signing.SIGNATURE_HEADER]}
    equal(signing.verify_request(secret, only_sig, body, now=ts), False, "no timestamp")
    bad_ts = {**headers, signing.TIMESTAMP_HEADER: "yesterday"}
    equal(signing.verify_request(secret, bad_ts, body, now=ts), False, "non-numeric timestamp")


def signing_existing():
    from relay import signing

    expected = "v1=" + hmac.new(b"k", b"100.x", hashlib.sha256).hexdigest()
    equal(signing.sign(b"k", 100, b"x"), expected, "signature format")
    headers = _headers(signing, b"k", 100, b"x")
    equal(signing.verify_request(b"k", headers, b"x", now=100), True, "valid request")
    equal(signing.verify_request(b"k", headers, b"y", now=100), False, "tampered body")


def topic_isolation():
    from relay.hub import Hub

    hub, got_a, got_b = Hub(), [], []
    hub.subscribe("tenant-a", "orders", got_a.append)
    hub.subscribe("tenant-b", "orders", got_b.append)
    equal(hub.publish("tenant-a", "orders", {"id": 1}), 1, "deliveries for tenant-a")
    equal((len(got_a), len(got_b)), (1, 0), "messages received by (tenant-a, tenant-b)")


def hub_existing():
    from relay.hub import Hub

    hub, got = Hub(), []
    hub.subscribe("t", "orders", got.append)
    equal(hub.publish("t", "orders", {"id": 1}), 1, "deliveries")
    equal(got, [{"id": 1, "tenant_id": "t"}], "delivered message")
    hub.unsubscribe("t", "orders", got.append)
    equal(hub.publish("t", "orders", {"id": 2}), 0, "deliveries after unsubscribe")
    equal(hub.publish("t", "nobody", {"id": 3}), 0, "deliveries to an empty topic")


def bucket_thread_safe():
    from relay.ratelimit import TokenBucket

    bucket = TokenBucket(1, 0.0, clock=lambda: 1000.0)
    bucket._state = RacyDict(bucket._state, "tokens", pause_at=2)
    granted = in_threads(bucket.try_acquire, 2)
    equal(sorted(granted), [False, True], "grants for one token and two concurrent callers")
    many = TokenBucket(50, 0.0, clock=lambda: 1000.0)
    results = in_threads(lambda: [many.try_acquire() for _ in range(10)], 16)
    equal(sum(r.count(True) for r in results), 50, "grants from a 50-token bucket")


def ratelimit_existing():
    from relay.ratelimit import TokenBucket

    now = [0.0]
    bucket = TokenBucket(10, 5.0, clock=lambda: now[0])
    equal(sum(bucket.try_acquire() for _ in range(12)), 10, "grants from a full bucket")
    now[0] = 0.5
    equal(bucket.available(), 2.5, "tokens after 0.5 s at 5/s")
    equal(sum(bucket.try_acquire() for _ in range(5)), 2, "grants after refill")
    now[0] = 100.0
    equal(bucket.available(), 10.0, "refill is capped at capacity")


CHECKS = {f.__name__: f for f in [
    sms_recipient_checked, messages_existing, replay_window, malformed_headers, signing_existing,
    topic_isolation, hub_existing, bucket_thread_safe, ratelimit_existing,
]}

if __name__ == "__main__":
    run(CHECKS)
