"""JSON form of analysis results: +∞ → "inf", NaN/unknown → null, stable key order."""

from __future__ import annotations

import math
from datetime import date, datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl


def clean(value: Any) -> Any:
    """Make a value JSON-safe without NaN/Infinity literals."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Fraction):
        return clean(float(value))
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def frame_records(df: pl.DataFrame) -> list[dict]:
    """Rows of a DataFrame as JSON-safe dicts, columns in frame order."""
    return [clean(row) for row in df.to_dicts()]
