"""The seed-002 summary script's table, digit for digit (``summarize --format seed``).

Kept apart from ``analysis.summary``: it reproduces another program's printing (its z,
its rounding, Python's ``statistics.median``), so the two can be diffed line by line
(tests/analysis/test_analysis_seed.py runs the script itself).
"""

from __future__ import annotations

from analysis import stats
from analysis.summary import Summary


def _py_median(value: float | None, count: int) -> str:
    """Print a median as Python's statistics.median of ints would (int when n is odd)."""
    if count == 0 or value is None:
        return "0"
    if count % 2 == 1:
        return str(int(value))
    return str(float(value))


def seed_model(row: dict) -> str:
    """The model column as the script keys configurations: the model, or for a
    configuration that records none (the ``null`` and ``reference`` baselines, which share
    the harness ``trialhouse-builtin`` and its version) its variant name. The script's key
    is (model, harness, version): written as ``None`` both would be one configuration to
    it, and a runs.jsonl line needs a model string; the variant name is the identity every
    other output prints for them (docs/analysis.md)."""
    model = row.get("model")
    if model is not None:
        return str(model)
    return str(row.get("variant") or row.get("config_id") or "unknown")


def seed_lines(summary: Summary) -> list[str]:
    """The seed-002 script's table, tab-separated, header first (see docs/analysis.md).

    The header is the script's own, ``cost_per_solved`` included (the figure every other
    output calls ``cost_per_accepted``): this layout exists to be diffed against the script.
    """
    out = ["\t".join(["model", "harness", "version", "valid", "solved", "rate", "ci95",
                      "infra", "med_steps", "med_tokens", "cost", "cost_per_solved"])]
    rows = sorted(summary.rows, key=lambda r: (seed_model(r), str(r["harness"]),
                                               str(r["harness_version"])))
    for r in rows:
        valid, solved = r["valid"], r["solved"]
        lo, hi = stats.wilson(solved, valid, z=1.96)
        lo, hi = (lo or 0.0), (hi or 0.0)
        rate = solved / valid if valid else 0.0
        cost = r["cost_usd"]
        cost_s = "unknown" if cost is None else f"{cost:.4f}"
        if not solved:
            per = "—"
        else:
            per = "unknown" if cost is None else f"{cost / solved:.4f}"
        out.append("\t".join(map(str, [
            seed_model(r), r["harness"], r["harness_version"], valid, solved, f"{rate:.3f}",
            f"{lo:.2f}–{hi:.2f}", r["infra"], _py_median(r["med_steps"], valid),
            _py_median(r["med_tokens"], valid), cost_s, per,
        ])))
    return out
