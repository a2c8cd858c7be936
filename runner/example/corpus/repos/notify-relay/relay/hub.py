"""Topic subscriptions and fan-out for the tenants sharing one relay."""

from __future__ import annotations

from collections.abc import Callable

Handler = Callable[[dict], None]


class Hub:
    def __init__(self) -> None:
        self._subscribers: dict[str, list[tuple[str, Handler]]] = {}

    def subscribe(self, tenant_id: str, topic: str, handler: Handler) -> None:
        self._subscribers.setdefault(topic, []).append((tenant_id, handler))

    def unsubscribe(self, tenant_id: str, topic: str, handler: Handler) -> None:
        entries = self._subscribers.get(topic, [])
        self._subscribers[topic] = [e for e in entries if e != (tenant_id, handler)]

    def publish(self, tenant_id: str, topic: str, message: dict) -> int:
        """Deliver a message to the topic's subscribers; returns how many received it."""
        delivered = 0
        for _subscriber_tenant, handler in self._subscribers.get(topic, []):
            handler({**message, "tenant_id": tenant_id})
            delivered += 1
        return delivered
