"""Layered spec catalogues: builtin specs, plugin spec dirs, user paths, ``ROOFKIT_SPEC_PATH``.

Each path is a layer; later layers win, by name and by alias alike, and
:meth:`Catalogue.origin` names the file that won. Within one layer a name or an alias
claimed twice is an error naming both files. Lookups are by key or alias,
case-insensitively, and teach the closest names when they miss.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

from .errors import Problem, SpecError, UnknownNameError, closest
from .files import kind_of_path, real_path, toml_files_under
from .loader import format_problems, problems_of, read_toml
from .spec_kinds import SPEC_KINDS, SpecKind, infer_kind
from .spec_kinds import a as a_noun

_BUILD_LOCK = threading.Lock()


class Entry:
    """One spec of a catalogue: its key, the aliases it claims, its file and layer, and the
    spec object, built on first use when it came from the cache as plain data."""

    __slots__ = ("_build", "_obj", "claims", "key", "layer", "origin", "overrides", "rank")

    def __init__(self, obj, origin: Path, layer: str, rank: int = 0, *, key: str | None = None,
                 claims: tuple[str, ...] | None = None, build=None,
                 overrides: tuple[str, ...] = ()):
        self._obj, self._build = obj, build
        self.origin, self.layer, self.rank = origin, layer, rank
        self.key = key
        self.claims = claims if claims is not None else ()
        self.overrides = overrides

    @property
    def obj(self):
        obj = self._obj
        if obj is None:
            made = self._build()
            with _BUILD_LOCK:  # two threads building at once agree on one object
                if self._obj is None:
                    self._obj, self._build = made, None
                obj = self._obj
        return obj

    def __repr__(self) -> str:
        return f"Entry({self.key!r}, {str(self.origin)!r}, {self.layer!r})"


def _norm(name: str) -> str:
    return name.strip().lower()


def _path_hint(name, noun: str, hint: str) -> str:
    """``hint``, led by what ``name`` is when it names a folder or a non-TOML file on disk (a
    path the user meant as a spec file)."""
    import os

    if not isinstance(name, str) or not (os.sep in name or "/" in name) or \
            name.endswith(".toml"):
        return hint
    from .files import kind_of_path

    what = kind_of_path(name)
    said = {"dir": "a folder", "file": "a file whose name does not end in .toml"}.get(what)
    if said is None:
        return hint
    return (f"{name!r} is {said}; a {noun} spec is read from a .toml file. {hint}").strip()


class Catalogue(Mapping):
    """An immutable name → spec mapping with aliases and origins."""

    def __init__(self, kind: str, entries: dict[str, Entry], aliases: dict[str, str]):
        self.kind = kind
        self._entries = MappingProxyType(entries)
        self._aliases = MappingProxyType(aliases)

    @property
    def noun(self) -> str:
        spec_kind = SPEC_KINDS.get(self.kind)
        return spec_kind.noun if spec_kind else self.kind.rstrip("s")

    def __getitem__(self, name: str):
        return self._entries[self.resolve(name)].obj

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name) -> bool:
        if not isinstance(name, str):
            return False
        n = _norm(name)
        return n in self._entries or n in self._aliases

    def resolve(self, name: str, hint: str = "") -> str:
        """The key for ``name`` (key or alias, any case); UnknownNameError with suggestions."""
        n = _norm(name)
        if n in self._entries:
            return n
        if n in self._aliases:
            return self._aliases[n]
        known = list(self._entries) + list(self._aliases)
        raise UnknownNameError(self.noun, name, known, _path_hint(name, self.noun, hint))

    def entry(self, name: str) -> Entry:
        return self._entries[self.resolve(name)]

    def origin(self, name: str) -> Path:
        """The file of the spec ``name`` (a key or an alias) resolves to."""
        return self.entry(name).origin

    @property
    def aliases(self) -> Mapping[str, str]:
        """alias → key, after layering."""
        return self._aliases

    def values_in_order(self):
        return [e.obj for e in self._entries.values()]


def spec_layers(plugin_dirs, user_paths) -> list[tuple[str, Path]]:
    """(layer label, path) in precedence order, lowest first."""
    layers = [(f"plugin {p}", d) for p, d in plugin_dirs]
    layers += [("user", Path(p)) for p in user_paths]
    env = os.environ.get("ROOFKIT_SPEC_PATH", "")
    layers += [("ROOFKIT_SPEC_PATH", Path(p)) for p in env.split(os.pathsep) if p]
    return layers


def kind_of_file(path: Path, data: dict | None = None) -> SpecKind | None:
    """The kind of one spec file: by the folder it sits in (after resolving the path, so
    ``h100-sxm.toml`` run from ``specs/calibration`` is a calibration), else by its marker
    key. A file that does not parse raises its SpecError (syntax, encoding)."""
    path = real_path(path)
    kind = SPEC_KINDS.get(path.parent.name)
    if kind is not None:
        return kind
    return infer_kind(read_toml(path) if data is None else data)


def _loose(path: Path, files: list, problems: list) -> None:
    """One file outside a kind folder: its kind from its marker key."""
    try:
        kind = kind_of_file(path)
    except SpecError as exc:  # a syntax error or a file that is not UTF-8
        problems += exc.details
        return
    if kind is None:
        problems.append(Problem(str(path), None, (
            "cannot tell what kind of spec this is; put it in a folder named one of "
            f"{', '.join(SPEC_KINDS)}")))
        return
    files.append((kind, path))


def files_of(path: str | Path) -> tuple[list[tuple[SpecKind, Path]], list[Problem]]:
    """Spec files under a layer path, resolved: a root with kind folders, a kind folder, a
    folder of loose files (each of the kind its marker key says), or one file. Returns
    (files with their kinds, problems: a missing path, a loose file of no known kind)."""
    path = real_path(path)
    files: list[tuple[SpecKind, Path]] = []
    problems: list[Problem] = []
    what = kind_of_path(path)
    if what == "file":
        _loose(path, files, problems)
    elif what == "missing":
        problems.append(Problem(str(path), None, "spec path does not exist"))
    elif what == "loop":
        problems.append(Problem(str(path), None, (
            "spec path is a symlink loop (the links never reach a file or folder)")))
    elif what != "dir":
        problems.append(Problem(str(path), None, (
            f"spec path is {what}, not a spec file or folder; spec files are read only from "
            "regular files")))
    elif any((path / k).is_dir() for k in SPEC_KINDS):
        for folder, kind in SPEC_KINDS.items():
            d = path / folder
            if d.is_dir():
                files += [(kind, f) for f in toml_files_under(d, recursive=True)]
    elif path.name in SPEC_KINDS:
        files = [(SPEC_KINDS[path.name], f) for f in toml_files_under(path, recursive=False)]
    else:
        for f in toml_files_under(path, recursive=False):
            _loose(f, files, problems)
    return files, problems


#: the catalogue key a spec file uses to replace a spec of an earlier layer
OVERRIDES = "overrides"


def _overrides_of(data: dict) -> tuple[tuple[str, ...], list[tuple[str, str]]]:
    """The names a file's ``overrides`` key replaces (taken out of ``data``: it belongs to
    the catalogue, not to the spec), and its problems."""
    value = data.pop(OVERRIDES, None) if isinstance(data, dict) else None
    if value is None:
        return (), []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or \
            not all(isinstance(v, str) and v.strip() for v in items):
        return (), [(OVERRIDES, f"expected the name of the spec this file replaces (a string, "
                     f"or a list of them), got {value!r}")]
    return tuple(_norm(v) for v in items), []


def load_entry_file(kind: SpecKind, file: Path, converter):
    """Read and structure one file as ``kind``: (spec or None, the names it overrides, every
    problem at once)."""
    try:
        data = read_toml(file)
    except SpecError as exc:
        return None, (), list(exc.details)
    overrides, bad = _overrides_of(data)
    obj, items = problems_of(data, kind.cls, converter)
    if items:
        other = _other_kind(kind, file, data)
        if other is not None:
            return None, (), [Problem(str(file), None, (
                f"this file is {a_noun(other.noun)} spec, not {a_noun(kind.noun)} spec "
                f"({len(items)} problem(s) reading it as {a_noun(kind.noun)})"))]
    items = bad + items
    return (None if items else obj), overrides, format_problems(file, items)


def load_file(kind: SpecKind, file: Path, converter) -> tuple[object | None, list[Problem]]:
    """Read and structure one file as ``kind``: (spec or None, every problem at once)."""
    obj, _, problems = load_entry_file(kind, file, converter)
    return obj, problems


def _other_kind(kind: SpecKind, file: Path, data: dict) -> SpecKind | None:
    """The kind ``file`` is when it is plainly not ``kind``: it sits in another kind's folder
    or carries another kind's marker key and not this kind's."""
    if kind.marker and kind.marker in data:
        return None
    try:
        other = kind_of_file(file, data)
    except SpecError:
        return None
    return other if other is not None and other is not kind else None


def load_spec(kind: SpecKind, ref: str | Path, converter, tables) -> object:
    """One spec file as ``kind``, cross-checked against ``tables``; SpecError otherwise."""
    file = Path(ref)
    obj, problems = load_file(kind, file, converter)
    if not problems and kind.check is not None:
        problems = format_problems(file, kind.check(obj, tables))
    if problems:
        raise SpecError(problems, title=f"{file}: {len(problems)} problem(s)"
                        if len(problems) > 1 else None)
    return obj


def check_paths(paths, converter, tables, layers=None, cache=None
                ) -> tuple[int, list[Problem], list[Problem]]:
    """``roofkit check``: every spec file under ``paths``, each read as the kind its folder
    or marker says, structured, then stacked as the last layers over ``layers`` (the
    catalogue's own, less the files being checked; without ``layers``, the catalogues in
    ``tables``) and cross-checked against the catalogue they would join: its own circuits,
    op rules and devices included, a broken file hiding no other's problems. Every conflict
    loading would refuse (a name or alias taken from an earlier layer without
    ``overrides``, two files with one name) is reported.
    (files checked, problems in them, warnings: findings that do not stop loading)."""
    problems: list[Problem] = []
    checked: list[tuple[str, list[tuple[SpecKind, Path]]]] = []
    seen: set[str] = set()
    n = 0
    for raw in paths:
        files, found = files_of(raw)
        problems += found
        n += len({p.file for p in found if p.file and kind_of_path(p.file) == "file"})
        if not files and not found:
            problems.append(Problem(str(real_path(raw)), None, (
                "no spec files here; a spec folder holds *.toml files or folders named "
                f"{', '.join(SPEC_KINDS)}")))
        files = [(k, f) for k, f in files if str(f) not in seen]
        seen.update(str(f) for _, f in files)
        n += len(files)
        checked.append((f"checked {raw}", files))
    base, seed = [], None
    if layers is None:  # the catalogues of ``tables`` are the layers below
        seed = {folder: {k: e for k, e in cat._entries.items() if str(e.origin) not in seen}
                for folder, cat in tables.items() if isinstance(cat, Catalogue)}
        tables = {k: v for k, v in tables.items() if not isinstance(v, Catalogue)}
    for label, path in layers or ():
        files, _ = files_of(path)
        base.append((label, [(k, f) for k, f in files if str(f) not in seen]))
    cats, found = _load_files(base + checked, converter, cache, tables, only=seen, seed=seed)
    problems += [p for p in found if p.file in seen]
    warnings: list[Problem] = []
    every = {**tables, **cats}
    for folder, cat in cats.items():
        warn = SPEC_KINDS[folder].warn
        if warn is None:
            continue
        for e in cat._entries.values():
            if str(e.origin) in seen:
                warnings += format_problems(e.origin, warn(e.obj, every))
    return n, problems, warnings


def spec_claims(obj, key: str) -> tuple[str, ...]:
    """The aliases a spec claims (its ``aliases`` and ``symbol``), normalized, without its
    own key and without repeats."""
    out: list[str] = []
    for a in (*getattr(obj, "aliases", ()), getattr(obj, "symbol", None)):
        if a and _norm(a) != key and _norm(a) not in out:
            out.append(_norm(a))
    return tuple(out)


def _from_cache(hit, kind: SpecKind, file: Path, converter):
    """A builder for a cached spec: its plain data, or the file again when that does not fit
    its class (never a wrong object)."""
    def build():
        from .plain import NotPlain

        try:
            return hit.build()
        except NotPlain:
            obj, items = load_file(kind, file, converter)
            if items:
                raise SpecError(items) from None
            return obj
    return build


def _layer_entries(files, label: str, rank: int, converter, cache, problems):
    """The specs of one layer's files by kind: {folder: {key: Entry}}; problems appended."""
    found: dict[str, dict[str, Entry]] = {k: {} for k in SPEC_KINDS}
    for kind, file in files:
        hit = cache.get(file, kind.folder) if cache else None
        if hit is not None:
            key = _norm(hit.name)
            entry = Entry(None, file, label, rank, key=key, claims=hit.claims,
                          build=_from_cache(hit, kind, file, converter),
                          overrides=hit.overrides)
        else:
            obj, overrides, items = load_entry_file(kind, file, converter)
            if items:
                problems += items
                continue
            key = _norm(getattr(obj, kind.key))
            entry = Entry(obj, file, label, rank, key=key, claims=spec_claims(obj, key),
                          overrides=overrides)
            if cache:
                cache.put(file, kind.folder, obj, getattr(obj, kind.key), entry.claims,
                          overrides)
        table = found[kind.folder]
        if key in table:
            problems.append(Problem(str(file), kind.key, (
                f"{kind.noun} {key!r} is defined twice in one layer: {table[key].origin} and "
                f"{file}")))
            continue
        table[key] = entry
    return found


def _aliases(kind: SpecKind, table: dict[str, Entry], problems) -> dict[str, str]:
    """alias → key over the winning specs: a later layer's alias wins over an earlier one's,
    a name over an alias of an earlier layer; within one layer two specs claiming one alias
    (or an alias that is another spec's name) are an error naming both files."""
    claims: dict[str, list[tuple[int, str]]] = {}
    for key, e in table.items():
        for a in e.claims:
            claims.setdefault(a, []).append((e.rank, key))
    out: dict[str, str] = {}
    for alias, owners in claims.items():
        top = max(rank for rank, _ in owners)
        winners = [key for rank, key in owners if rank == top]
        if len(winners) > 1:
            files = " and ".join(str(table[k].origin) for k in winners)
            problems.append(Problem(str(table[winners[-1]].origin), "aliases", (
                f"alias {alias!r} is claimed by {kind.noun}s {', '.join(map(repr, winners))} in "
                f"one layer: {files}")))
            continue
        owner = winners[0]
        named = table.get(alias)
        if named is not None:
            if named.rank > top:
                continue  # a later layer's name wins over an earlier alias
            problems.append(Problem(str(table[owner].origin), "aliases", (
                f"alias {alias!r} of {kind.noun} {owner!r} is the name of {kind.noun} {alias!r} "
                f"({named.origin}); an alias cannot hide a name of the same or an earlier "
                "layer")))
            continue
        out[alias] = owner
    return out


def _shown(entry: Entry) -> str:
    """Where a spec comes from, in words: "the shipped" for roofkit's own specs."""
    if entry.layer.startswith("plugin roofkit_builtins"):
        return f"the shipped {entry.key!r} ({entry.origin})"
    return f"{entry.key!r} of layer {entry.layer} ({entry.origin})"


def _stack(kind: SpecKind, below: dict[str, Entry], layer: dict[str, Entry], problems) -> None:
    """Put one layer's specs over the earlier layers' ``below`` (in place).

    A spec replaces an earlier one only where its file says so (``overrides = "name"``),
    and then answers to every name and alias of the spec it replaced (so references to it
    from other specs follow); a name or an alias that an earlier spec already answers to is
    otherwise an error naming both files, as is an ``overrides`` naming no earlier spec.
    """
    owner: dict[str, str] = {}  # every name and alias below -> the key answering to it
    for key, e in below.items():
        owner[key] = key
        for a in e.claims:
            owner.setdefault(a, key)
    kept: dict[str, Entry] = {}
    taking: dict[str, list[str]] = {}  # key -> specs it takes without overrides (reported)
    for key, e in layer.items():
        for o in e.overrides:
            if o not in below:
                near = closest(o, list(below))
                hint = f"; did you mean {', '.join(map(repr, near))}?" if near else ""
                problems.append(Problem(str(e.origin), OVERRIDES, (
                    f"overrides {o!r}, but no earlier layer has {a_noun(kind.noun)} "
                    f"{o!r}{hint}")))
        for name in (key, *e.claims):
            taken = owner.get(name)
            if taken is None or taken in e.overrides:
                continue
            what = "name" if name == key else "aliases"
            problems.append(Problem(str(e.origin), kind.key if what == "name" else "aliases", (
                f"{a_noun(kind.noun)} {key!r} takes {name!r} from {_shown(below[taken])}; "
                f"write {OVERRIDES} = \"{taken}\" in {e.origin.name} to replace it, or choose "
                f"another {'name' if what == 'name' else 'alias'}")))
            taking.setdefault(key, []).append(taken)
        kept[key] = e  # kept even so: the load fails on the problem, and check goes on
    for key, e in kept.items():
        inherited = list(e.claims)
        for o in (*e.overrides, *taking.get(key, ())):
            gone = below.pop(o, None)
            if gone is not None:  # whatever named the replaced spec now names this one
                inherited += [n for n in (gone.key, *gone.claims)
                              if n != e.key and n not in inherited]
        e.claims = tuple(inherited)
    below.update(kept)


def load_layers(layers, converter, cache, tables) -> tuple[dict[str, Catalogue], list[Problem]]:
    """Load every layer into catalogues. Returns (catalogues, problems)."""
    listed, problems = [], []
    for label, path in layers:
        files, bad = files_of(path)
        problems += bad
        listed.append((label, files))
    cats, found = _load_files(listed, converter, cache, tables)
    return cats, problems + found


def _load_files(layers, converter, cache, tables, only=None, seed=None):
    """Catalogues of layers given as (label, [(kind, file)...]), lowest first, and every
    problem. ``only``: run the cross-file checks of these files alone (``check``);
    ``seed``: entries already loaded, {folder: {key: Entry}}, below every layer."""
    seed = seed or {}
    entries: dict[str, dict[str, Entry]] = {k: dict(seed.get(k, {})) for k in SPEC_KINDS}
    problems: list[Problem] = []
    start = 1 + max((e.rank for t in entries.values() for e in t.values()), default=-1)
    for rank, (label, files) in enumerate(layers, start):
        found = _layer_entries(files, label, rank, converter, cache, problems)
        for folder, table in found.items():
            _stack(SPEC_KINDS[folder], entries[folder], table, problems)
    cats = {}
    for folder, table in entries.items():
        kind = SPEC_KINDS[folder]
        aliases = _aliases(kind, table, problems) if kind.aliases else {}
        cats[folder] = Catalogue(folder, table, aliases)
    tables = {**tables, **cats}
    # the cross-file checks (a workload against the circuits and op rules it lowers with...)
    # depend only on the specs, the code and the plugins: the cache keeps their result for
    # one exact set of files (its stamp holds the code and plugins)
    files = [e.origin for cat in cats.values() for e in cat._entries.values()]
    saved = cache.checks(files) if cache and only is None else None
    if saved is not None:
        return cats, problems + saved
    found: list[Problem] = []
    for folder, cat in cats.items():
        check = SPEC_KINDS[folder].check
        if check is None:
            continue
        for key in cat:
            e = cat._entries[key]
            if only is not None and str(e.origin) not in only:
                continue
            items = check(e.obj, tables)
            if items:
                found += format_problems(e.origin, items)
    if cache and only is None:
        cache.put_checks(files, found)
    return cats, problems + found
