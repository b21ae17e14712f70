"""Attribute access to the catalogue: ``Hardware.Cloud.H100``, ``Models.Vision.ResNet50``,
``Scenarios.Gpt2XlEagerDecodeDispatch``. Resolved against the default registry on access."""

from __future__ import annotations

import re

from .errors import UnknownNameError


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


class _Group:
    """Specs of one catalogue, optionally filtered by a field value (category, domain)."""

    def __init__(self, folder: str, field: str | None = None, value: str | None = None,
                 label: str = ""):
        self._folder, self._field, self._value = folder, field, value
        self._label = label or folder

    def _specs(self):
        from .registry import default_registry

        cat = default_registry().catalogues[self._folder]
        for spec in cat.values():
            if self._field is None or getattr(spec, self._field) == self._value:
                yield spec

    def _find(self, attr: str):
        specs = list(self._specs())
        for s in specs:
            if getattr(s, "attr_name", None) == attr:
                return s
        n = _norm(attr)
        for s in specs:
            names = [s.name, getattr(s, "attr_name", ""), *getattr(s, "aliases", ())]
            if any(_norm(x) == n for x in names if x):
                return s
        known = [getattr(s, "attr_name", s.name) for s in specs]
        raise UnknownNameError(self._label, attr, known)

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self._find(attr)
        except UnknownNameError as exc:
            raise AttributeError(str(exc)) from None

    def __dir__(self):
        return sorted(getattr(s, "attr_name", s.name) for s in self._specs())

    def __iter__(self):
        return iter(list(self._specs()))

    def __repr__(self) -> str:
        return f"<roofkit {self._label}: {', '.join(dir(self))}>"


class _Hardware(_Group):
    Cloud = _Group("devices", "category", "cloud", "cloud device")
    Workstation = _Group("devices", "category", "workstation", "workstation device")
    Mobile = _Group("devices", "category", "mobile", "mobile device")
    Edge = _Group("devices", "category", "edge", "edge device")
    Tiny = _Group("devices", "category", "tiny", "tiny device")


class _Models(_Group):
    Language = _Group("workloads", "domain", "language", "language model")
    Vision = _Group("workloads", "domain", "vision", "vision model")
    Speech = _Group("workloads", "domain", "speech", "speech model")
    Audio = _Group("workloads", "domain", "audio", "audio model")
    Tiny = _Group("workloads", "domain", "tiny", "tiny model")
    Multimodal = _Group("workloads", "domain", "multimodal", "multimodal model")


class _Scenarios:
    """Named scenarios from the catalogue, each built from its TOML inputs."""

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        from .registry import default_registry

        reg = default_registry()
        try:
            return reg.scenario(attr)
        except UnknownNameError as exc:
            raise AttributeError(str(exc)) from None

    def __dir__(self):
        from .registry import default_registry

        return sorted(s.name for s in default_registry().catalogues["scenarios"].values())


Hardware = _Hardware("devices", label="device")
Models = _Models("workloads", label="workload")
Scenarios = _Scenarios()
