"""A small TOML writer for ``judge.toml`` (the standard library reads TOML but does not write it).

It writes what a bundle holds: tables of strings, integers, floats, booleans and lists of them,
nested tables, and ``None`` as a key listed under the table's ``unset`` (TOML has no null), so
that :func:`read_toml` gives back exactly the dict written: floats by ``repr`` (shortest round
trip), keys sorted, so the same dict always gives the same bytes.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")
UNSET = "unset"
"""The key under which a table lists its keys whose value is ``None``."""


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k, ensure_ascii=False)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        text = repr(v)
        return text if any(c in text for c in ".eEn") else text + ".0"  # 'inf', 'nan' are valid TOML
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def dumps_toml(data: Mapping[str, Any]) -> str:
    """``data`` as TOML text (keys sorted; ``None`` values listed under ``unset``)."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip() + "\n"


def _table(data: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in data.items() if isinstance(v, Mapping)}
    unset = sorted(k for k, v in scalars.items() if v is None)
    if path:
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
    for k in sorted(k for k, v in scalars.items() if v is not None):
        lines.append(f"{_key(k)} = {_value(scalars[k])}")
    if unset:
        lines.append(f"{UNSET} = {_value(unset)}")
    for k in sorted(tables):
        _table(tables[k], [*path, k], lines)


def read_toml(text: str) -> dict[str, Any]:
    """Parse TOML written by :func:`dumps_toml`, putting back the ``None`` values.

    Raises:
        tomllib.TOMLDecodeError: The text is not TOML.
    """
    return _restore(tomllib.loads(text))


def _restore(data: dict[str, Any]) -> dict[str, Any]:
    out = {k: _restore(v) if isinstance(v, dict) else v for k, v in data.items() if k != UNSET}
    for k in data.get(UNSET, []):
        out[k] = None
    return out
