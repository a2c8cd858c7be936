from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from ingest.errors import IngestError
from ingest.prices import PriceTable

from .conftest import EXAMPLES


def _table(tmp_path, obj, name="prices.json"):
    p = tmp_path / name
    p.write_text(json.dumps(obj) if name.endswith(".json") else obj, encoding="utf-8")
    return PriceTable.load(p)


def test_dated_entries_pick_latest_not_after_the_day(tmp_path):
    t = _table(tmp_path, {"models": {"m": [
        {"effective_from": "2026-02-01", "input_per_mtok": 2.0, "output_per_mtok": 10.0},
        {"effective_from": "2025-01-01", "input_per_mtok": 4.0, "output_per_mtok": 20.0},
    ]}})
    # 1M in + 100k out: old prices 4 + 2 = 6.0, new prices 2 + 1 = 3.0
    assert t.cost("m", 1_000_000, 100_000, on=date(2026, 1, 31)) == pytest.approx(6.0)
    assert t.cost("m", 1_000_000, 100_000, on=datetime(2026, 2, 1, tzinfo=UTC)) == pytest.approx(3.0)
    assert t.cost("m", 1_000_000, 100_000) == pytest.approx(3.0)  # no date → newest
    assert t.cost("m", 1_000_000, 100_000, on=date(2024, 12, 31)) is None  # before any entry
    assert t.as_of == "2026-02-01"


def test_single_entry_applies_regardless_of_date_and_short_form(tmp_path):
    t = _table(tmp_path, {"m": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}})
    assert t.cost("m", 500_000, 250_000, on=date(2000, 1, 1)) == pytest.approx(1.0)
    assert t.as_of is None


def test_unknown_is_none_never_zero(tmp_path):
    t = _table(tmp_path, {"as_of": "2026-03-01", "models": {
        "priced": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
        "nullprice": {"input_per_mtok": None, "output_per_mtok": 2.0},
    }})
    assert t.as_of == "2026-03-01"
    assert t.cost("missing-model", 10, 10) is None
    assert t.cost("nullprice", 10, 10) is None
    assert t.cost("priced", None, 10) is None
    assert t.cost("priced", 10, None) is None
    assert t.cost("priced", 0, 0) == 0.0  # known zero tokens cost a known zero
    # cache reads need a cached price
    assert t.cost("priced", 10, 10, cache_read_tokens=5) is None
    assert t.cost("priced", 1_000_000, 0, cache_read_tokens=0) == pytest.approx(1.0)


def test_cached_input_price(tmp_path):
    t = _table(tmp_path, {"m": {"input_per_mtok": 3.0, "output_per_mtok": 15.0, "cached_input_per_mtok": 0.3}})
    assert t.cost("m", 1_000_000, 1_000_000, cache_read_tokens=10_000_000) == pytest.approx(3 + 15 + 3)


def test_yaml_prices(tmp_path):
    t = _table(tmp_path, "models:\n  m:\n    - effective_from: 2026-01-01\n      input_per_mtok: 1\n      output_per_mtok: 1\n", "p.yaml")
    assert t.cost("m", 1_000_000, 1_000_000) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("obj", "needle"),
    [
        ({"m": {"input_per_mtok": -1, "output_per_mtok": 1}}, "field models.m.input_per_mtok:"),
        ({"m": {"input_per_mtok": "cheap", "output_per_mtok": 1}}, "input_per_mtok"),
        ({"m": {"input_usd": 1}}, "input_usd"),
        ({"m": [{"input_per_mtok": 1, "output_per_mtok": 1}, {"input_per_mtok": 2, "output_per_mtok": 2}]}, "effective_from"),
        ({"m": {"input_per_mtok": 1, "output_per_mtok": 1, "effective_from": "yesterday"}}, "effective_from"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_prices_name_file_and_field(tmp_path, obj, needle):
    with pytest.raises(IngestError) as e:
        _table(tmp_path, obj)
    assert "prices.json" in str(e.value) and needle in str(e.value)


def test_not_json(tmp_path):
    p = tmp_path / "prices.json"
    p.write_text("{nope", encoding="utf-8")
    with pytest.raises(IngestError, match="prices.json"):
        PriceTable.load(p)
    with pytest.raises(IngestError, match="cannot read"):
        PriceTable.load(tmp_path / "absent.json")


def test_example_prices_load():
    t = PriceTable.load(EXAMPLES / "prices.json")
    assert t.as_of == "2026-02-15"
    assert t.cost("model-c", 1, 1) is None
    assert t.cost("model-a", 1_000_000, 0, on=date(2026, 1, 1)) == pytest.approx(3.0)
