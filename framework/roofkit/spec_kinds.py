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

    @functools.cached_property
    def cls(self):
        mod, name = self.cls_path.split(":")
        return getattr(importlib.import_module(mod), name)

    @functools.cached_property
    def check(self):
        if self.check_path is None:
            return None
        mod, name = self.check_path.split(":")
        return getattr(importlib.import_module(mod), name)


SPEC_KINDS: dict[str, SpecKind] = {
    k.folder: k
    for k in (
        SpecKind("devices", "roofkit.schema.device:Device"),
        SpecKind("workloads", "roofkit.schema.workload:Workload",
                 check_path="roofkit.schema.workload_check:check"),
    )
}
