"""One error hierarchy for roofkit; every member is also a builtin exception.

Every member pickles with all of its attributes (errors cross process pools in sweeps).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import NamedTuple


class Problem(NamedTuple):
    """One problem in a spec: the file, the key path inside it and what is wrong.

    ``key`` is ``""`` for the top-level table and ``None`` for the file as a whole (a TOML
    syntax error, an unreadable file); ``file`` is ``None`` for a problem of no file.
    """

    file: str | None
    key: str | None
    message: str

    def __str__(self) -> str:
        if self.file is None:
            return self.message
        if self.key is None:
            return f"{self.message} @ {self.file}"
        return f"{self.message} @ {self.file}:{self.key or '<top>'}"

    def to_dict(self) -> dict:
        return {"file": self.file, "key": self.key, "message": self.message}


class RoofkitError(Exception):
    """Base of every error roofkit raises on purpose."""


class SpecError(RoofkitError, ValueError):
    """A spec (file or value) is invalid.

    ``details`` holds one :class:`Problem` per problem; ``problems`` the same as lines,
    ``message @ file:key.path``.
    """

    def __init__(self, problems: Iterable[str | Problem] | str | Problem, *,
                 title: str | None = None):
        if isinstance(problems, str | Problem):
            problems = [problems]
        self.details = tuple(p if isinstance(p, Problem) else Problem(None, None, str(p))
                             for p in problems)
        self.problems = tuple(str(p) for p in self.details)
        self.title = title
        head = f"{title}\n" if title else ""
        if len(self.problems) == 1 and not title:
            text = self.problems[0]
        else:
            text = head + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(text)

    def __reduce__(self):
        return (_rebuild_spec_error, (self.details, self.title))


def _rebuild_spec_error(details, title):
    return SpecError(details, title=title)


class ArgumentError(SpecError):
    """An argument of a public call or a command is invalid (a count out of range, a name
    of the wrong type, an unknown option value). A :class:`SpecError`, so a ``ValueError``."""

    def __reduce__(self):
        return (_rebuild_argument_error, (self.details, self.title))


def _rebuild_argument_error(details, title):
    return ArgumentError(details, title=title)


#: the most characters of a user's value an error message echoes
ECHO_LIMIT = 200


def cut(text, limit: int = ECHO_LIMIT) -> str:
    """``text`` (any value: its ``str``) of at most ``limit`` characters; a longer one keeps
    its head and says how much was cut, so a 100 KB bad value never floods a message."""
    text = str(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def shown(value, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` cut to ``limit`` characters (what a message echoes of a bad value)."""
    return cut(repr(value), limit)


class UnknownNameError(RoofkitError, LookupError):
    """A name (device, workload, precision…) is not in the registry.

    ``suggestions`` holds the closest known names; ``hint`` a sentence added to the message
    (e.g. that the name is of another kind).
    """

    def __init__(self, kind: str, name: str, known: Iterable[str] = (), hint: str = ""):
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        self.hint = hint
        self.suggestions = tuple(closest(name, self.known)) if isinstance(name, str) and \
            len(name) <= ECHO_LIMIT else ()
        msg = f"Unknown {kind} {shown(name)}."
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
        return (UnknownNameError, (self.kind, self.name, self.known, self.hint))


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
