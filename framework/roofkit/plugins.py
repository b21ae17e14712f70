"""The plugin manager and the one typed facade over ``pm.hook``.

Builtins are registered explicitly, third parties through the entry-point group
``roofkit.plugins``. ``ROOFKIT_DISABLE_PLUGIN_AUTOLOAD=1`` skips entry points;
``ROOFKIT_BLOCKED_PLUGINS=a,b`` blocks named ones.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterable
from pathlib import Path

import attrs
import pluggy

from . import hookspecs
from .errors import PluginError

ENTRY_POINT_GROUP = "roofkit.plugins"
PROJECT = "roofkit"


@attrs.frozen
class PluginInfo:
    """What loaded: a plugin's name, its distribution and version, the hooks it implements."""

    name: str
    distribution: str
    version: str
    hooks: tuple[str, ...]


def _builtin_modules():
    import roofkit_builtins

    return [importlib.import_module(m) for m in roofkit_builtins.PLUGINS]


def make_manager(plugins: Iterable[object] | None = None, entry_points: bool = True,
                 blocked: Iterable[str] = (), builtins: bool = True) -> pluggy.PluginManager:
    """A fresh plugin manager: builtins, then entry points (unless disabled), then ``plugins``."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    env_blocked = [b for b in os.environ.get("ROOFKIT_BLOCKED_PLUGINS", "").split(",") if b]
    for name in [*blocked, *env_blocked]:
        pm.set_blocked(name.strip())
    if builtins:
        for mod in _builtin_modules():
            pm.register(mod, name=f"roofkit_builtins.{mod.__name__.rsplit('.', 1)[-1]}")
    if entry_points and not os.environ.get("ROOFKIT_DISABLE_PLUGIN_AUTOLOAD"):
        try:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
        except Exception as exc:
            raise PluginError(f"loading entry points of group {ENTRY_POINT_GROUP!r} failed: "
                              f"{type(exc).__name__}: {exc}") from exc
    for i, plugin in enumerate(plugins or ()):
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{i}"
        if pm.is_registered(plugin):
            continue
        pm.register(plugin, name=name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"plugin {exc.plugin!r} implements an unknown hook: {exc}. Hook names start with "
            "'roofkit_register_'; see the plugin guide in README.md") from exc
    return pm


class Hooks:
    """Typed facade over ``pm.hook``: the one place roofkit calls pluggy."""

    def __init__(self, pm: pluggy.PluginManager):
        self.pm = pm

    def _collect(self, hook_name: str) -> list[tuple[str, object]]:
        """(plugin name, item) for every item every plugin returned, in registration order."""
        caller = getattr(self.pm.hook, hook_name)
        out = []
        for impl in reversed(caller.get_hookimpls()):  # pluggy lists last-registered first
            try:
                result = impl.function()
            except Exception as exc:
                raise PluginError(f"plugin {impl.plugin_name!r} failed in {hook_name}: "
                                  f"{type(exc).__name__}: {exc}") from exc
            if result is None:
                continue
            try:
                items = list(result)
            except TypeError:
                raise PluginError(f"plugin {impl.plugin_name!r}: {hook_name} must return an "
                                  f"iterable, got {type(result).__name__}") from None
            out += [(impl.plugin_name, item) for item in items]
        return out

    def named(self, hook_name: str, cls: type) -> dict[str, tuple[str, object]]:
        """Objects of ``cls`` keyed by lowercased name (and alias); duplicates name both plugins."""
        table: dict[str, tuple[str, object]] = {}
        for plugin, item in self._collect(hook_name):
            if not isinstance(item, cls):
                raise PluginError(f"plugin {plugin!r}: {hook_name} returned {item!r}; expected "
                                  f"{cls.__module__}.{cls.__qualname__} objects")
            keys = [item.name.lower(), *(a.lower() for a in getattr(item, "aliases", ()))]
            for key in keys:
                if key in table:
                    other = table[key][0]
                    raise PluginError(f"{cls.__name__.lower()} {key!r} is registered by both "
                                      f"plugin {other!r} and plugin {plugin!r}; rename one, or "
                                      "block a plugin with ROOFKIT_BLOCKED_PLUGINS")
                table[key] = (plugin, item)
        return table

    def spec_dirs(self) -> list[tuple[str, Path]]:
        out = []
        for plugin, item in self._collect("roofkit_register_spec_dirs"):
            path = Path(item)
            if not path.is_dir():
                raise PluginError(
                    f"plugin {plugin!r} registers spec dir {path}, which is not a folder")
            out.append((plugin, path))
        return out

    def infos(self) -> list[PluginInfo]:
        dists = {id(p): d for p, d in self.pm.list_plugin_distinfo()}
        out = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None:
                continue
            dist = dists.get(id(plugin))
            hooks = tuple(sorted(h.name for h in self.pm.get_hookcallers(plugin) or ()))
            if dist is not None:
                dname = dist.metadata["name"]
                version = dist.version
            elif name.startswith("roofkit_builtins"):
                from . import __version__

                dname, version = "roofkit", __version__
            else:
                dname, version = "(not installed)", ""
            out.append(PluginInfo(name, dname, version, hooks))
        return out
