"""How a gateway is set up: its modes, where each provider's calls go, and the setup error.

docs/gateway.md describes the modes; ``runner.gateway.run`` builds these from the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.gateway.records import GatewayMode, Provider

MODES: tuple[GatewayMode, ...] = ("forward", "record", "replay", "scripted")


@dataclass(frozen=True)
class Upstream:
    """Where ``forward``/``record`` send a provider's calls, and which key they add."""

    base_url: str
    """e.g. ``https://api.anthropic.com``; the agent's ``/v1/...`` path is appended."""
    api_key_env: str | None = None
    """Variable of the gateway's environment holding the key. When set, the agent's own
    ``x-api-key``/``authorization`` is dropped and this key sent instead; when None the
    agent's header passes through (and is still never stored)."""


DEFAULT_UPSTREAMS: dict[Provider, Upstream] = {
    "anthropic": Upstream("https://api.anthropic.com", "ANTHROPIC_API_KEY"),
    "openai": Upstream("https://api.openai.com", "OPENAI_API_KEY"),
}


class GatewayConfigError(ValueError):
    """The gateway was set up wrongly (the runner reports it before any trial starts)."""
