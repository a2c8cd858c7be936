"""Plain-text lines for the rollout commands (``rules check``, ``gc``): one line per finding,
the figures beside it, so a CI log says why a pipeline stopped (docs/rollout.md)."""

from __future__ import annotations

from typing import Any


def rules_lines(check: Any) -> list[str]:
    """``FIRED``/``resumed``/``ok``/``not evaluated`` lines, fired first, then a total."""
    from analysis.rollout_layouts import (
        STATUS_WORDS,
        configuration,
        resumed_text,
        rule_figures,
        rule_window,
    )

    out = []
    for r in check.results:
        line = (f"{STATUS_WORDS[r.status]:<13} {r.rule.id}  {configuration(r)}: {rule_figures(r)}; "
                f"{rule_window(r)}; owner: {', '.join(r.rule.owner)}")
        if r.resumed:
            line += f"; {resumed_text(r)}"
        out.append(line)
    fired = len(check.fired)
    out.append(f"{fired} of {len(check.results)} rule(s) fired" + (
        "; the rollout stops until an owner resumes (trialhouse rules resume RULE --by NAME --reason TEXT)"
        if fired else ""))
    return out
