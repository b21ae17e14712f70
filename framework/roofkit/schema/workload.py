"""Workload specs: a transformer by its architecture dims, or a generic declared workload."""

from __future__ import annotations

from typing import Literal

import attrs

from .common import check_key, check_symbol, provenance_problems, symbol_from
from .fields import count, quantity

Domain = Literal["language", "vision", "speech", "audio", "tiny", "multimodal"]


@attrs.frozen
class Generic:
    """A workload without a circuit template: declared parameters and forward FLOPs."""

    params: float
    flops_per_sample: float = quantity("compute")
    layers: int = count()
    sample: str = attrs.field(default="sample", kw_only=True)


@attrs.frozen
class Published:
    """Publisher-stated counts, kept only to check the derived ones."""

    params: float | None = None
    active_params: float | None = None


@attrs.frozen
class Workload:
    """A workload spec. Template workloads derive parameters and FLOPs from ``dims``."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    domain: Domain
    sources: dict[str, str]
    provenance: dict[str, str]
    aliases: tuple[str, ...] = ()
    symbol: str | None = attrs.field(default=None, validator=check_symbol)
    template: str | None = None
    dims: dict[str, float] = attrs.field(factory=dict)
    formats: dict[str, str] = attrs.field(factory=dict)
    generic: Generic | None = None
    published: Published = Published()
    notes: str = ""

    @property
    def attr_name(self) -> str:
        return self.symbol or symbol_from(self.name)

    @property
    def is_template(self) -> bool:
        return self.template is not None

    def dim(self, key: str, default: float | None = None) -> float:
        v = self.dims.get(key, default)
        if v is None:
            raise KeyError(key)
        return v

    def numeric_paths(self) -> list[str]:
        out = [f"dims.{k}" for k in self.dims]
        if self.generic is not None:
            out += ["generic.params", "generic.flops_per_sample", "generic.layers"]
        for f in ("params", "active_params"):
            if getattr(self.published, f) is not None:
                out.append(f"published.{f}")
        return out

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if (self.template is None) == (self.generic is None):
            out.append(("template", "give either `template` with [dims] (a transformer) or a "
                        "[generic] table (declared params and FLOPs), not both or neither"))
        if self.template is None and self.dims:
            out.append(("dims", "[dims] needs a `template` that reads them"))
        for k, v in self.dims.items():
            if v < 0:
                out.append((f"dims.{k}", f"dims must be nonnegative, got {v}"))
        if self.generic is not None and self.generic.params <= 0:
            out.append(("generic.params", "params must be positive"))
        out += provenance_problems(self, self.numeric_paths())
        return out
