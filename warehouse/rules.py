"""Row rules every reader of the warehouse shares, each written once in ``warehouse/sql/``.

``trial_status(source)`` is the valid-trial rule (``sql/trial_status.sql``): the rows of
``source`` plus ``valid`` and ``solved``. The analyses read trials through it and the
rollups are built through it, so "infra_error and invalid are excluded from rates" is
one line of SQL instead of a ``NOT IN`` in every query. It is a relation, not a stored
view, so it works on a read-only connection to a warehouse of any age.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

INSPECTING_SOURCES = ("trialhouse",)
"""Sources whose trials had their patches inspected (our runner): other sources' flag counts
are unknown, whatever an importer wrote."""


@cache
def _trial_status_sql() -> str:
    text = resources.files("warehouse").joinpath("sql", "trial_status.sql").read_text("utf-8")
    inspecting = "(" + ", ".join(f"'{s}'" for s in INSPECTING_SOURCES) + ")"  # constants
    return "\n".join(line for line in text.splitlines()
                     if not line.startswith("--")).replace("{inspecting}", inspecting)


def trial_status(source: str = "trials") -> str:
    """``(SELECT *, valid, solved FROM source)``: a parenthesised relation for FROM.

    ``source`` is an internal relation (a table or view name, or a ``read_parquet(...)``
    call built from our own paths), never user input.
    """
    return "(" + _trial_status_sql().replace("{source}", source).strip() + ")"
