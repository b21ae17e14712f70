"""How a command fails: one message on stderr, or with ``--json`` one JSON object on stdout,
and the exit code (1 bad input, spec or plugin; 2 does not fit).

With ``--json`` every failure prints exactly::

    {"error": {"kind": ..., "message": ..., "file": ..., "key": ..., "hint": ...,
               "problems": [{"file", "key", "message"}, ...]}}

``kind`` is one of :data:`KINDS`; ``file`` and ``key`` locate a spec problem (null
otherwise); ``hint`` says what to do (null when there is nothing to add). A failure never
leaves a partial document: a command's document is built whole before it is printed
(:func:`roofkit.cli.common.print_json`), so the error object is the only one.
"""

from __future__ import annotations

import json
import os
import sys

from ..errors import (
    ArgumentError,
    OOMError,
    PluginError,
    RoofkitError,
    SpecError,
    UnknownNameError,
    cut,
)

#: the longest line a failure message prints (a 100 KB value must not flood the terminal)
LINE_LIMIT = 1000

#: kind -> what it means (the ``kind`` of the JSON error object)
KINDS = {
    "usage": "the command line is malformed (an unknown option, a missing or mistyped value)",
    "bad_argument": "an argument is out of range or of the wrong type",
    "spec": "a spec file or value is invalid",
    "unknown_name": "a device, workload, precision or other name is not known",
    "plugin": "a plugin is broken (it raised, returned the wrong thing, or exited)",
    "does_not_fit": "the configuration does not fit in device memory (exit 2)",
    "error": "roofkit refused the request",
    "internal": "a bug in roofkit: an error it did not expect",
}

_HINTS = {
    "usage": "`roofkit COMMAND --help` lists the options",
    "does_not_fit": "use a smaller batch or context, a smaller format (--precision, "
                    "--kv-dtype), more devices (--tp) or a device with more memory",
    "plugin": "block the plugin with ROOFKIT_BLOCKED_PLUGINS=NAME or run with --no-plugins, "
              "and report it to the plugin's authors",
    "internal": "this is a bug in roofkit; ROOFKIT_DEBUG=1 prints the traceback",
}


class UsageError(RoofkitError, ValueError):
    """A malformed command line (argparse's complaint), carrying the parser's usage text."""

    def __init__(self, message: str, usage: str = "", prog: str = "roofkit"):
        self.usage = usage
        self.prog = prog
        super().__init__(message)


#: (exception classes, kind) in the order tried: a subclass before its base. A ValueError
#: or OverflowError outside roofkit's own is a numeric argument a check missed.
_KIND_BY_CLASS = (
    (UsageError, "usage"),
    (OOMError, "does_not_fit"),
    (ArgumentError, "bad_argument"),
    (UnknownNameError, "unknown_name"),
    (SpecError, "spec"),
    (PluginError, "plugin"),
    (RoofkitError, "error"),
    (ValueError | OverflowError, "bad_argument"),
)


def kind_of(exc: BaseException) -> str:
    """The :data:`KINDS` entry of ``exc``: its first match in ``_KIND_BY_CLASS``, else
    ``internal``."""
    return next((kind for cls, kind in _KIND_BY_CLASS if isinstance(exc, cls)), "internal")


def exit_code(exc: BaseException) -> int:
    return 2 if isinstance(exc, OOMError) else 1


def _clip(text: str) -> str:
    return "\n".join(cut(line, LINE_LIMIT) for line in text.splitlines() or [""])


def message_of(exc: BaseException) -> str:
    kind = kind_of(exc)
    text = str(exc) or type(exc).__name__
    if kind == "internal":
        text = f"internal error: {type(exc).__name__}: {text}"
    elif kind == "bad_argument" and not isinstance(exc, RoofkitError):
        text = f"{type(exc).__name__}: {text}"
    return _clip(text)


def hint_of(exc: BaseException) -> str | None:
    kind = kind_of(exc)
    if isinstance(exc, UnknownNameError):
        if exc.suggestions:
            return "did you mean " + ", ".join(repr(s) for s in exc.suggestions) + "?"
        return exc.hint or None
    own = getattr(exc, "hint", None)
    if isinstance(own, str) and own:
        return cut(own, LINE_LIMIT)
    return _HINTS.get(kind)


def payload(exc: BaseException) -> dict:
    """The JSON error object of ``exc``."""
    details = getattr(exc, "details", ()) if isinstance(exc, SpecError) else ()
    first = next((p for p in details if p.file is not None), None)
    return {"error": {
        "kind": kind_of(exc),
        "message": message_of(exc),
        "file": None if first is None else first.file,
        "key": None if first is None else first.key,
        "hint": hint_of(exc),
        "problems": [{"file": p.file, "key": p.key, "message": cut(p.message, LINE_LIMIT)}
                     for p in details] if len(details) > 1 or first is not None else [],
    }}


def report(exc: BaseException, as_json: bool) -> int:
    """Print ``exc`` the command's way (stderr text, or the JSON object on stdout) and give
    its exit code. ``ROOFKIT_DEBUG=1`` re-raises an internal error for its traceback."""
    kind = kind_of(exc)
    if kind == "internal" and os.environ.get("ROOFKIT_DEBUG"):
        raise exc
    if isinstance(exc, UsageError) and exc.usage:
        sys.stderr.write(exc.usage)
    if as_json:
        sys.stdout.write(json.dumps(payload(exc), indent=2) + "\n")
        sys.stdout.flush()
    prefix = "roofkit: does not fit: " if kind == "does_not_fit" else "roofkit: "
    if isinstance(exc, UsageError):
        prefix = f"{exc.prog}: error: "
    print(prefix + message_of(exc), file=sys.stderr)
    return exit_code(exc)
