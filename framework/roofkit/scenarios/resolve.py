"""From a reference (name, alias, TOML path, spec, object) to a built scenario object."""

from __future__ import annotations

from pathlib import Path

from ..errors import ArgumentError, SpecError, UnknownNameError, shown
from .spec import ScenarioSpec, build


def scenario_spec(registry, ref) -> ScenarioSpec:
    """The spec behind ``ref``: a catalogue name or alias (any case), or a TOML path."""
    if isinstance(ref, ScenarioSpec):
        return ref
    if isinstance(ref, Path) or (isinstance(ref, str) and ref.endswith(".toml")):
        return registry.spec("scenarios", ref)  # loads and checks against the kinds
    if not isinstance(ref, str):
        raise ArgumentError(f"expected a scenario name, TOML path, spec or scenario object, "
                            f"got {shown(ref, 80)} ({type(ref).__name__})")
    catalogue = registry.catalogues["scenarios"]
    return catalogue.entry(_key(catalogue, ref)).obj


def _key(catalogue, ref: str) -> str:
    """The catalogue key of a name or alias; an unknown one suggests names as written."""
    try:
        return catalogue.resolve(ref)
    except UnknownNameError:
        known = [n for s in catalogue.values() for n in (s.name, *s.aliases)]
        raise UnknownNameError("scenario", ref, known, "`roofkit scenarios` lists them.") from None


def instantiate(registry, spec: ScenarioSpec, origin: str = "<spec>"):
    """Build the kind's object from a spec; a SpecError lists every problem with its key."""
    kind = registry.scenario_kind(spec.kind)
    obj, problems = build(kind.cls, spec.inputs, spec.parsed)
    if problems:
        raise SpecError([f"{m} @ {origin}:{p}" for p, m in problems],
                        title=f"scenario {spec.name!r}: {len(problems)} problem(s)")
    return obj


def resolve_scenario(registry, ref):
    """A scenario object for ``ref``: a registered kind's object is returned as is; a name
    or alias (any case) comes from the catalogue, built once per registry; a TOML path or
    :class:`ScenarioSpec` is built from its inputs."""
    classes = tuple({kind.cls for kind in registry.scenario_kinds.values()})
    if classes and isinstance(ref, classes):
        return ref
    if isinstance(ref, str) and not ref.endswith(".toml"):
        catalogue = registry.catalogues["scenarios"]
        key = _key(catalogue, ref)
        entry = catalogue.entry(key)
        return registry.memo(("scenario", key),
                             lambda: instantiate(registry, entry.obj, str(entry.origin)))
    spec = scenario_spec(registry, ref)
    return instantiate(registry, spec, str(ref) if not isinstance(ref, ScenarioSpec) else
                       "<spec>")
