"""A flat TOML writer for Codex's ``config.toml`` (docs/agents.md#settings): dotted keys and
one level of tables, strings, numbers, booleans and lists, which is all a provider entry and
``-c`` settings need (the standard library reads TOML but does not write it)."""

from __future__ import annotations

import json
from typing import Any


def to_toml(config: dict[str, Any]) -> str:
    """A flat TOML document: dotted keys become tables (``a.b`` = table ``a``, key ``b``)."""
    top: list[str] = []
    tables: dict[str, list[str]] = {}
    for name, value in config.items():
        if isinstance(value, dict):
            tables.setdefault(name, []).extend(f"{k} = {_toml(v)}" for k, v in value.items())
        elif "." in name:
            table, _, leaf = name.rpartition(".")
            tables.setdefault(table, []).append(f"{leaf} = {_toml(value)}")
        else:
            top.append(f"{name} = {_toml(value)}")
    parts = ["\n".join(top)] if top else []
    parts += [f"[{table}]\n" + "\n".join(lines) for table, lines in tables.items()]
    return "\n\n".join(parts) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise ValueError(f"config value {value!r}: only strings, numbers, booleans and lists")
