"""``roofkit.train``: the step time, throughput, utilisation and memory of one training layout
on a cluster (equations in :mod:`roofkit.fleet.step`).

MFU convention: model FLOPs per token ``6 N + 3 A`` over the datasheet dense bf16 peak of
every device, with ``N`` the active matmul parameters (the embedding lookup excluded, the LM
head included) and ``A`` the causal attention-core forward FLOPs (``2 (s / 2) a (d_qk + d_v)``
per layer); a frozen LoRA base counts ``4 N`` plus ``6`` per adapter parameter. HFU counts
what the hardware runs: recomputation and FlashAttention's recomputed scores included.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..errors import SpecError
from ..registry import resolve as resolve_registry
from ..results import Headline, Result
from .cluster import training_cluster, with_devices
from .collectives import topology
from .layout import Layout, check_layout, describe_placement
from .model import arch_of
from .step import RECOMPUTE, Costing, training_step

BREAKDOWN = ("compute", "tp", "cp", "ep", "pp", "dp", "bubble", "optimizer")
MEMORY_PARTS = ("weights", "gradients", "optimizer_state", "activations", "reserve")
#: the allocator reserve: a declared share of device memory training never gets (CUDA
#: context, NCCL buffers, caching-allocator fragmentation); an assumption, override it
DEFAULT_RESERVE = 0.10


def costing(cluster, basis: str, registry, algorithm=None) -> tuple[Costing, str]:
    from ..circuit.roofline import device_roofline

    device = registry.device(cluster.device)
    roof = device_roofline(device, basis, registry)
    topo = topology(cluster, basis, registry)
    c = Costing(peaks=dict(roof.peaks), curves=dict(roof.curves), bandwidth=roof.bandwidth,
                attention_rate=roof.attention_peak, capacity=device.memory.capacity,
                topology=topo, registry=registry, domain=cluster.scale_up.size,
                algorithm=algorithm)
    return c, f"{roof.basis}; links: {topo.basis}"


@attrs.frozen
class TrainingEstimate(Result):
    """One training layout's step. Floats inside; Quantities on the public properties."""

    workload: str
    cluster: str
    device: str
    layout: Layout
    step_time_s: float
    tokens_per_step: float
    mfu: float
    hfu: float
    memory_parts: dict
    capacity: float
    breakdown: dict
    placement: dict
    basis: str
    plugin_set: tuple = ()
    energy_per_step_j: float | None = None
    cost_per_step_usd: float | None = None
    # the per-op energy model (:func:`step_energy`): all devices and the nodes' other power
    energy_per_op_step_j: float | None = None
    device_class: str = ""  # vendor and category, the stratum of its intervals

    HEADLINE = (
        Headline("step_time", "s", "step_time_s"),
        Headline("tokens_per_s", "token/s", "tokens_per_s"),
        Headline("mfu", "", "mfu"),
        Headline("hfu", "", "hfu"),
        Headline("memory_per_device", "B", "memory_per_device_bytes"),
        Headline("energy_per_step", "J", "energy_per_step_j"),
    )
    KIND = "training estimate"

    @property
    def plugins(self) -> tuple[str, ...]:
        return tuple(self.plugin_set)

    def title(self) -> str:
        lo = self.layout
        return (f"{self.workload} on {lo.devices} x {self.device}: tp{lo.tp} pp{lo.pp} "
                f"dp{lo.dp} cp{lo.cp} ep{lo.ep}, {'fits' if self.fits else 'does not fit'}")

    @property
    def memory_per_device_bytes(self) -> float:
        return sum(self.memory_parts.values())

    @property
    def fits(self) -> bool:
        return self.memory_per_device_bytes <= self.capacity

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.step_time_s

    @property
    def step_time(self):
        from ..units import Q

        return Q(self.step_time_s, "s")

    @property
    def memory_per_device(self):
        from ..units import Q

        return Q(self.memory_per_device_bytes, "byte")

    def intervals(self, level: float = 0.8) -> dict:
        """The prediction intervals of the step time and the tokens/s at ``level``, from the
        training cases' out-of-sample step-time residuals (:mod:`roofkit.intervals`); the
        tokens/s interval is the tokens per step over the step time's."""
        from ..intervals import TRAIN_METRIC, Interval, interval, table

        iv = interval(self.step_time_s, table(), metric=TRAIN_METRIC,
                      device_class=self.device_class,
                      inside=self.basis.startswith("measured"), level=level)
        if iv is None:
            return {}
        tps = Interval(self.tokens_per_s, self.tokens_per_step / iv.hi,
                       self.tokens_per_step / iv.lo, iv.level, iv.stratum, iv.n)
        return {"step_time_s": iv, "tokens_per_s": tps}

    def to_dict(self, level: float = 0.8) -> dict:
        out = {
            "intervals": {k: v.to_dict() for k, v in self.intervals(level).items()},
            "workload": self.workload, "cluster": self.cluster, "device": self.device,
            "devices": self.layout.devices, "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s, "mfu": self.mfu, "hfu": self.hfu,
            "mfu_convention": "6 N + 3 A model FLOPs per token over the datasheet dense bf16 "
                              "peak (N active matmul params incl. LM head, A causal attention)",
            "memory_per_device_bytes": self.memory_per_device_bytes,
            "memory_bytes": dict(self.memory_parts), "capacity_bytes": self.capacity,
            "fits": self.fits, "headroom_bytes": self.capacity - self.memory_per_device_bytes,
            "breakdown_s": dict(self.breakdown),
            "layout": {**self.layout.to_dict(), "micro_batches": self.layout.micro_batches,
                       "placement": self.placement},
            "basis": self.basis, "plugins": list(self.plugin_set),
        }
        if self.energy_per_step_j is not None:
            out["energy_per_step_j"] = self.energy_per_step_j
            out["energy_per_million_tokens_j"] = self.energy_per_step_j / self.tokens_per_step \
                * 1e6
        if self.energy_per_op_step_j is not None:
            out["energy_per_step_measured_model_j"] = self.energy_per_op_step_j
            out["energy_per_million_tokens_measured_model_j"] = \
                self.energy_per_op_step_j / self.tokens_per_step * 1e6
        if self.cost_per_step_usd is not None:
            out["cost_per_step_usd"] = self.cost_per_step_usd
            out["cost_per_million_tokens_usd"] = self.cost_per_step_usd \
                / self.tokens_per_step * 1e6
        return out

    def to_pandas(self):
        """One row: every figure of :meth:`to_dict`, nested keys flattened (``breakdown_s.tp``)."""
        from .report import flat, frame

        return frame([flat(self.to_dict())])

    def __repr__(self) -> str:
        lo = self.layout
        return (f"TrainingEstimate({self.workload} on {self.layout.devices} x {self.device}, "
                f"tp{lo.tp} pp{lo.pp} dp{lo.dp} cp{lo.cp} ep{lo.ep}: step "
                f"{self.step_time_s:.3g} s, MFU {self.mfu:.1%}, "
                f"{self.memory_per_device_bytes / 2**30:.1f} GiB/device, "
                f"{'fits' if self.fits else 'does not fit'})")


def train(workload, cluster, *, devices: int | None = None, tp: int = 1, pp: int = 1,
          vpp: int = 1, dp: int | None = None, cp: int = 1, ep: int = 1,
          micro_batch: int = 1, global_batch: int | None = None, seq_len: int = 2048,
          precision: str = "bf16", recompute: str = "none", zero: int = 0,
          lora: int | None = None, qlora: int | None = None, basis: str = "auto",
          capacity_factor: float = 1.0, reserve: float = DEFAULT_RESERVE,
          collective_algorithm: str | None = None, price_per_device_hour: float | None = None,
          attention: str = "flash", dropout: bool = False, sequence_parallel: bool = True,
          dp_overlap: bool = True, kernels: str = "fused", lora_targets: str = "attention",
          lora_dropout: bool = False, uneven_stages: bool = False, pp_scatter: bool = True,
          fp32_accumulation: bool = False,
          registry=None) -> TrainingEstimate:
    """Estimate one training step of ``workload`` on ``cluster`` (a name, ``NxDEVICE``, a
    TOML path or a spec) under the given layout. ``dp`` defaults to what the devices leave
    (``devices / (tp pp cp)``); ``global_batch`` to one micro-batch per data-parallel rank.
    ``basis="auto"`` (the default): calibrated where the cluster's device has a calibration,
    else datasheet."""
    from ..circuit.roofline import resolve_basis

    registry = resolve_registry(registry)
    n_given = devices if devices is not None else (tp * pp * cp * dp if dp is not None
                                                   else None)
    cl = training_cluster(cluster, registry, n_given)
    basis = resolve_basis(basis, cl.device, registry)
    arch = arch_of(workload, registry)
    if lora and qlora:
        raise SpecError("give --lora RANK or --qlora RANK, not both")
    n = devices if devices is not None else (
        tp * pp * cp * dp if dp is not None else cl.devices)
    if dp is None:  # what the devices leave; a remainder is reported with the layout
        dp = max(1, n // max(1, tp * pp * cp))
    if global_batch is None:
        global_batch = micro_batch * dp
    rank = int(lora or qlora or 0)
    layout = check_layout(Layout(tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, ep=ep,
                                 micro_batch=micro_batch, global_batch=global_batch,
                                 seq_len=seq_len, recompute=recompute, zero=zero, lora=rank,
                                 qlora=bool(qlora), precision=precision,
                                 capacity_factor=capacity_factor,
                                 sequence_parallel=sequence_parallel, attention=attention,
                                 dropout=bool(dropout), dp_overlap=bool(dp_overlap),
                                 collective_algorithm=collective_algorithm, kernels=kernels,
                                 lora_targets=lora_targets,
                                 lora_dropout=bool(lora_dropout),
                                 uneven_stages=bool(uneven_stages),
                                 pp_scatter=bool(pp_scatter),
                                 fp32_accumulation=bool(fp32_accumulation)), arch, n)
    cl = with_devices(cl, n)
    if not 0.0 <= reserve < 1.0:
        raise SpecError(f"reserve must be a fraction of device memory in [0, 1), got {reserve}")
    if price_per_device_hour is not None and not 0.0 < price_per_device_hour < float("inf"):
        raise SpecError("price_per_device_hour must be a finite number of US dollars > 0, got "
                        f"{price_per_device_hour}")
    c, basis_text = costing(cl, basis, registry, collective_algorithm)
    r = training_step(arch, c, tp=tp, pp=pp, vpp=vpp, dp=dp, cp=cp, ep=ep, mb=micro_batch,
                      gb=global_batch, seq=seq_len, recompute=RECOMPUTE[recompute],
                      zero=zero, lora=rank, qlora=bool(qlora), fp8=precision == "fp8",
                      capacity_factor=capacity_factor, reserve=reserve,
                      half="fp16" if precision == "fp16" else "bf16",
                      flash=attention == "flash", dropout=bool(dropout), sp=sequence_parallel,
                      dp_overlap=bool(dp_overlap), kernels=kernels,
                      lora_targets=lora_targets, lora_dropout=bool(lora_dropout),
                      uneven=bool(uneven_stages), pp_scatter=bool(pp_scatter),
                      fp32_accumulation=bool(fp32_accumulation))
    return _estimate(arch, cl, layout, r, c, basis_text, registry, price_per_device_hour)


def _f(x) -> float:
    return float(np.asarray(x))


def step_traffic(r, layout) -> float:
    """DRAM bytes one device moves in a step, from its memory parts (an estimate, not a
    measured count): per micro-batch the forward reads the weights once and the backward
    twice (data and weight gradients), the gradients are accumulated (read and written) and
    one micro-batch's activations are written and read back; the optimizer step reads and
    writes the weights and the optimizer state and reads the gradients:

    ``B = m (3 W + 2 G + 2 A / k) + 2 W + G + 2 O``, ``k = min(m, pp)`` micro-batches in
    flight."""
    m = _f(r["micro_batches"])
    w, g, o, a = (_f(r[k]) for k in ("weights", "gradients", "optimizer_state", "activations"))
    k = max(1.0, min(m, float(layout.pp))) if layout.pp > 1 else 1.0
    return m * (3.0 * w + 2.0 * g + 2.0 * a / k) + 2.0 * w + g + 2.0 * o


def step_energy(device, cluster, layout, r, step: float, table=None) -> float | None:
    """J of a training step on the per-op model (:mod:`roofkit.energy`), or None where the
    device has no per-op constants or no TDP. Per device

    ``E_d = min(P_static t + e_flop[slot] F / n + e_byte B, TDP t)``

    (``F`` the step's hardware FLOPs over ``n`` devices, ``B`` :func:`step_traffic`; link
    bytes are not charged, the step model gives collective times, not bytes), plus each
    node's power beyond its devices, ``node_power - devices_per_node * TDP`` (the cluster's
    maximum system power: an upper bound), over the step: ``E = n E_d + nodes P_rest t``."""
    from .. import energy as _energy

    c = _energy.constants(device.name, table)
    tdp = float(device.power.tdp or 0.0)
    if c is None or tdp <= 0.0:
        return None
    slot = "fp8" if layout.precision == "fp8" else (
        "fp16" if layout.precision == "fp16" else "bf16")
    peak = float(device.compute.get(slot) or device.compute.get("bf16") or 0.0)
    n = layout.devices
    flops = _f(r["hardware_flops"]) / n
    per_device = min(c.p_busy * step + c.e_flop(tdp, peak, slot) * flops
                     + c.e_byte * step_traffic(r, layout), tdp * step)
    rest = 0.0
    if cluster.node_power:
        nodes = max(1, n // cluster.devices_per_node)
        rest = nodes * max(cluster.node_power - cluster.devices_per_node * tdp, 0.0) * step
    return n * per_device + rest


def _estimate(arch, cl, layout, r, c, basis_text, registry, price) -> TrainingEstimate:
    device = registry.device(cl.device)
    step = _f(r["step"])
    peak = device.compute.get("bf16") or device.compute.get("fp16") or device.default_peak
    devices = layout.devices
    mfu = _f(r["model_flops"]) / (step * devices * peak)
    hfu = _f(r["hardware_flops"]) / (step * devices * peak)
    sizes = {"tp": layout.tp, "cp": layout.cp, "ep": layout.ep, "dp": layout.dp,
             "pp": layout.pp}
    tiers = (cl.scale_up.name or "scale-up",
             cl.scale_out.name if cl.scale_out else "no scale-out network")
    place = describe_placement({k: _f(v) for k, v in r["inner"].items()},
                               {k: _f(v) for k, v in r["stride"].items()}, sizes,
                               cl.scale_up.size, tiers)
    energy = None
    if device.power.tdp:
        nodes = max(1, devices // cl.devices_per_node)
        power = cl.node_power * nodes if cl.node_power else device.power.tdp * devices
        energy = power * step
    price = price if price is not None else cl.price_per_device_hour
    cost = price * devices * step / 3600.0 if price else None
    return TrainingEstimate(
        workload=arch.name, cluster=cl.name, device=cl.device, layout=layout,
        step_time_s=step, tokens_per_step=_f(r["tokens"]), mfu=mfu, hfu=hfu,
        memory_parts={k: _f(r[k]) for k in MEMORY_PARTS}, capacity=c.capacity,
        breakdown={k: _f(r[k]) for k in BREAKDOWN}, placement=place,
        basis=basis_text + (" ; energy at node power (or device TDP) for the whole step"
                            if energy is not None else ""),
        plugin_set=registry.plugin_set, energy_per_step_j=energy, cost_per_step_usd=cost,
        energy_per_op_step_j=step_energy(device, cl, layout, r, step),
        device_class=f"{(device.vendor or 'other').lower()} {device.category}")
