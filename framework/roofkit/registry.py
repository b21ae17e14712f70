"""The registry: plugins' objects and the layered spec catalogues, frozen into dict lookups.

``build_registry()`` runs every hook once; solvers then only do dict hits on the result.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from types import MappingProxyType

from .cache import SpecCache
from .catalogue import Catalogue, load_layers, load_spec, spec_layers
from .errors import SpecError, UnknownNameError
from .files import read_spec_bytes, real_path
from .loader import make_converter
from .plugins import Hooks, PluginInfo, make_manager
from .spec_kinds import SPEC_KINDS
from .spec_kinds import a as _a
from .types import CollectiveAlgorithm, CostModel, OpKind, Precision, ScenarioKind


def is_path_ref(ref) -> bool:
    """Whether ``ref`` names a spec file (a Path, or a string ending in ``.toml``) rather
    than a catalogue name."""
    return isinstance(ref, Path) or (isinstance(ref, str) and ref.endswith(".toml"))

#: the object type of each plugin table (what a lookup accepts besides a name)
_TABLE_TYPES = {"precisions": Precision, "op_kinds": OpKind, "cost_models": CostModel,
                "scenario_kinds": ScenarioKind}
_EXAMPLES = {"precisions": "bf16", "op_kinds": "linear", "cost_models": "roofline",
             "scenario_kinds": "host_dispatch"}


class Registry:
    """Everything roofkit knows, immutable after build.

    Catalogues (``devices``, ``workloads``, ``scenarios``…) map key → spec; the plugin tables
    (``precisions``, ``op_kinds``, ``cost_models``, ``scenario_kinds``) map lowercased name →
    object. ``origin(name)`` names the file a spec came from.
    """

    def __init__(self, *, tables, catalogues, plugins, converter, spec_layers):
        self._tables = tables  # name -> {key: (plugin, obj)}
        self.catalogues: dict[str, Catalogue] = MappingProxyType(catalogues)
        self.plugins: tuple[PluginInfo, ...] = tuple(plugins)
        self.converter = converter
        self.spec_layers = tuple(spec_layers)
        self.precisions = MappingProxyType({k: v[1] for k, v in tables["precisions"].items()})
        self.op_kinds = MappingProxyType({k: v[1] for k, v in tables["op_kinds"].items()})
        self.cost_models = MappingProxyType({k: v[1] for k, v in tables["cost_models"].items()})
        self.scenario_kinds = MappingProxyType(
            {k: v[1] for k, v in tables["scenario_kinds"].items()})
        self.collectives = MappingProxyType(
            {k: v[1] for k, v in tables.get("collectives", {}).items()})
        self._memo: dict = {}

    def __getattr__(self, name):
        cats = self.__dict__.get("catalogues", {})
        if name in cats:
            return cats[name]
        raise AttributeError(name)

    def __reduce__(self):
        raise TypeError("a Registry is not picklable; build one in each process")

    # -- plugin tables -------------------------------------------------------------------
    def _lookup(self, table: str, kind: str, name):
        if not isinstance(name, str):
            cls = _TABLE_TYPES[table]
            if isinstance(name, cls):
                return name
            from .errors import ArgumentError, shown

            raise ArgumentError(f"a {kind} is given by name (a string such as "
                                f"{_EXAMPLES[table]!r}) or as a "
                                f"{cls.__name__} object, got {shown(name, 80)} "
                                f"({type(name).__name__})")
        mapping = getattr(self, table)
        try:
            return mapping[name.strip().lower()]
        except KeyError:
            names = sorted({o.name for o in mapping.values()})
            raise UnknownNameError(kind, name, names) from None

    def precision(self, name) -> Precision:
        return self._lookup("precisions", "precision", name)

    def op_kind(self, name) -> OpKind:
        return self._lookup("op_kinds", "op kind", name)

    def cost_model(self, name) -> CostModel:
        return self._lookup("cost_models", "cost model", name)

    def scenario_kind(self, name) -> ScenarioKind:
        return self._lookup("scenario_kinds", "scenario kind", name)

    def collective(self, name) -> CollectiveAlgorithm:
        return self._lookup("collectives", "collective algorithm", name)

    def cluster(self, ref):
        """A cluster by key, alias, TOML path, spec object or ``NxDEVICE`` (ad hoc)."""
        from .fleet.cluster import resolve_cluster

        return resolve_cluster(ref, self)

    def provider(self, table: str, name: str) -> str:
        """The plugin that registered ``name`` in a plugin table."""
        return self._tables[table][name.lower()][0]

    # -- catalogues ----------------------------------------------------------------------
    def _spec(self, folder: str, ref):
        kind = SPEC_KINDS[folder]
        if isinstance(ref, kind.cls):
            return ref
        if folder == "workloads" and self._is_hf(ref):
            return self._hf_workload(ref)
        if is_path_ref(ref):
            # keyed by the real path and the bytes: another folder's "m.toml" after a chdir,
            # a case variant of the name or an edit that keeps size and mtime is another key
            real = real_path(ref)
            key = (folder, str(real), hashlib.sha256(read_spec_bytes(real)).digest())
            if key not in self._memo:
                self._memo[key] = load_spec(kind, ref, self.converter,
                                            {**self._tables, **self.catalogues})
            return self._memo[key]
        if not isinstance(ref, str):
            from .errors import ArgumentError, shown

            raise ArgumentError(f"expected a {kind.noun} name, TOML path or spec object, got "
                                f"{shown(ref, 80)} ({type(ref).__name__})")
        cat = self.catalogues[folder]
        try:
            return cat[ref]
        except UnknownNameError as exc:
            hint = self._other_kind_hint(folder, ref)
            if folder == "workloads" and not hint:
                from .importers.hf_folder import find_cached, hub_cache_dirs, is_hub_id

                if is_hub_id(ref):
                    if find_cached(ref) is not None:
                        return self._hf_workload(ref)
                    hint = (f"Nor is it in a local Hugging Face cache "
                            f"({', '.join(map(str, hub_cache_dirs()))}); roofkit does not "
                            "download: fetch its config.json first or pass the model folder.")
                else:
                    hint = ("A Hugging Face config.json, model folder or cached hub id "
                            "(org/name) works too.")
            if not hint:
                raise
            raise UnknownNameError(exc.kind, exc.name, exc.known,
                                   f"{hint} {exc.hint}".strip()) from None

    def _is_hf(self, ref) -> bool:
        """Whether a workload reference is a Hugging Face config.json or model folder (a
        catalogue name or alias always wins over a folder of the same name)."""
        if isinstance(ref, str):
            if ref in self.catalogues["workloads"] or ref.endswith(".toml"):
                return False
        elif not isinstance(ref, Path):
            return False
        from .importers.hf_folder import is_hf_path

        return is_hf_path(ref)

    def _hf_workload(self, ref):
        """The workload imported from a Hugging Face model, once per version of its files
        (keyed by their paths and modification times, so a second lookup reads nothing)."""
        from .importers import read_hf, workload_from_hf
        from .importers.hf_folder import model_files_key

        key = ("hf-workload", model_files_key(ref))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = workload_from_hf(read_hf(ref), registry=self)
        return hit

    def _other_kind_hint(self, folder: str, name: str) -> str:
        """'h100' is a device, not a workload…: the catalogue ``name`` is in when it is not
        in ``folder``; a device/workload mix-up also names the argument order."""
        for other, cat in self.catalogues.items():
            if other == folder or name not in cat:
                continue
            key = cat.resolve(name)
            shown = f"{name!r} is {_a(cat.noun)}" + (f" ({key})" if key != name.lower() else "")
            hint = f"{shown}, not {_a(SPEC_KINDS[folder].noun)}"
            if {folder, other} == {"devices", "workloads"}:
                hint += "; commands that take both want the workload first: WORKLOAD DEVICE"
            return hint + "."
        return ""

    def device(self, ref):
        """A device by key, alias (any case), TOML path, or the spec itself."""
        return self._spec("devices", ref)

    def workload(self, ref):
        """A workload by key, alias (any case), TOML path, Hugging Face config.json or model
        folder, hub id in the local Hugging Face cache, or the spec itself."""
        return self._spec("workloads", ref)

    def scenario(self, ref):
        """A named scenario (key, alias, TOML path) built into its kind's object."""
        from .scenarios import resolve_scenario

        return resolve_scenario(self, ref)

    def spec(self, folder: str, ref):
        return self._spec(folder, ref)

    def origin(self, name: str, kind: str | None = None) -> Path:
        """The file whose spec won for ``name`` (searching every catalogue unless ``kind``)."""
        folders = [kind] if kind else list(self.catalogues)
        for f in folders:
            cat = self.catalogues[f]
            if name in cat:
                return cat.origin(name)
        known = [k for f in folders for k in self.catalogues[f]]
        raise UnknownNameError("spec", name, known)

    @property
    def plugin_set(self) -> tuple[str, ...]:
        """The plugins this registry was built from, ``"module (distribution version)"``:
        results record it, so a number can be traced to the code that produced it."""
        return self.memo("roofkit.plugin_set", lambda: tuple(
            f"{i.name} ({i.distribution} {i.version})" for i in self.plugins))

    def memo(self, key, make):
        """Per-registry cache of derived objects (lowered circuits, resolved tables)."""
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = make()
            return value


def build_registry(plugins=None, entry_points: bool = True, spec_paths=(), *,
                   blocked=(), builtins: bool = True, cache: bool = True,
                   specs: bool = True) -> Registry:
    """Build a fresh, immutable registry.

    :param plugins: extra plugin objects or module names to register after the builtins.
    :param entry_points: load third-party plugins of group ``roofkit.plugins`` (also off when
        ``ROOFKIT_DISABLE_PLUGIN_AUTOLOAD`` is set).
    :param spec_paths: user spec folders or files, layered after plugin spec dirs and before
        ``ROOFKIT_SPEC_PATH``.
    :param specs: load spec catalogues (False gives the plugin tables alone, for ``check``).
    """
    pm = make_manager(plugins, entry_points=entry_points, blocked=blocked, builtins=builtins)
    hooks = Hooks(pm)
    tables = {
        "precisions": hooks.named("roofkit_register_precisions", Precision),
        "op_kinds": hooks.named("roofkit_register_op_kinds", OpKind),
        "cost_models": hooks.named("roofkit_register_cost_models", CostModel),
        "scenario_kinds": hooks.named("roofkit_register_scenario_kinds", ScenarioKind),
        "collectives": hooks.named("roofkit_register_collectives", CollectiveAlgorithm),
    }
    converter = make_converter()
    infos = hooks.infos()
    plugin_dirs = hooks.spec_dirs()
    layers = spec_layers(plugin_dirs, spec_paths)  # kept with specs=False too, for `check`
    spec_cache = _spec_cache(plugin_dirs, infos) if cache and specs else None
    catalogues, problems = load_layers(layers if specs else [], converter, spec_cache, tables)
    if spec_cache:
        spec_cache.save()
    if problems:
        raise SpecError(problems, title=f"{len(problems)} problem(s) in the spec catalogue")
    return Registry(tables=tables, catalogues=catalogues, plugins=infos,
                    converter=converter, spec_layers=layers)


def _spec_cache(plugin_dirs, infos) -> SpecCache:
    return SpecCache(spec_dirs=[d for _, d in plugin_dirs],
                     plugins={(i.distribution, i.version) for i in infos})


def check_specs(paths, *, entry_points: bool = True, spec_paths=(), cache: bool = True):
    """``roofkit check``: (files checked, problems, warnings) of the spec files under
    ``paths``, read as the last layers over the catalogue's own (plugin spec dirs, ``spec_paths``,
    ``ROOFKIT_SPEC_PATH``, less the files being checked), so they are checked against the
    catalogue they would join, whether or not that catalogue loads as it stands."""
    from .catalogue import check_paths

    reg = build_registry(entry_points=entry_points, spec_paths=spec_paths, specs=False)
    plugin_dirs = [(label, d) for label, d in reg.spec_layers if label.startswith("plugin ")]
    spec_cache = _spec_cache(plugin_dirs, reg.plugins) if cache else None
    n, problems, warnings = check_paths(paths, reg.converter, reg._tables, reg.spec_layers,
                                        spec_cache)
    if spec_cache:
        spec_cache.save()
    return n, problems, warnings


@functools.cache
def default_registry() -> Registry:
    """The process default registry, built on first use (tests build their own)."""
    return build_registry()


def resolve(registry: Registry | None) -> Registry:
    """``registry``, or the process default when None; anything else is an ArgumentError
    (``registry="x"`` must not surface later as an AttributeError)."""
    if registry is None:
        return default_registry()
    if not isinstance(registry, Registry):
        from .errors import ArgumentError, shown

        raise ArgumentError(f"registry must be a roofkit Registry (roofkit.build_registry()) "
                            f"or None for the default, got {shown(registry, 80)} "
                            f"({type(registry).__name__})")
    return registry
