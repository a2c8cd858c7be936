"""The shape every tabular analysis answer shares: one return type per question.

Each question (``consistency``, ``pareto``, ``failures``, ``familiarity``, ``latency``,
``flags``) returns a subclass of :class:`RowsResult`: plain ``rows`` (one dict per
configuration [× slice] [× class], keys in ``SCHEMA`` order), the slice columns ``by``,
and ``warnings``. ``table`` is the same as a polars DataFrame with a fixed schema (built
on demand, so the CLI never imports polars), ``as_dict()`` the JSON form (keys in
docs/analysis.md), ``records()`` the flat rows a CSV writer takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from analysis.data import CONFIG_KEYS

if TYPE_CHECKING:
    import polars as pl

CONFIG_SCHEMA = dict.fromkeys(CONFIG_KEYS, "String")


def _dtype(name: str) -> Any:
    import polars as pl

    if name.startswith("List(") and name.endswith(")"):
        return pl.List(_dtype(name[5:-1]))
    return getattr(pl, name)


@dataclass
class RowsResult:
    """Rows of one analysis question, with the slice columns and the warnings it raised."""

    rows: list[dict[str, Any]]
    by: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    universes: list[Any] = field(default_factory=list)  # analysis.tasks.TaskUniverse

    SCHEMA: ClassVar[dict[str, str]] = {}
    """Column → polars dtype name; the slice columns (strings) follow the config keys
    (and ``universe`` when the schema has it right after them)."""
    TASK_SETS: ClassVar[bool] = False
    """Whether the question reads the common tasks (``analysis.tasks``); its JSON form
    then lists them under ``universes``."""

    @property
    def columns(self) -> list[str]:
        keys = list(self.SCHEMA)
        at = len(CONFIG_KEYS) if keys[:len(CONFIG_KEYS)] == CONFIG_KEYS else 0
        if keys[at:at + 1] == ["universe"]:
            at += 1
        return [*keys[:at], *self.by, *keys[at:]]

    @property
    def table(self) -> pl.DataFrame:
        import polars as pl

        schema = {c: _dtype(self.SCHEMA.get(c, "String")) for c in self.columns}
        return pl.DataFrame([{c: r.get(c) for c in self.columns} for r in self.rows],
                            schema=schema, orient="row")

    @property
    def height(self) -> int:
        return len(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def as_dict(self) -> dict[str, Any]:
        from analysis.jsonout import clean

        out: dict[str, Any] = {"rows": [{c: r.get(c) for c in self.columns} for r in self.rows]}
        if self.TASK_SETS:
            out["universes"] = [u.as_dict() for u in self.universes]
        out["warnings"] = list(self.warnings)
        return clean(out)

    def records(self) -> list[dict[str, Any]]:
        """Flat rows for CSV: lists joined with ``;``, values JSON-clean."""
        from analysis.jsonout import clean

        out = []
        for r in self.as_dict()["rows"]:
            out.append({k: ";".join(map(str, v)) if isinstance(v, list) else v
                        for k, v in r.items()})
        return clean(out)

    @staticmethod
    def from_frame(df: pl.DataFrame) -> list[dict[str, Any]]:
        return df.to_dicts()


class EligibilityRows(RowsResult):
    """One row per configuration: role, eligible, reasons (``analysis.eligibility``)."""

    SCHEMA: ClassVar[dict[str, str]] = {
        **CONFIG_SCHEMA, "simulated": "Boolean", "role": "String", "eligible": "Boolean", "reasons": "List(String)",
        "notes": "List(String)", "invalid": "Int64", "secrets_leaked": "Int64",
        "tampered_runs": "List(String)", "blocker_regressions": "Int64"}
