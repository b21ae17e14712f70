"""Pieces shared by every spec: names, aliases, sources and provenance."""

from __future__ import annotations

import re

_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_key(instance, attribute, value: str) -> None:
    """Registry keys are lowercase and hyphenated: ``h100-sxm``, ``llama-3.1-8b``."""
    if not _KEY.match(value):
        fixed = re.sub(r"[^a-z0-9._-]+", "-", value.lower()).strip("-")
        raise ValueError(f"{value!r} is not a lowercase hyphenated key; write {fixed!r}")


def check_symbol(instance, attribute, value: str | None) -> None:
    if value is not None and not _SYMBOL.match(value):
        raise ValueError(f"symbol {value!r} is not a Python identifier (write e.g. 'H100')")


def symbol_from(name: str) -> str:
    """A namespace attribute derived from a key: ``llama-3.1-8b`` → ``Llama_3_1_8b``."""
    parts = re.split(r"[^A-Za-z0-9]+", name)
    out = "_".join(p[:1].upper() + p[1:] for p in parts if p)
    return out if out[:1].isalpha() else "_" + out


def provenance_problems(spec, numeric_paths: list[str]) -> list[tuple[str, str]]:
    """Each numeric field needs a provenance entry naming a source key, or 'derived:' /
    'assumption:' with its reasoning. Returns (key path, message) pairs."""
    problems = []
    sources = spec.sources
    prov = spec.provenance
    for path in numeric_paths:
        entry = prov.get(path)
        if entry is None:
            # a table-level entry ("dims" = "config") covers every key under it
            head = path.split(".")[0]
            entry = prov.get(head)
        if entry is None:
            problems.append((f"provenance.{path}",
                             f"no source for {path}; add \"{path}\" = \"<source key>\" or "
                             "\"derived: <arithmetic>\" to [provenance]"))
            continue
        m = re.match(r"\s*([A-Za-z0-9_.-]+)", entry)
        first = m.group(1) if m else ""
        if first in ("derived", "assumption") or first in sources:
            continue
        problems.append((f"provenance.{path}",
                         f"{entry!r} names no key of [sources] ({', '.join(sorted(sources)) or 'none'})"
                         " and does not start with 'derived:' or 'assumption:'"))
    for path in prov:
        head = path.split(".")[0]
        value = getattr(spec, head, None)
        if value is None or value == {} or value == ():
            problems.append((f"provenance.{path}",
                             f"provenance for {path!r}, which the spec does not set"))
    return problems
