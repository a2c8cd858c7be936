"""The cost rule, in one place: reported wins, else priced from known tokens, else unknown.

Used by the normaliser (our runs) and by every importer in ``ingest.formats``; the
warehouse's ``cost_source`` says which branch gave the number, and a null cost stays
null (unknown), never 0.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import NamedTuple, Protocol

from contract.values import as_amount


class Prices(Protocol):
    """What the rule needs of a price table (``ingest.prices.PriceTable``)."""

    @property
    def as_of(self) -> str | None: ...

    def cost(self, model: str | None, input_tokens: int | None, output_tokens: int | None,
             cache_read_tokens: int | None = None, on: date | datetime | None = None,
             cache_write_tokens: int | None = None) -> float | None: ...


class Cost(NamedTuple):
    usd: float | None
    source: str | None
    """``reported`` | ``priced`` | None (unknown)."""


UNKNOWN = Cost(None, None)


def resolve_cost(
    prices: Prices | None,
    model: str | None,
    *,
    reported: object = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    activity: int | None = None,
    on: date | datetime | None = None,
    zero_is_unpriced: bool = False,
) -> Cost:
    """The cost of one trial or stage.

    1. **Reported**: a finite amount ≥ 0 the source reported itself wins (anything else
       reported — text, NaN, a negative — counts as not reported).
    2. **Priced**: else, with a price table, from the known *uncached* ``input_tokens`` and
       ``output_tokens`` (both needed), plus ``cache_read_tokens``/``cache_write_tokens``
       when non-zero (then their prices are needed too); ``on`` picks the dated prices.
    3. **Unknown** otherwise: ``Cost(None, None)``.

    The one difference between sources, ``zero_is_unpriced``: a reported 0 next to evidence
    of work (any token count, or ``activity`` — API calls, or a total input count whose cached
    part is unknown — above 0) means "the tool did not price this", not "free", and is treated
    as not reported. True for Harbor (writes ``cost_usd: 0`` for models litellm cannot price),
    Inspect (``total_cost`` 0 when it has no price) and SWE-bench submissions (``cost: 0``
    with API calls). False for our runner and runs-jsonl, whose reporters write a cost only
    when they computed one: there 0 is a real 0 (a local model).

    Callers pass ``input_tokens=None`` when the uncached count is not known (Harbor without
    its cache split), so such a trial is never priced as if nothing were cached.
    """
    amount = as_amount(reported) if reported is not None else None
    if amount is not None and not (zero_is_unpriced and amount == 0 and any(
            (input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, activity))):
        return Cost(amount, "reported")
    if prices is None or input_tokens is None or output_tokens is None:
        return UNKNOWN
    usd = prices.cost(model, input_tokens, output_tokens, cache_read_tokens, on=on,
                      cache_write_tokens=cache_write_tokens)
    return UNKNOWN if usd is None else Cost(usd, "priced")
