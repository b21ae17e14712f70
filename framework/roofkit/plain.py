"""Spec objects as plain JSON data and back, for the spec cache (never pickle).

``to_plain`` writes an attrs spec as nested dicts, lists, strings, numbers, booleans and
None; ``from_plain(data, cls)`` rebuilds it field by field from the class's own annotations,
so the data can only ever become the spec classes it was written from, holding plain values:
nothing in it names a class, a function or a module. Tuples inside untyped fields are
written as ``{"__tuple__": [...]}``. An encoding that would not come back identical (a value
JSON cannot hold, a float NaN) raises :class:`NotPlain`; :func:`round_trips` is the check the
cache runs before it keeps an entry.
"""

from __future__ import annotations

import functools
import math
import types
import typing

import attrs

_PRIMITIVES = (str, int, float, bool)
_TUPLE = "__tuple__"


class NotPlain(ValueError):
    """A value or a type the plain encoding cannot carry exactly."""


def to_plain(obj):
    """``obj`` (an attrs spec, or the plain values inside one) as JSON-ready data."""
    if attrs.has(type(obj)):
        return {f.name: to_plain(getattr(obj, f.name)) for f in attrs.fields(type(obj))}
    if obj is None or isinstance(obj, str | bool | int):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise NotPlain(f"a non-finite float {obj!r}")
        return obj
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise NotPlain("a table with a key that is not a string")
        if _TUPLE in obj:
            raise NotPlain(f"a table with the reserved key {_TUPLE!r}")
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_plain(v) for v in obj]
    if isinstance(obj, tuple):
        return {_TUPLE: [to_plain(v) for v in obj]}
    raise NotPlain(f"a {type(obj).__name__} value")


def _untyped(data):
    if isinstance(data, dict):
        if len(data) == 1 and _TUPLE in data and isinstance(data[_TUPLE], list):
            return tuple(_untyped(v) for v in data[_TUPLE])
        return {k: _untyped(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_untyped(v) for v in data]
    if data is None or isinstance(data, _PRIMITIVES):
        return data
    raise NotPlain(f"a {type(data).__name__} value")


def _listed(data):
    """The items of a tuple as written (``{"__tuple__": [...]}``)."""
    if isinstance(data, dict) and len(data) == 1 and _TUPLE in data:
        return data[_TUPLE]
    return data


def _primitive(typ):
    def build(data):
        if type(data) is typ or (typ is float and type(data) is int):
            return typ(data) if typ is float else data
        raise NotPlain(f"expected {typ.__name__}, got {type(data).__name__}")
    return build


def _builder(typ):
    """A function plain data -> a value of ``typ`` (checked on the way)."""
    if typ is typing.Any or typ is object or typ in (dict, list, tuple):
        return _untyped
    if typ in _PRIMITIVES:
        return _primitive(typ)
    if typ is type(None):
        def none(data):
            if data is not None:
                raise NotPlain("expected None")
        return none
    if attrs.has(typ):
        return _class_builder(typ)
    origin, args = typing.get_origin(typ), typing.get_args(typ)
    if origin is typing.Literal:
        def literal(data):
            if data not in args:
                raise NotPlain(f"{data!r} is not one of {args}")
            return data
        return literal
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 and not all(a in _PRIMITIVES for a in rest):
            raise NotPlain(f"an ambiguous union {typ}")
        inner = _builder(rest[0]) if len(rest) == 1 else _untyped

        def optional(data):
            return None if data is None else inner(data)
        return optional
    if origin in (dict, typing.Mapping) or origin is getattr(typing, "Mapping", None):
        value = _builder(args[1]) if args else _untyped

        def mapping(data):
            if not isinstance(data, dict):
                raise NotPlain("expected a table")
            return {k: value(v) for k, v in data.items()}
        return mapping
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _builder(args[0])

            def homogeneous(data):
                data = _listed(data)
                if not isinstance(data, list):
                    raise NotPlain("expected a list")
                return tuple(item(v) for v in data)
            return homogeneous
        items = [_builder(a) for a in args]

        def fixed(data):
            data = _listed(data)
            if not isinstance(data, list) or len(data) != len(items):
                raise NotPlain(f"expected a list of {len(items)}")
            return tuple(b(v) for b, v in zip(items, data, strict=True))
        return fixed
    if origin is list:
        item = _builder(args[0]) if args else _untyped

        def listed(data):
            if not isinstance(data, list):
                raise NotPlain("expected a list")
            return [item(v) for v in data]
        return listed
    raise NotPlain(f"a field of type {typ}")


@functools.cache
def _class_builder(cls):
    hints = typing.get_type_hints(cls)
    fields = [f.name for f in attrs.fields(cls)]
    names = frozenset(fields)
    builders: dict = {}

    def build(data):
        if not isinstance(data, dict) or data.keys() != names:
            raise NotPlain(f"the fields of {cls.__name__} do not match")
        if not builders:  # resolved on first use: a recursive class refers to itself
            builders.update((n, _builder(hints[n])) for n in fields)
        obj = object.__new__(cls)
        for name in fields:
            object.__setattr__(obj, name, builders[name](data[name]))
        return obj
    return build


def from_plain(data, cls):
    """Rebuild a ``cls`` spec written by :func:`to_plain`; NotPlain when it does not fit."""
    return _class_builder(cls)(data)


def same(a, b) -> bool:
    """Equal, with the types of every value the same too (a tuple is no list, 1 no 1.0), over
    every attrs field (those left out of ``==`` included)."""
    if type(a) is not type(b):
        return False
    if attrs.has(type(a)):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in attrs.fields(type(a)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def round_trips(obj) -> object | None:
    """The plain form of ``obj`` when rebuilding it gives back the same object, else None."""
    try:
        data = to_plain(obj)
        return data if same(from_plain(data, type(obj)), obj) else None
    except (NotPlain, RecursionError, TypeError, NameError):
        return None
