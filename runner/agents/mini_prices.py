"""Can mini-swe-agent price this model? Checked by ``validate`` before a cost limit is used
(docs/agents.md#settings).

mini turns ``max_budget_usd`` into ``--cost-limit``, which needs litellm's price for the
model: for a model litellm does not price, mini stops at its first call with a
``RuntimeError`` (measured, mini-swe-agent 2.4.6), and a price of 0 would never stop it.
The price list is the one bundled with the mini installation's litellm (the runner sets
``LITELLM_LOCAL_MODEL_COST_MAP=True``, so that file is what mini reads), found next to the
binary without starting Python (importing litellm takes seconds).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

PRICE_FILE = "model_prices_and_context_window_backup.json"


def price_list(binary: str) -> Path | None:
    """litellm's bundled price list of the virtualenv ``binary`` (``<venv>/bin/mini``) lives in."""
    venv = Path(os.path.realpath(binary)).parent.parent
    found = sorted(venv.glob(f"lib/python3*/site-packages/litellm/{PRICE_FILE}"))
    return found[-1] if found else None


def litellm_model(model: str) -> str:
    """The model name mini passes to litellm (``runner.agents.harness``: ``openai/`` unless prefixed)."""
    return model if "/" in model else f"openai/{model}"


def priced(prices: dict[str, object], model: str) -> bool:
    """litellm prices ``model`` (looked up with its provider prefix, then without) above 0."""
    for key in (model, model.split("/", 1)[-1]):
        entry = prices.get(key)
        if isinstance(entry, dict) and any(isinstance(entry.get(k), int | float) and entry[k] > 0
                                           for k in ("input_cost_per_token", "output_cost_per_token")):
            return True
    return False


def budget_problem(binary: str, model: str, budget: float | None) -> str | None:
    """Why a cost limit cannot work for ``model``, with the fix; None when it can (or when
    the price list cannot be found: the run then reports mini's own error)."""
    if budget is None:
        return None
    path = price_list(binary)
    if path is None:
        return None
    try:
        prices = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    name = litellm_model(model)
    if not isinstance(prices, dict) or priced(prices, name):
        return None
    return (f"mini-swe-agent's litellm has no price for {name} ({path}), so a cost limit of "
            f"${budget:g} cannot work (mini stops at its first call): remove max_budget_usd (the gateway "
            "still measures every token; price them in analysis), or use a model litellm prices")
