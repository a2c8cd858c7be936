"""Stop rules laid out alike in the terminal (``trialhouse rules check``) and the report's
stop-rules section: one line of figures per rule, the table of every rule (docs/rollout.md)."""

from __future__ import annotations

from typing import Any

from analysis import formatting as fmt
from analysis.document import Table, columns

STATUS_WORDS = {"fired": "FIRED", "resumed": "resumed", "ok": "ok", "not_evaluated": "not evaluated"}


def rule_figures(r: Any) -> str:
    """``regression_free_rate 85.0% (17/20, 95% CI 64.0–94.8%), threshold below 95.0%``."""
    rule = r.rule
    if r.value is None:
        return r.reason or fmt.DASH
    if r.k is not None:
        value = f"{rule.metric} {fmt.rate(r.value)} ({r.k}/{r.n}, 95% CI {fmt.interval(r.low, r.high)})"
        limit = fmt.rate(rule.threshold)
    else:
        value = f"{rule.metric} {fmt.usd(r.value)} ({fmt.usd(r.spend)} over {r.n} accepted)"
        limit = fmt.usd(rule.threshold)
    return f"{value}, threshold {rule.direction} {limit}"


def rule_window(r: Any) -> str:
    """``last 2 run(s): w2, w3`` or ``last 7 day(s) until 2026-03-17 09:00 UTC (w3)``."""
    w = r.window
    runs = w.get("runs") or []
    listed = fmt.listing(runs, limit=3) if runs else "no run"
    if w.get("unit") == "days":
        return f"last {w['last']} day(s) until {fmt.when(w['until'])} ({listed})"
    return f"last {w['last']} run(s): {listed}"


def configuration(r: Any) -> str:
    return str(r.config.get("variant") or r.config.get("config_id") or r.rule.scope.config)


def resumed_text(r: Any) -> str:
    if not r.resumed:
        return ""
    return f"resumed by {r.resumed['by']} ({fmt.when(r.resumed['at'])}): {r.resumed['reason']}"


def rules_table(check: Any) -> Table:
    """Every rule, fired first: status, rule, configuration, figures, window, owner, decision."""
    return Table(
        "Stop rules (fired first)",
        columns(["status", "rule", "configuration", "figures", "window", "owner", "decision"],
                identifying=2),
        [[STATUS_WORDS[r.status], r.rule.id, configuration(r), rule_figures(r), rule_window(r),
          ", ".join(r.rule.owner), resumed_text(r) or fmt.DASH] for r in check.results])
