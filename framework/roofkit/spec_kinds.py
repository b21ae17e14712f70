"""The kinds of spec a catalogue folder holds, by folder name.

Each kind names its attrs class, the field that keys it, and an optional cross-check run
after the plugins registered (it sees the registry's tables: precisions, op kinds…).
"""

from __future__ import annotations

import functools
import importlib

import attrs


@attrs.frozen
class SpecKind:
    folder: str
    cls_path: str  # "module:Class"
    key: str = "name"
    check_path: str | None = None  # "module:function(obj, tables) -> [(key path, message)]"
    aliases: bool = True
    marker: str | None = None  # a top-level key that tells a loose file is of this kind
    label: str | None = None  # the noun for one spec, when not the folder name less its "s"
    warn_path: str | None = None  # "module:function(obj, tables) -> [(key path, message)]"

    @property
    def noun(self) -> str:
        """One spec of this kind, in words: ``device``, ``op rule``, ``validation case``."""
        return self.label or self.folder.removesuffix("s")

    @functools.cached_property
    def cls(self):
        mod, name = self.cls_path.split(":")
        return getattr(importlib.import_module(mod), name)

    @functools.cached_property
    def warn(self):
        """``check``'s warnings for one spec (they do not stop it loading), or None."""
        if self.warn_path is None:
            return None
        mod, name = self.warn_path.split(":")
        return getattr(importlib.import_module(mod), name)

    @functools.cached_property
    def check(self):
        if self.check_path is None:
            return None
        mod, name = self.check_path.split(":")
        return getattr(importlib.import_module(mod), name)


def a(noun: str) -> str:
    """``noun`` with its indefinite article: ``a device``, ``an op rule``."""
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


SPEC_KINDS: dict[str, SpecKind] = {
    k.folder: k
    for k in (
        SpecKind("devices", "roofkit.schema.device:Device", marker="compute"),
        SpecKind("workloads", "roofkit.schema.workload:Workload",
                 check_path="roofkit.schema.workload_check:check", marker="domain",
                 warn_path="roofkit.circuit.validate:workload_warnings"),
        SpecKind("scenarios", "roofkit.scenarios.spec:ScenarioSpec",
                 check_path="roofkit.scenarios.spec:check", marker="kind"),
        SpecKind("circuits", "roofkit.circuit.spec:CircuitTemplate",
                 check_path="roofkit.circuit.spec:check_circuit", aliases=False, marker="nodes"),
        SpecKind("ops", "roofkit.circuit.spec:OpRule",
                 check_path="roofkit.circuit.spec:check_op_rule", aliases=False, marker="decode",
                 label="op rule"),
        SpecKind("calibration", "roofkit.schema.calibration:Calibration",
                 check_path="roofkit.schema.calibration:check", aliases=False),
        SpecKind("validation", "roofkit.schema.validation:ValidationCase",
                 check_path="roofkit.schema.validation:check", aliases=False, marker="metric",
                 label="validation case"),
        SpecKind("engines", "roofkit.schema.engine:EngineSpec",
                 check_path="roofkit.schema.engine:check", marker="scheduler",
                 label="engine profile"),
        SpecKind("load_cases", "roofkit.schema.load_case:LoadCase",
                 check_path="roofkit.schema.load_case:check", aliases=False,
                 label="load validation case"),
        SpecKind("clusters", "roofkit.fleet.cluster:Cluster",
                 check_path="roofkit.fleet.cluster:check", marker="scale_up"),
        SpecKind("training", "roofkit.fleet.cases:TrainingCase",
                 check_path="roofkit.fleet.cases:check", aliases=False, marker="layout",
                 label="training case"),
    )
}


def infer_kind(data: dict) -> SpecKind | None:
    """The kind of a loose spec file, from its marker key."""
    hits = [k for k in SPEC_KINDS.values() if k.marker and k.marker in data]
    return hits[0] if len(hits) == 1 else None
