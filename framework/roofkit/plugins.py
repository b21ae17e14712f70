"""The plugin manager and the one typed facade over ``pm.hook``.

Builtins are registered explicitly, third parties through the entry-point group
``roofkit.plugins``. ``ROOFKIT_DISABLE_PLUGIN_AUTOLOAD=1`` skips entry points;
``ROOFKIT_BLOCKED_PLUGINS=a,b`` blocks named ones.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterable
from pathlib import Path

import attrs
import pluggy

from . import hookspecs
from .errors import PluginError, cut

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
        _load_entry_points(pm)
    for i, plugin in enumerate(plugins or ()):
        if isinstance(plugin, str):
            with guarded(f"plugin module {plugin!r}", "failed to import"):
                plugin = importlib.import_module(plugin)
        name = getattr(plugin, "__name__", None) or f"{type(plugin).__name__}-{i}"
        if pm.is_registered(plugin):
            continue
        _register(pm, plugin, name)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"plugin {_plugin_name(pm, exc.plugin)!r} implements an unknown hook: {exc}. Hook "
            "names start with 'roofkit_register_'; see the plugin guide in README.md") from exc
    return pm


@contextlib.contextmanager
def guarded(who: str, doing: str):
    """Turn anything a plugin's code raises, ``sys.exit`` included, into a PluginError that
    names the plugin; Ctrl-C still stops the process."""
    try:
        yield
    except (KeyboardInterrupt, PluginError):
        raise
    except SystemExit as exc:
        raise PluginError(f"{who} {doing}: it called sys.exit({exc.code!r}); a plugin must "
                          "raise an exception, never exit the process") from None
    except BaseException as exc:
        raise PluginError(f"{who} {doing}: {type(exc).__name__}: {cut(exc, 500)}") from exc


def _plugin_name(pm: pluggy.PluginManager, plugin) -> str:
    return pm.get_name(plugin) or getattr(plugin, "__name__", None) or repr(plugin)


def _register(pm: pluggy.PluginManager, plugin, name: str) -> None:
    """``pm.register``, with a hook of the wrong signature named by plugin and hook."""
    try:
        pm.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r} has a hook that does not match its hookspec: "
                          f"{exc}. Registration hooks take no arguments; see the plugin guide "
                          "in README.md") from None
    except ValueError as exc:  # pluggy: a name or object registered twice
        raise PluginError(f"plugin {name!r} could not be registered: {exc}") from None


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Load every ``roofkit.plugins`` entry point one by one, so a plugin that fails to
    import, exits, or has a bad hook is named with its distribution."""
    from importlib import metadata

    for dist in list(metadata.distributions()):
        for ep in dist.entry_points:
            if ep.group != ENTRY_POINT_GROUP or pm.get_plugin(ep.name) or \
                    pm.is_blocked(ep.name):
                continue
            dname = dist.metadata["name"]
            who = f"plugin {ep.name!r} (entry point {ep.value!r} of {dname} {dist.version})"
            with guarded(who, "failed to load"):
                try:
                    pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP, name=ep.name)
                except pluggy.PluginValidationError as exc:
                    raise PluginError(f"{who} has a hook that does not match its hookspec: "
                                      f"{exc}. Registration hooks take no arguments; see "
                                      "the plugin guide in README.md") from None


class Hooks:
    """Typed facade over ``pm.hook``: the one place roofkit calls pluggy."""

    def __init__(self, pm: pluggy.PluginManager):
        self.pm = pm

    def _collect(self, hook_name: str) -> list[tuple[str, object]]:
        """(plugin name, item) for every item every plugin returned, in registration order."""
        caller = getattr(self.pm.hook, hook_name)
        out = []
        for impl in reversed(caller.get_hookimpls()):  # pluggy lists last-registered first
            who = f"plugin {impl.plugin_name!r}"
            with guarded(who, f"failed in {hook_name}"):
                result = impl.function()
            if result is None:
                continue
            if not isinstance(result, Iterable) or isinstance(result, str | bytes):
                raise PluginError(f"{who}: {hook_name} must return an iterable of objects, "
                                  f"got {type(result).__name__}")
            with guarded(who, f"failed in {hook_name} while its result was read"):
                items = list(result)  # a generator runs the plugin's code here
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
