"""Dated model prices: turn known token counts into a cost, never guess a missing one.

A prices file (JSON or YAML) lists per model one or more dated entries::

    {"as_of": "2026-03-01",
     "models": {"model-a": [{"effective_from": "2025-06-01",
                             "input_per_mtok": 3.0, "output_per_mtok": 15.0,
                             "cached_input_per_mtok": 0.3,
                             "cache_write_per_mtok": 3.75}]}}

The short form ``{"model-a": {"input_per_mtok": …, "output_per_mtok": …}}`` (a single
undated entry per model) is accepted too. A ``null`` price means *unknown*: any cost
that would need it is ``None``, never 0.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ingest.errors import IngestError


class PriceEntry(BaseModel):
    """One model's prices in USD per million tokens, from ``effective_from`` on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    output_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cached_input_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_write_per_mtok: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Price of writing input to the prompt cache (Anthropic bills it apart)."""
    effective_from: date | None = None
    note: str | None = None


class _PricesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    as_of: date | None = None
    currency: str = "USD"
    models: dict[str, PriceEntry | list[PriceEntry]]


@dataclass(frozen=True)
class PriceTable:
    """Per-model dated price entries, sorted oldest first."""

    entries: dict[str, tuple[PriceEntry, ...]]
    source: str | None = None
    declared_as_of: date | None = None

    @classmethod
    def load(cls, path: Path) -> PriceTable:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise IngestError(f"{path}: cannot read prices file ({e.strerror})") from e
        except UnicodeDecodeError:
            raise IngestError(f"{path}: prices file is not UTF-8 text; give a JSON or YAML file") from None
        try:
            if path.suffix.lower() in {".yaml", ".yml"}:
                import yaml

                raw = yaml.safe_load(text)
            else:
                raw = json.loads(text)
        except (ValueError, ImportError) as e:
            raise IngestError(f"{path}: prices file is not valid JSON/YAML: {e}") from e
        except Exception as e:  # yaml.YAMLError; yaml is imported lazily
            if type(e).__module__.split(".")[0] != "yaml":
                raise
            where = getattr(e, "problem_mark", None)
            line = f" (line {where.line + 1})" if where is not None else ""
            raise IngestError(f"{path}: prices file is not valid YAML{line}; fix the file") from None
        return cls.from_dict(raw, source=str(path))

    @classmethod
    def from_dict(cls, raw: object, source: str | None = None) -> PriceTable:
        where = source or "prices"
        if not isinstance(raw, dict):
            raise IngestError(f"{where}: expected a JSON object of models → prices")
        if "models" not in raw:  # short form: {model: entry}
            raw = {"models": raw}
        try:
            parsed = _PricesFile.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(
                str(p) for p in err["loc"] if not str(p).startswith(("PriceEntry", "list["))
            )
            raise IngestError(
                f"{where}: field {loc}: {err['msg']} "
                "(expected input_per_mtok, output_per_mtok, optional cached_input_per_mtok, "
                "cache_write_per_mtok, effective_from)"
            ) from e
        entries: dict[str, tuple[PriceEntry, ...]] = {}
        for model, value in parsed.models.items():
            items = value if isinstance(value, list) else [value]
            if not items:
                raise IngestError(f"{where}: field models.{model}: empty list of prices")
            if len(items) > 1 and any(i.effective_from is None for i in items):
                raise IngestError(
                    f"{where}: field models.{model}: several entries need an effective_from date each"
                )
            dates = [i.effective_from for i in items]
            if len(set(dates)) != len(dates):
                raise IngestError(f"{where}: field models.{model}: two entries share an effective_from date")
            items = sorted(items, key=lambda i: i.effective_from or date.min)
            entries[model] = tuple(items)
        return cls(entries=entries, source=source, declared_as_of=parsed.as_of)

    @property
    def as_of(self) -> str | None:
        """The declared ``as_of`` date, else the newest ``effective_from``; ISO string."""
        if self.declared_as_of:
            return self.declared_as_of.isoformat()
        dates = [e.effective_from for es in self.entries.values() for e in es if e.effective_from]
        return max(dates).isoformat() if dates else None

    def entry(self, model: str | None, on: date | datetime | None = None) -> PriceEntry | None:
        """The entry in force on ``on`` (latest with date ≤ on), the only one, or None."""
        if model is None or model not in self.entries:
            return None
        items = self.entries[model]
        if len(items) == 1:
            return items[0]
        if on is None:
            return items[-1]
        day = on.date() if isinstance(on, datetime) else on
        valid = [e for e in items if e.effective_from is not None and e.effective_from <= day]
        return valid[-1] if valid else None

    def cost(
        self,
        model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        cache_read_tokens: int | None = None,
        on: date | datetime | None = None,
        cache_write_tokens: int | None = None,
    ) -> float | None:
        """Cost in USD, or None when a needed price or token count is unknown.

        ``input_tokens`` are the uncached input tokens; ``cache_read_tokens`` and
        ``cache_write_tokens`` (when not None and non-zero) are priced at
        ``cached_input_per_mtok`` / ``cache_write_per_mtok``, which must then be known.
        The cost rule that calls this is ``ingest.cost.resolve_cost``.
        """
        e = self.entry(model, on)
        if e is None or input_tokens is None or output_tokens is None:
            return None
        if e.input_per_mtok is None or e.output_per_mtok is None:
            return None
        total = input_tokens * e.input_per_mtok + output_tokens * e.output_per_mtok
        if cache_read_tokens:
            if e.cached_input_per_mtok is None:
                return None
            total += cache_read_tokens * e.cached_input_per_mtok
        if cache_write_tokens:
            if e.cache_write_per_mtok is None:
                return None
            total += cache_write_tokens * e.cache_write_per_mtok
        cost = total / 1_000_000
        return cost if math.isfinite(cost) else None
