"""Fleets: clusters as specs, collectives on their links, layouts, training steps and the
layout search (DESIGN.md, "Past one node")."""


def __getattr__(name: str):
    """``roofkit.fleet.validation`` (and every other submodule) after ``import roofkit``."""
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
