"""Reading TOML specs into frozen attrs objects through one private, strict cattrs converter.

Every problem in a file is collected and raised at once as a :class:`SpecError` whose lines
read ``message @ file:key.path``; no cattrs traceback reaches the user. A spec class takes
part in checking through two optional methods (see :func:`problems_of`): the classmethod
``raw_problems(data)``, checks on the raw TOML table that run whether or not the file
structured, and ``problems()``, checks that need the structured object.
"""

from __future__ import annotations

import math
import re
import sys
import typing
from pathlib import Path

import attrs
import cattrs
from cattrs.errors import (
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, override

from . import units
from .errors import Problem, SpecError, closest
from .files import MAX_DEPTH, nesting_problem, read_spec_bytes
from .schema.common import FieldProblem
from .schema.fields import meta_of

if sys.version_info >= (3, 11):  # noqa: UP036 - tomli stays declared for older Pythons
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class _Problems(Exception):
    """Raised inside hooks: (relative key path, message) pairs."""

    def __init__(self, items: list[tuple[str, str]]):
        self.items = items
        super().__init__("; ".join(m for _, m in items))


def _kind(v) -> str:
    return {str: "a string", bool: "a boolean", int: "an integer", float: "a number",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def _int(v, _):
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, float) and v.is_integer():
            raise _Problems([("", f"expected an integer, got {v!r}; write {int(v)}")])
        digits = isinstance(v, str) and v.strip().isdigit()
        extra = f"; write {v.strip()} without quotes" if digits else ""
        raise _Problems([("", f"expected an integer, got {v!r} ({_kind(v)}){extra}")])
    return v


def _float(v, _):
    if isinstance(v, bool) or not isinstance(v, int | float):
        extra = ""
        if isinstance(v, str):
            try:
                float(v)
                extra = f"; write {v.strip()} without quotes"
            except ValueError:
                extra = "; a plain number is expected here, without a unit"
        raise _Problems([("", f"expected a number, got {v!r} ({_kind(v)}){extra}")])
    if isinstance(v, int) and abs(v) > 1e300:
        raise _Problems([("", f"expected a finite number, got an integer of {len(str(v))} "
                          "digits")])
    if isinstance(v, float) and not math.isfinite(v):
        raise _Problems([("", f"expected a finite number, got {v!r}")])
    return float(v)


def _str(v, _):
    if not isinstance(v, str):
        raise _Problems([("", f"expected a string, got {v!r} ({_kind(v)})")])
    return v


def _bool(v, _):
    if not isinstance(v, bool):
        raise _Problems([("", f"expected true or false, got {v!r} ({_kind(v)})")])
    return v


def _str_tuple(v, _):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _Problems([("", f"expected a list of strings, got {v!r}")])
    return tuple(v)


def _literal(v, typ):
    """One of a Literal's values, with the closest one suggested when it is not."""
    args = typing.get_args(typ)
    if v in args and type(v) in {type(a) for a in args}:
        return v
    near = closest(v, [a for a in args if isinstance(a, str)]) if isinstance(v, str) else []
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise _Problems([("", f"{v!r} must be one of {', '.join(map(repr, args))}{hint}")])


def _out_of_range(meta: dict, v, out, key: str = "") -> str | None:
    """The complaint about ``out`` (read from ``v``) when it is outside the field's range
    (its entry ``key``'s, in a mapping field): what was read, the range, and the spelling
    probably meant."""
    rng = (meta.get("limits") or {}).get(key, meta.get("range"))
    if rng is None or rng.contains(out):
        return None
    dim = meta.get("dimension")
    if not dim:
        if isinstance(out, int):
            digits = len(str(abs(out)))
            shown = f"{out}" if digits <= 30 else f"an integer of {digits} digits"
        else:
            shown = f"{out!r}"
        return rng.problem(out, shown)
    msg = rng.problem(out, f"{v!r} (read as {units.fmt(out, dim)})", dim)
    meant = units.prefix_fix(v, dim, rng.contains)
    return msg + (f"; did you mean {meant!r}?" if meant else "")


def _parse_quantity(meta: dict):
    dim = meta["dimension"]

    def one(v, path=""):
        try:
            out = units.parse(v, dim)
        except SpecError as exc:
            raise _Problems([(path, str(exc))]) from None
        bad = _out_of_range(meta, v, out)
        if bad:
            raise _Problems([(path, bad)])
        return out

    return _each(meta, one, f"{dim} values")


def _each(meta: dict, one, what: str):
    """The hook of a field: ``one(value, path)`` on a scalar, or on every entry of a mapping
    field (its keys checked against the declaration)."""
    if meta.get("sequence"):
        def sequence(v, _):
            if not isinstance(v, list | tuple):
                raise _Problems([("", f"expected a list of {what}, got {v!r}")])
            out, problems = [], []
            for i, item in enumerate(v):
                try:
                    out.append(one(item, f"[{i}]"))
                except _Problems as exc:
                    problems += exc.items
            if problems:
                raise _Problems(problems)
            return out
        return sequence
    if meta.get("mapping"):
        def mapping(v, _):
            if not isinstance(v, dict):
                raise _Problems([("", f"expected a table of {what}, got {v!r}")])
            out, problems = {}, []
            for key, item in v.items():
                try:
                    out[key] = one(item, key)
                except _Problems as exc:
                    problems += exc.items
            problems += _key_items(meta, v)
            if problems:
                raise _Problems(problems)
            return out
        return mapping

    def scalar(v, _):
        if v is None:
            return None
        return one(v)
    return scalar


def _key_items(meta: dict, v: dict) -> list[tuple[str, str]]:
    from .schema.fields import key_problems

    return key_problems(meta, v) if meta.get("keys") else []


def _checked(meta: dict):
    base = _int if meta["range"].integer else _float

    def one(v, path=""):
        if not meta["range"].integer and isinstance(v, int | float) \
                and not isinstance(v, bool):  # NaN, infinity and huge integers, unconverted
            bad = _out_of_range(meta, v, v, path)
            if bad:
                raise _Problems([(path, bad)])
        try:
            out = base(v, None)
        except _Problems as exc:
            raise _Problems([(path, m) for _, m in exc.items]) from None
        bad = _out_of_range(meta, v, out, path)
        if bad:
            raise _Problems([(path, bad)])
        return out

    return _each(meta, one, "numbers")


def _keyed(meta: dict, conv, typ):
    """A table of named sub-specs whose keys the field declares."""
    def hook(v, _):
        if isinstance(v, dict):
            problems = _key_items(meta, v)
            if problems:
                raise _Problems(problems)
        return conv.structure(v, typ)
    return hook


def make_converter() -> cattrs.Converter:
    """A fresh strict converter: extra keys forbidden, no string→number coercion, units parsed."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    conv.register_structure_hook(int, _int)
    conv.register_structure_hook(float, _float)
    conv.register_structure_hook(str, _str)
    conv.register_structure_hook(bool, _bool)
    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], _str_tuple)
    conv.register_structure_hook_func(lambda t: typing.get_origin(t) is typing.Literal, _literal)

    def factory(cls):
        attrs.resolve_types(cls)
        overrides = {}
        for f in attrs.fields(cls):
            meta = meta_of(f)
            if not meta:
                continue
            if "dimension" in meta:
                overrides[f.name] = override(struct_hook=_parse_quantity(meta))
            elif "range" in meta:
                overrides[f.name] = override(struct_hook=_checked(meta))
            elif meta.get("keys"):
                overrides[f.name] = override(struct_hook=_keyed(meta, conv, f.type))
        fn = make_dict_structure_fn(cls, conv, _cattrs_forbid_extra_keys=True, **overrides)

        def table(v, t):
            if not isinstance(v, dict):
                raise _Problems([("", f"expected a table ({cls.__name__}), got {v!r}")])
            return fn(v, t)
        return table

    conv.register_structure_hook_factory(attrs.has, factory)
    conv.register_structure_hook_func(_is_list, _list_hook(conv))
    return conv


def _is_list(t) -> bool:
    return typing.get_origin(t) is list


def _list_hook(conv):
    """A list field: a TOML array (of tables or values), never a string or a table read
    item by item."""
    def hook(v, t):
        if not isinstance(v, list | tuple):
            raise _Problems([("", f"expected an array, got {v!r}")])
        (item,) = typing.get_args(t) or (typing.Any,)
        out, problems = [], []
        for i, x in enumerate(v):
            try:
                out.append(conv.structure(x, item))
            except Exception as exc:  # each item's problems, with its index
                problems += _walk(exc, f"[{i}]", item)
        if problems:
            raise _Problems(problems)
        return out
    return hook


def _walk(exc: BaseException, path: str, cls) -> list[tuple[str, str]]:
    if isinstance(exc, ClassValidationError):
        out = []
        with_notes, without = exc.group_exceptions()
        sub_types = attrs.fields_dict(exc.cl) if attrs.has(exc.cl) else {}
        for e, note in with_notes:
            name = note.name
            sub = sub_types.get(name)
            out += _walk(e, f"{path}.{name}" if path else name, sub.type if sub else None)
        for e in without:
            out += _walk(e, path, exc.cl)
        return out
    if isinstance(exc, IterableValidationError):
        out = []
        with_notes, without = exc.group_exceptions()
        for e, note in with_notes:  # a list index, or the key of a table of sub-specs
            step = f".{note.index}" if isinstance(note.index, str) else f"[{note.index}]"
            out += _walk(e, f"{path}{step}" if path or step[0] == "[" else str(note.index),
                         None)
        for e in without:
            out += _walk(e, path, None)
        return out
    if isinstance(exc, ForbiddenExtraKeysError):
        known = [f.name for f in attrs.fields(exc.cl)]
        out = []
        for key in sorted(exc.extra_fields):
            near = closest(key, known)
            hint = f"; did you mean {', '.join(map(repr, near))}?" if near else \
                f"; known keys: {', '.join(known)}"
            out.append((f"{path}.{key}" if path else key, f"unknown key {key!r}{hint}"))
        return out
    if isinstance(exc, FieldProblem):  # a field validator, run by the class's __init__
        return [(f"{path}.{exc.key}" if path else exc.key, exc.message)]
    if isinstance(exc, _Problems):
        return [(f"{path}{p}" if p.startswith("[") else
                 f"{path}.{p}" if path and p else (p or path), m) for p, m in exc.items]
    if isinstance(exc, KeyError):
        key = str(exc.args[0]) if exc.args else "?"
        full = path if path.split(".")[-1] == key else (f"{path}.{key}" if path else key)
        return [(full, f"missing required key {key!r}")]
    if isinstance(exc, BaseExceptionGroup):
        out = []
        for e in exc.exceptions:
            out += _walk(e, path, cls)
        return out
    return [(path, str(exc) or type(exc).__name__)]


def _dedupe(items) -> list[tuple[str, str]]:
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def problems_of(data: dict, cls, converter: cattrs.Converter):
    """Structure ``data`` into ``cls``: (object or None, [(key path, message)...]).

    Three kinds of check run and their problems are reported together, each once:
    structuring (types, units, unknown and missing keys); ``cls.raw_problems(data)``, a
    classmethod of checks that read the raw TOML table and so run even when structuring
    failed (names, slots, provenance…); and ``obj.problems()``, checks that need the
    structured object, run when there is one.
    """
    items: list[tuple[str, str]] = []
    obj = None
    try:
        obj = converter.structure(data, cls)
    except Exception as exc:  # every cattrs/attrs failure becomes key-path problems
        items += _walk(exc, "", cls)
    raw_check = getattr(cls, "raw_problems", None)
    if raw_check is not None and isinstance(data, dict):
        items += raw_check(data)
    if obj is not None and hasattr(obj, "problems"):
        items += obj.problems()
    return obj, _dedupe(items)


def format_problems(file: str | Path, items) -> list[Problem]:
    """(key path, message) pairs of one file as :class:`Problem` s."""
    return [Problem(str(file), path, msg) for path, msg in items]


def read_toml(path: str | Path) -> dict:
    """Parse a TOML file; a syntax error, a file that is not UTF-8, cannot be read, is not a
    regular file, is over the size limit or nests too deep becomes a SpecError naming the
    file (and the line)."""
    path = Path(path)
    raw = read_spec_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(Problem(str(path), None, (
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line} (offset {exc.start}) "
            "cannot be decoded; TOML files are UTF-8"))) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(Problem(str(path), None, f"TOML syntax error: {exc}")) from None
    except RecursionError:
        raise SpecError(Problem(str(path), None, (
            f"tables and arrays nest more than {MAX_DEPTH} levels deep; a spec needs a "
            "few"))) from None
    except ValueError as exc:  # an integer past Python's 4300-digit conversion limit
        long = re.search(r"\d{4301,}", text)
        line = f" at line {text[: long.start()].count(chr(10)) + 1}" if long else ""
        raise SpecError(Problem(str(path), None, (
            f"a number{line} has {len(long.group(0)) if long else 'thousands of'} digits; "
            f"no spec value needs more than a few ({exc.__class__.__name__})"))) from None
    deep = nesting_problem(data)
    if deep:
        raise SpecError(Problem(str(path), None, deep))
    return data


def load(path: str | Path, cls, converter: cattrs.Converter | None = None):
    """Load one spec file into ``cls``; every problem at once as one SpecError."""
    converter = converter or make_converter()
    data = read_toml(path)
    obj, items = problems_of(data, cls, converter)
    if items:
        raise SpecError(format_problems(path, items), title=f"{path}: {len(items)} problem(s)")
    return obj
