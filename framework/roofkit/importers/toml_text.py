"""Writing a spec table as TOML: top-level keys, then one ``[table]`` per nested mapping.

Specs hold strings, numbers, booleans, lists of those and one level of tables, which is all
this writer handles (the standard library reads TOML but does not write it).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"TOML cannot hold {v!r} here")
        return str(int(v)) if v == int(v) and abs(v) < 1e15 else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a TOML basic string
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def dumps(table: Mapping, header: str = "") -> str:
    """``table`` as TOML text; ``header`` lines become ``#`` comments at the top."""
    lines = [f"# {h}".rstrip() for h in header.splitlines()] if header else []
    for k, v in table.items():
        if not isinstance(v, Mapping):
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, v in table.items():
        if isinstance(v, Mapping) and v:
            lines += ["", f"[{_key(k)}]"]
            lines += [f"{_key(kk)} = {_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
