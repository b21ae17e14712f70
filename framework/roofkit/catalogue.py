"""Layered spec catalogues: builtin specs, plugin spec dirs, user paths, ``ROOFKIT_SPEC_PATH``.

Later layers win by name; :meth:`Catalogue.origin` names the file that won. Lookups are by
key or alias, case-insensitively, and teach the closest names when they miss.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType

import attrs

from .errors import SpecError, UnknownNameError
from .loader import format_problems, problems_of, read_toml
from .spec_kinds import SPEC_KINDS, SpecKind


@attrs.frozen
class Entry:
    obj: object
    origin: Path
    layer: str


def _norm(name: str) -> str:
    return name.strip().lower()


class Catalogue(Mapping):
    """An immutable name → spec mapping with aliases and origins."""

    def __init__(self, kind: str, entries: dict[str, Entry], aliases: dict[str, str]):
        self.kind = kind
        self._entries = MappingProxyType(entries)
        self._aliases = MappingProxyType(aliases)

    def __getitem__(self, name: str):
        return self._entries[self.resolve(name)].obj

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name) -> bool:
        return isinstance(name, str) and (_norm(name) in self._entries or _norm(name) in self._aliases)

    def resolve(self, name: str) -> str:
        """The key for ``name`` (key or alias, any case); UnknownNameError with suggestions."""
        n = _norm(name)
        if n in self._entries:
            return n
        if n in self._aliases:
            return self._aliases[n]
        known = list(self._entries) + list(self._aliases)
        raise UnknownNameError(self.kind.rstrip("s"), name, known)

    def entry(self, name: str) -> Entry:
        return self._entries[self.resolve(name)]

    def origin(self, name: str) -> Path:
        return self.entry(name).origin

    def values_in_order(self):
        return [e.obj for e in self._entries.values()]


def spec_layers(plugin_dirs, user_paths) -> list[tuple[str, Path]]:
    """(layer label, path) in precedence order, lowest first."""
    layers = [(f"plugin {p}", d) for p, d in plugin_dirs]
    layers += [("user", Path(p)) for p in user_paths]
    env = os.environ.get("ROOFKIT_SPEC_PATH", "")
    layers += [("ROOFKIT_SPEC_PATH", Path(p)) for p in env.split(os.pathsep) if p]
    return layers


def _files_of(path: Path) -> list[tuple[SpecKind, Path]]:
    """Spec files under a layer path: a root with kind folders, a kind folder, or one file."""
    if path.is_file():
        kind = SPEC_KINDS.get(path.parent.name)
        if kind is None:
            from .spec_kinds import infer_kind

            try:
                kind = infer_kind(read_toml(path))
            except SpecError:
                kind = None
        if kind is None:
            raise SpecError(f"{path}: cannot tell what kind of spec this is; put it in a folder "
                            f"named one of {', '.join(SPEC_KINDS)}")
        return [(kind, path)]
    if not path.is_dir():
        raise SpecError(f"spec path {path} does not exist (from ROOFKIT_SPEC_PATH or spec_paths)")
    if path.name in SPEC_KINDS and not any((path / k).is_dir() for k in SPEC_KINDS):
        return [(SPEC_KINDS[path.name], f) for f in sorted(path.glob("*.toml"))]
    out = []
    for folder, kind in SPEC_KINDS.items():
        d = path / folder
        if d.is_dir():
            out += [(kind, f) for f in sorted(d.rglob("*.toml"))]
    return out


def load_layers(layers, converter, cache, tables) -> tuple[dict[str, Catalogue], list[str]]:
    """Load every layer into catalogues. Returns (catalogues, problem lines)."""
    entries: dict[str, dict[str, Entry]] = {k: {} for k in SPEC_KINDS}
    problems: list[str] = []
    for label, path in layers:
        try:
            files = _files_of(path)
        except SpecError as exc:
            problems += exc.problems
            continue
        seen_here: dict[tuple[str, str], Path] = {}
        for kind, file in files:
            file = file.resolve()
            obj = cache.get(file, kind.folder) if cache else None
            if obj is None:
                try:
                    data = read_toml(file)
                except SpecError as exc:
                    problems += exc.problems
                    continue
                obj, items = problems_of(data, kind.cls, converter)
                if items:
                    problems += format_problems(file, items)
                    continue
                if cache:
                    cache.put(file, kind.folder, obj)
            key = _norm(getattr(obj, kind.key))
            if (kind.folder, key) in seen_here:
                problems.append(f"{kind.folder[:-1]} {key!r} is defined twice in one layer: "
                                f"{seen_here[(kind.folder, key)]} and {file} @ {file}:{kind.key}")
                continue
            seen_here[(kind.folder, key)] = file
            entries[kind.folder][key] = Entry(obj, file, label)
    cats = {}
    for folder, table in entries.items():
        kind = SPEC_KINDS[folder]
        aliases: dict[str, str] = {}
        if kind.aliases:
            for key, e in table.items():
                for a in (*getattr(e.obj, "aliases", ()), getattr(e.obj, "symbol", None)):
                    if a and _norm(a) not in table:
                        aliases.setdefault(_norm(a), key)
        cats[folder] = Catalogue(folder, table, aliases)
    tables = {**tables, **cats}
    for folder, cat in cats.items():
        check = SPEC_KINDS[folder].check
        if check is None:
            continue
        for key in cat:
            e = cat._entries[key]
            items = check(e.obj, tables)
            if items:
                problems += format_problems(e.origin, items)
    return cats, problems
