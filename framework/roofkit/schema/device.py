"""Device specs: compute peaks per slot, memory tiers, links, power and overheads."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from .. import units
from ..errors import SpecError, closest
from .common import (
    check_key,
    check_symbol,
    identity_problems,
    is_number,
    provenance_problems,
    sourced_paths,
    symbol_from,
    table,
)
from .fields import count, fraction, quantities, quantity

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
    latency: float | None = quantity("time", default=None, high=1.0)
    #: 100,000: ~10x the largest single-interconnect domain published (TPU v5p pod, 8,960)
    max_devices: int = count(default=1, maximum=100_000)


@attrs.frozen
class Power:
    tdp: float | None = quantity("power", default=None)


@attrs.frozen
class Overheads:
    """Fixed time terms: per-step dispatch, per-layer tax, per-kernel launch."""

    dispatch: float = quantity("time", nonnegative=True, high=1.0)
    layer: float = quantity("time", nonnegative=True, high=1.0)
    launch: float = quantity("time", nonnegative=True, default=0.0, high=1.0)


@attrs.frozen
class Device:
    """A device spec. Dense peaks live in ``compute``; sparse figures in ``compute_sparse``
    and are never used as a dense peak."""

    name: str = attrs.field(validator=check_key)
    display_name: str
    category: Category
    compute: dict[str, float] = quantities("throughput", required=True)
    memory: Memory
    overheads: Overheads
    sources: dict[str, str]
    provenance: dict[str, str]
    default_slot: str
    vendor: str = ""
    aliases: tuple[str, ...] = ()
    symbol: str | None = attrs.field(default=None, validator=check_symbol)
    year: int | None = count(default=None, minimum=1940, maximum=2100)
    compute_sparse: dict[str, float] = quantities("throughput")
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

    #: the tables whose numbers each need a source in [provenance]
    SOURCED = ("compute", "compute_sparse", "memory", "sram", "flash", "host_link",
               "interconnect", "power", "overheads")

    @classmethod
    def sourced_paths(cls, data: Mapping) -> list[str]:
        """Key paths of every number the raw spec sets (each needs a provenance entry)."""
        return sourced_paths(data, cls, cls.SOURCED)

    @classmethod
    def raw_problems(cls, data: Mapping) -> list[tuple[str, str]]:
        """Checks on the raw TOML table, run whether or not it structured: key formats,
        compute slots, the default slot, sparse against dense, the usable-memory reason and
        provenance. (key path, message) pairs; empty when the spec is sound."""
        out = identity_problems(data)
        compute, sparse = table(data, "compute"), table(data, "compute_sparse")
        for name, slots in (("compute", compute), ("compute_sparse", sparse)):
            for slot in slots:
                if slot not in SLOTS:
                    near = closest(slot, SLOTS)
                    hint = f" (did you mean {', '.join(map(repr, near))}?)" if near else ""
                    out.append((f"{name}.{slot}",
                                f"unknown compute slot {slot!r}{hint}; slots: {', '.join(SLOTS)}"))
        default = data.get("default_slot")
        if isinstance(default, str) and isinstance(data.get("compute"), Mapping) \
                and default not in compute:
            out.append(("default_slot", f"default_slot {default!r} has no peak in "
                        f"[compute] ({', '.join(compute) or 'empty'})"))
        for slot, text in sparse.items():
            if slot not in compute:
                continue
            try:  # compared only where both parse; the converter reports the rest
                low = units.parse(text, "throughput") < units.parse(compute[slot], "throughput")
            except SpecError:
                continue
            if low:
                out.append((f"compute_sparse.{slot}",
                            "a sparse figure below the dense one; check which is which"))
        memory = table(data, "memory")
        fraction, reason = memory.get("usable_fraction"), memory.get("usable_reason")
        if is_number(fraction) and fraction < 1.0 and not (isinstance(reason, str)
                                                             and reason.strip()):
            out.append(("memory.usable_reason", "a usable_fraction below 1 needs its reason"))
        out += provenance_problems(data, cls.sourced_paths(data))
        return out
