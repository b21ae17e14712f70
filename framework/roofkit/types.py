"""The self-describing objects plugins register: precisions, op kinds, cost models,
scenario kinds. Each carries its ``name``; the registry keys them by it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


def _lower(name: str) -> str:
    return name.lower()


@attrs.frozen
class Precision:
    """A numeric format: element bits, optional block metadata, and where it computes.

    bits per element = bits + (scale_bits + zero_bits) / block_size + super_bits / super_block;
    NVFP4 (E2M1, E4M3 scale per 16) is 4 + 8/16 = 4.5; AWQ int4 with an fp16 scale and a
    4-bit zero point per 128 weights is 4 + (16 + 4)/128 = 4.156; GGUF q4_K (6-bit scale and
    min per 32, two fp16 super-scales per 256) is 4 + 12/32 + 32/256 = 4.5. ``slot`` is the
    device compute slot it runs on; ``fallback`` the slots tried in order on a device without
    it. ``activations`` names the format a weight-only format computes beside (AWQ: fp16;
    the weights are widened before the multiply); empty for a format that is both.
    """

    name: str = attrs.field(converter=_lower)
    bits: float
    slot: str
    fallback: tuple[str, ...] = ()
    aliases: tuple[str, ...] = attrs.field(
        default=(), converter=lambda a: tuple(x.lower() for x in a))
    scale_bits: int = 0
    block_size: int = 0
    kind: str = "float"  # float | int
    description: str = ""
    zero_bits: int = 0  # per block: a zero point or min beside the scale
    super_block: int = 0  # elements per super-block (GGUF k-quants: 256)
    super_bits: int = 0  # per super-block: the scales of the block scales
    activations: str = ""  # the activation format its GEMMs read (weight-only formats: 16-bit)
    source: str = ""  # where the layout is defined

    def __attrs_post_init__(self):
        if self.bits <= 0:
            raise ValueError(f"precision {self.name!r}: bits must be positive")
        if (self.scale_bits > 0 or self.zero_bits > 0) != (self.block_size > 0):
            raise ValueError(f"precision {self.name!r}: scale_bits or zero_bits and "
                             "block_size go together")
        if (self.super_bits > 0) != (self.super_block > 0):
            raise ValueError(f"precision {self.name!r}: super_bits and super_block go together")

    @property
    def bits_per_element(self) -> float:
        bits = float(self.bits)
        if self.block_size:
            bits += (self.scale_bits + self.zero_bits) / self.block_size
        if self.super_block:
            bits += self.super_bits / self.super_block
        return bits

    @property
    def bytes_per_element(self) -> float:
        return self.bits_per_element / 8.0

    def slots(self) -> tuple[str, ...]:
        """The compute slots to try, best first: its own, then the fallback chain."""
        return (self.slot, *self.fallback)


@attrs.frozen
class OpKind:
    """An operator kind a circuit node can have.

    ``params`` names the node dims a rule may read; ``role`` says what the op touches:
    weight, attention (KV), state (recurrent), communication, elementwise, routing.
    """

    name: str
    role: str
    params: tuple[str, ...] = ()
    description: str = ""
    weight_bearing: bool = False


@attrs.frozen
class CostModel:
    """How a node's work becomes time on a device.

    ``node_time(flops, bytes, peak, bandwidth, launch)`` returns seconds and works on floats
    and numpy arrays alike: ``roofline`` is max(bytes / bandwidth, flops / peak).

    A cost model that needs more than the slot's flat peak (GEMM-size efficiency, a partial
    overlap of compute and memory, a measured attention throughput) gives ``bind``: called
    once per node when a plan is compiled, with a :class:`roofkit.circuit.plan.NodeContext`
    (the node's op kind, role, compute kind, mode, slot, peak and the device roofline), it
    returns ``time(flops, bytes, gemms) -> (seconds, compute seconds)``, floats or arrays,
    where ``gemms`` is the number of independent GEMMs the node's FLOPs split into. The
    plan then calls that function, not ``node_time``.
    """

    name: str
    node_time: Callable[..., Any]
    description: str = ""
    bind: Callable[..., Any] | None = None


@attrs.frozen
class ScenarioKind:
    """A scenario kind: its tag in TOML (``kind = "host_dispatch"``) and its attrs class.

    ``cls`` is constructed with keyword inputs; ``derived`` names the attributes it computes.
    Input units come from the class's field metadata (``roofkit.schema.fields.quantity``).
    """

    name: str
    cls: type
    derived: tuple[str, ...] = ()
    description: str = ""


@attrs.frozen
class CollectiveAlgorithm:
    """A way to run collectives over a group placed on a cluster's links.

    ``collectives`` names what it implements (``all_reduce``, ``reduce_scatter``,
    ``all_gather``, ``all_to_all``, ``p2p``). ``time(collective, message, group, topology)``
    returns seconds for ``message`` bytes (for all-reduce the buffer each device holds; for
    reduce-scatter and all-gather the full, unsharded buffer; for all-to-all the bytes each
    device sends in all; for p2p the bytes sent) over ``group``
    (:class:`roofkit.fleet.collectives.Group`: its size, members per scale-up domain and
    domains spanned, numpy arrays allowed) on ``topology``
    (:class:`roofkit.fleet.collectives.Topology`: the tiers' alpha-beta terms and measured
    curves). It must work on floats and numpy arrays alike. Unless a layout names one, the
    fastest registered algorithm is taken for each collective.
    """

    name: str
    collectives: tuple[str, ...]
    time: Callable[..., Any]
    description: str = ""
