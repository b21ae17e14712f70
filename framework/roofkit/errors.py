"""One error hierarchy for roofkit; every member is also a builtin exception."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class RoofkitError(Exception):
    """Base of every error roofkit raises on purpose."""


class SpecError(RoofkitError, ValueError):
    """A spec (file or value) is invalid. ``problems`` holds one line per problem."""

    def __init__(self, problems: Iterable[str] | str, *, title: str | None = None):
        if isinstance(problems, str):
            problems = [problems]
        self.problems = tuple(problems)
        self.title = title
        head = f"{title}\n" if title else ""
        if len(self.problems) == 1 and not title:
            text = self.problems[0]
        else:
            text = head + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(text)

    def __reduce__(self):
        return (_rebuild_spec_error, (self.problems, self.title))


def _rebuild_spec_error(problems, title):
    return SpecError(problems, title=title)


class UnknownNameError(RoofkitError, LookupError):
    """A name (device, workload, precision…) is not in the registry."""

    def __init__(self, kind: str, name: str, known: Iterable[str] = (), hint: str = ""):
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        self.suggestions = tuple(closest(name, self.known))
        msg = f"Unknown {kind} {name!r}."
        if self.suggestions:
            msg += " Did you mean " + ", ".join(repr(s) for s in self.suggestions) + "?"
        elif self.known and len(self.known) <= 40:
            msg += " Known: " + ", ".join(sorted(self.known)) + "."
        if hint:
            msg += " " + hint
        super().__init__(msg)

    def __str__(self) -> str:  # LookupError would quote the message
        return self.args[0]

    def __reduce__(self):
        return (UnknownNameError, (self.kind, self.name, self.known))


class PluginError(RoofkitError, RuntimeError):
    """A plugin is broken: bad hook, duplicate name, bad return value."""


class OOMError(RoofkitError, MemoryError):
    """The workload's footprint exceeds the device's memory."""

    def __init__(self, message: str, required: float = 0.0, available: float = 0.0):
        self.required = required
        self.available = available
        super().__init__(message)

    def __reduce__(self):
        return (OOMError, (self.args[0], self.required, self.available))


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to ``name`` (case-insensitive), best first."""
    known = list(known)
    lowered = {k.lower(): k for k in known}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.6)
    prefix = [k for k in known if k.lower().startswith(name.lower()) and k.lower() not in hits]
    out = [lowered[h] for h in hits] + prefix
    return out[:n]
