"""Device specs: compute peaks per slot, memory tiers, links, power and overheads."""

from __future__ import annotations

from typing import Literal

import attrs

from .common import check_key, check_symbol, provenance_problems, symbol_from
from .fields import fraction, quantity

Category = Literal["cloud", "workstation", "mobile", "edge", "tiny"]
CATEGORIES = ("cloud", "workstation", "mobile", "edge", "tiny")
SLOTS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")


@attrs.frozen
class Memory:
    """The primary memory tier (HBM, GDDR, LPDDR, or SRAM on a microcontroller)."""

    capacity: float = quantity("bytes")
    bandwidth: float = quantity("bandwidth")
    kind: str = attrs.field(default="", kw_only=True)
    usable_fraction: float = fraction(default=1.0)
    usable_reason: str = attrs.field(default="", kw_only=True)


@attrs.frozen
class Tier:
    """A secondary memory tier: on-chip SRAM or flash. Bandwidth may be unpublished."""

    capacity: float = quantity("bytes")
    bandwidth: float | None = quantity("bandwidth", default=None)


@attrs.frozen
class HostLink:
    """The link to host memory, used when weights are offloaded."""

    bandwidth: float = quantity("bandwidth")
    name: str = attrs.field(default="", kw_only=True)


@attrs.frozen
class Interconnect:
    """Device-to-device link: bandwidth per direction per device, latency per message."""

    bandwidth: float = quantity("bandwidth")
    name: str = attrs.field(default="", kw_only=True)
    latency: float | None = quantity("time", default=None)
    max_devices: int = attrs.field(default=1, kw_only=True)


@attrs.frozen
class Power:
    tdp: float | None = quantity("power", default=None)


@attrs.frozen
class Overheads:
    """Fixed time terms: per-step dispatch, per-layer tax, per-kernel launch."""

    dispatch: float = quantity("time", nonnegative=True)
    layer: float = quantity("time", nonnegative=True)
    launch: float = quantity("time", nonnegative=True, default=0.0)


@attrs.frozen
class Device:
    """A device spec. Dense peaks live in ``compute``; sparse figures in ``compute_sparse``
    and are never used as a dense peak."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    category: Category
    compute: dict[str, float] = attrs.field(metadata={"roofkit": {"dimension": "throughput",
                                                                   "mapping": True}})
    memory: Memory
    overheads: Overheads
    sources: dict[str, str]
    provenance: dict[str, str]
    default_slot: str
    vendor: str = ""
    aliases: tuple[str, ...] = ()
    symbol: str | None = attrs.field(default=None, validator=check_symbol)
    year: int | None = None
    compute_sparse: dict[str, float] = attrs.field(
        factory=dict, metadata={"roofkit": {"dimension": "throughput", "mapping": True}})
    sram: Tier | None = None
    flash: Tier | None = None
    host_link: HostLink | None = None
    interconnect: Interconnect | None = None
    power: Power = Power()
    notes: str = ""

    @property
    def attr_name(self) -> str:
        return self.symbol or symbol_from(self.name)

    @property
    def default_peak(self) -> float:
        return self.compute[self.default_slot]

    @property
    def tdp(self) -> float | None:
        return self.power.tdp

    def numeric_paths(self) -> list[str]:
        """Key paths of every number this spec sets (each needs a provenance entry)."""
        out = [f"compute.{k}" for k in self.compute]
        out += [f"compute_sparse.{k}" for k in self.compute_sparse]
        for table in ("memory", "sram", "flash", "host_link", "interconnect", "power", "overheads"):
            obj = getattr(self, table)
            if obj is None:
                continue
            for f in attrs.fields(type(obj)):
                v = getattr(obj, f.name)
                if isinstance(v, int | float) and not isinstance(v, bool) and v is not None:
                    if table == "memory" and f.name == "usable_fraction" and v == 1.0:
                        continue
                    if table == "interconnect" and f.name == "max_devices":
                        continue
                    out.append(f"{table}.{f.name}")
        return out

    def problems(self) -> list[tuple[str, str]]:
        """Cross-field checks: (key path, message) pairs; empty when the spec is sound."""
        out = []
        for table in ("compute", "compute_sparse"):
            for slot in getattr(self, table):
                if slot not in SLOTS:
                    from ..errors import closest

                    near = closest(slot, SLOTS)
                    hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
                    out.append((f"{table}.{slot}",
                                f"unknown compute slot {slot!r}{hint}; slots: {', '.join(SLOTS)}"))
        if self.default_slot not in self.compute:
            out.append(("default_slot", f"default_slot {self.default_slot!r} has no peak in "
                        f"[compute] ({', '.join(self.compute) or 'empty'})"))
        for slot, sparse in self.compute_sparse.items():
            dense = self.compute.get(slot)
            if dense is not None and sparse < dense:
                out.append((f"compute_sparse.{slot}",
                            "a sparse figure below the dense one; check which is which"))
        if self.memory.usable_fraction < 1.0 and not self.memory.usable_reason:
            out.append(("memory.usable_reason", "a usable_fraction below 1 needs its reason"))
        out += provenance_problems(self, self.numeric_paths())
        return out
