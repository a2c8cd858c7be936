"""The one set of display formatters (analysis/formatting.py): numbers for people."""

from __future__ import annotations

import pytest

from analysis import formatting as fmt


@pytest.mark.parametrize(("value", "text"), [
    (2596070.0, "2,596,070"), (54734.5, "54,734.5"), (16.0, "16"), (None, "—"),
    (1e15, "1,000,000,000,000,000"), ("inf", "∞"),
])
def test_number_never_uses_scientific_notation(value, text) -> None:
    assert fmt.number(value) == text


def test_counts_percentages_and_money() -> None:
    assert fmt.count(1234567) == "1,234,567" and fmt.count(None) == "—"
    assert fmt.pct(16, 34) == "16/34 (47%)" and fmt.pct(3, 0) == "3/0 (—)"
    assert fmt.pct(12_000, 16_000) == "12,000/16,000 (75%)"
    assert fmt.usd(0.20812) == "$0.2081" and fmt.usd("inf") == "∞ (none accepted)"
    assert fmt.usd(None, 0.4) == "unknown (cost known for 40% of trials)"


def test_differences_use_a_true_minus_and_clip_to_the_possible_range() -> None:
    assert fmt.diff_ci(0.022, -0.031, 0.075) == "+2.2 pp (−3.1 to +7.5)"
    assert fmt.diff_ci(-0.9, -1.4, -0.2) == "−90.0 pp (−100.0 to −20.0)"
    assert fmt.signed(-0.2, unit=" s") == "−0.2 s" and fmt.signed(-0.0217, money=True) == "−$0.0217"
    assert fmt.ratio_change(0.184, 0.2) == "−8%" and fmt.ratio_change(1.0, 0.0) is None
    assert fmt.interval(-0.1, 1.2) == "0.0–100.0%"


def test_long_lists_are_cut_with_a_count() -> None:
    names = [f"config-{i}" for i in range(24)]
    assert fmt.listing(names) == "config-0, config-1, config-2 and 21 more"
    assert fmt.listing(names[:3]) == "config-0, config-1, config-2" and fmt.listing([]) == "—"


def test_labels_name_simulated_configurations_and_keep_the_id() -> None:
    row = {"config_id": "aa72aaa0652c7c9f", "variant": "sim-alpha", "simulated": True}
    assert fmt.label(row) == "sim-alpha SIMULATED"
    assert fmt.label_with_id(row) == "sim-alpha [aa72aaa0] SIMULATED"
    assert fmt.label_with_id({"config_id": "b1", "model": "m", "harness": "h",
                              "harness_version": "2"}) == "m / h@2 [b1]"
