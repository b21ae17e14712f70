"""PerformanceProfile: the result of ``Engine.solve``.

Floats inside (SI: s, B, J, 1/s); the public attributes are pint Quantities built on first
access, so ``profile.latency.to("ms")`` works and a sweep that never looks at units never
pays for pint. ``to_dict()`` gives plain floats under unit-suffixed keys.
"""

from __future__ import annotations

from .. import units
from ..results import Headline, Result
from . import calibration as cal

_TIER_NAMES = {
    "memory": "primary memory",
    "sram": "on-chip SRAM (weights resident)",
    "flash": "flash",
    "offload": "host offload",
    "none": "no path",
}


class PerformanceProfile(Result):
    """Latency, throughput, energy, footprint, utilization and bound of one configuration.

    ``latency = max(latency_compute, latency_memory) + latency_overhead``;
    ``throughput = batch / latency`` in samples per second, where :attr:`sample` says what a
    sample is (a token of each sequence, a training sequence, an image…).
    """

    __slots__ = (
        "_bw",
        "_df",
        "_energy",
        "_fell_back",
        "_footprint",
        "_inputs",
        "_ops_hw",
        "_ops_model",
        "_parts",
        "_peak",
        "_plugins",
        "_prec",
        "_q",
        "_route",
        "_slot",
        "_t",
        "_tc",
        "_thr",
        "_tier",
        "_tm",
        "_to",
        "_traffic",
        "_weights",
        "_wf",
        "bottleneck",
        "feasible",
        "hfu",
        "mfu",
        "overhead_dominated",
    )

    HEADLINE = (
        Headline("latency", "ms", lambda p: p._t * 1e3),
        Headline("latency_compute", "ms", lambda p: p._tc * 1e3),
        Headline("latency_memory", "ms", lambda p: p._tm * 1e3),
        Headline("latency_overhead", "ms", lambda p: p._to * 1e3),
        Headline("throughput", "1/s", lambda p: p._thr),
        Headline("energy", "J", lambda p: p._energy),
        Headline("memory_footprint", "B", lambda p: p._footprint),
        Headline("mfu", "", lambda p: p.mfu),
        Headline("hfu", "", lambda p: p.hfu),
    )
    KIND = "Engine profile"
    PLOT = "roofline"

    def title(self) -> str:
        return (f"{self._wf.name} on {self._df.name}: batch {self._inputs[0]}, "
                f"{self._inputs[1]}, {self.bottleneck}-bound, "
                f"{'fits' if self.feasible else 'does not fit'}")

    def identity(self) -> dict:
        return {"workload": self._wf.name, "device": self._df.name,
                "batch": self._inputs[0], "precision": self._inputs[1],
                "is_training": self._inputs[3], "bottleneck": self.bottleneck,
                "feasible": self.feasible}

    def __init__(self, t, tc, tm, to, thr, energy, footprint, mfu, hfu, bottleneck, feasible,
                 overhead_dominated, bw, tier, peak, slot, fell_back, ops_model, ops_hw,
                 traffic, weights, wf, df, prec, inputs, parts, route=None, plugins=()):
        self._plugins = plugins
        self._t = t
        self._tc = tc
        self._tm = tm
        self._to = to
        self._thr = thr
        self._energy = energy
        self._footprint = footprint
        self.mfu = mfu
        self.hfu = hfu
        self.bottleneck = bottleneck
        self.feasible = feasible
        self.overhead_dominated = overhead_dominated
        self._bw = bw
        self._tier = tier
        self._peak = peak
        self._slot = slot
        self._fell_back = fell_back
        self._ops_model = ops_model
        self._ops_hw = ops_hw
        self._traffic = traffic
        self._weights = weights
        self._wf = wf
        self._df = df
        self._prec = prec
        self._inputs = inputs
        self._parts = parts
        self._route = route  # (trace, basis, sample) of a cost-model route, else None
        self._q = None

    # -- quantities (lazy) -----------------------------------------------------------------
    def _quantity(self, key: str, value: float, unit: str):
        q = self._q
        if q is None:
            q = self._q = {}
        hit = q.get(key)
        if hit is None:
            hit = q[key] = units.Q(value, unit)
        return hit

    @property
    def latency(self):
        """Modeled batch latency: max(compute, memory) + overhead."""
        return self._quantity("latency", self._t * 1e3, "ms")

    @property
    def latency_compute(self):
        """F_batch / (efficiency * F_peak)."""
        return self._quantity("latency_compute", self._tc * 1e3, "ms")

    @property
    def latency_memory(self):
        """W * (1 + 0.1 * B) / BW on the selected bandwidth path."""
        return self._quantity("latency_memory", self._tm * 1e3, "ms")

    @property
    def latency_overhead(self):
        """T_dispatch + L * T_layer * launch_multiplier."""
        return self._quantity("latency_overhead", self._to * 1e3, "ms")

    @property
    def throughput(self):
        """Samples per second (``sample`` says what one is)."""
        return self._quantity("throughput", self._thr, "1/s")

    @property
    def energy(self):
        """Energy of one batch: TDP * (idle + dynamic * HFU) * latency; 0 J without a TDP."""
        return self._quantity("energy", self._energy, "J")

    energy_per_inference = energy

    @property
    def memory_footprint(self):
        """Bytes the configuration needs on the device (weights; training state in training)."""
        return self._quantity("memory_footprint", self._footprint, "B")

    @property
    def peak_flops_actual(self):
        """The derated compute ceiling: efficiency * F_peak."""
        return self._quantity("peak_flops_actual", self._peak * self._inputs[2], "FLOP/s")

    @property
    def peak_bw_actual(self):
        """The bandwidth of the selected path."""
        return self._quantity("peak_bw_actual", self._bw, "B/s")

    @property
    def arithmetic_intensity(self):
        """Batch FLOPs over batch traffic."""
        return self._quantity("arithmetic_intensity", self._ops_hw / self._traffic, "FLOP/B")

    @property
    def offload_spill(self):
        """Bytes beyond the device's capacity that must be offloaded to the host (0 B when it
        fits, or when the weights are read in place from flash)."""
        spill = 0.0 if self.feasible or self._tier == "flash" else \
            max(self._footprint - self._df.capacity, 0.0)
        return self._quantity("offload_spill", spill, "B")

    @property
    def flash_resident(self) -> bool:
        """Whether the weights live in the device's flash and are read in place (the
        bandwidth path is flash). Flash residency is not capacity: a footprint beyond primary
        memory is ``feasible=False`` even when flash holds the weights, as the reference
        says; the latency is then the flash-limited estimate."""
        return self._tier == "flash"

    # -- plain values ------------------------------------------------------------------------
    @property
    def latency_s(self) -> float:
        return self._t

    @property
    def throughput_per_s(self) -> float:
        return self._thr

    @property
    def energy_j(self) -> float:
        return self._energy

    @property
    def memory_footprint_bytes(self) -> float:
        return self._footprint

    @property
    def utilization(self) -> dict[str, float]:
        """MFU (model FLOPs) and HFU (hardware FLOPs, recomputation included) over peak."""
        return {"mfu": self.mfu, "hfu": self.hfu}

    @property
    def bandwidth_path(self) -> str:
        """Which bandwidth bounded the memory term: memory, sram, flash, offload, or none
        (it does not fit and the device has no host link to offload to)."""
        return self._tier

    @property
    def compute_slot(self) -> str:
        """The compute slot whose peak was used (the device's default slot on a fallback)."""
        return self._slot

    @property
    def fell_back(self) -> bool:
        """Whether the device lacks the precision's slot, so its default peak was used."""
        return self._fell_back

    @property
    def sample(self) -> str:
        """What one sample of ``throughput`` is."""
        if self._route is not None:
            return self._route[2]
        wf = self._wf
        training, seq_len = self._inputs[3], self._inputs[4]
        if wf.per_token:
            if training:
                return f"sequence of {seq_len} tokens"
            return "token (one per sequence: a decode step over the batch)"
        return wf.sample

    @property
    def inputs(self) -> dict:
        """The arguments that produced this profile."""
        (batch, precision, eff, training, seq_len, zero, dp, lora, recompute,
         raise_errors) = self._inputs
        return {"model": self._wf.name, "hardware": self._df.name, "batch_size": batch,
                "precision": precision, "efficiency": eff, "raise_errors": raise_errors,
                "is_training": training, "seq_len": seq_len, "zero_stage": zero,
                "dp_size": dp, "is_lora": lora, "activation_recomputation": recompute}

    @property
    def memory_breakdown(self) -> dict[str, float]:
        """Footprint by component in bytes (weights; in training also gradients, optimizer
        state and activations when the transformer formula applies)."""
        if self._parts is not None:
            return dict(self._parts)
        return {"total": self._footprint}

    # -- explanation -----------------------------------------------------------------------
    @property
    def trace(self) -> list[str]:
        """One line per limit checked, with the numbers that decided it."""
        if self._route is not None:
            return list(self._route[0])
        wf, df, prec = self._wf, self._df, self._prec
        batch, _, eff, training, seq_len, zero, dp, lora, recompute, _ = self._inputs
        fmt = units.fmt
        lines = []
        if training:
            what = "training state"
        elif wf.per_token:
            what = "weights only; no KV cache"
        else:
            what = "weights"
        lines.append(self._capacity_text(what))
        if self._parts is not None:
            p = self._parts
            lines.append(
                f"training memory: weights {fmt(p['weights'], 'bytes')} + gradients "
                f"{fmt(p['gradients'], 'bytes')} + optimizer {fmt(p['optimizer'], 'bytes')} + "
                f"activations {fmt(p['activations'], 'bytes')} (ZeRO stage {zero} over "
                f"dp_size {dp}{', LoRA' if lora else ''}"
                f"{', full recomputation' if recompute else ''})")
        elif training:
            note = "" if zero == 0 else "; ZeRO sharding applies to the transformer formula only"
            w = fmt(self._weights, "bytes")
            if lora:
                lines.append(f"training memory: {cal.GENERIC_LORA_WEIGHT_MULTIPLE:g} x weights "
                             f"{w} (no transformer dims, LoRA){note}")
            else:
                lines.append(
                    f"training memory: weights {w} + gradients {w} + Adam state "
                    f"{cal.ADAM_STATE_BYTES_PER_PARAM:g} B x {wf.params:.4g} parameters "
                    f"{fmt(cal.ADAM_STATE_BYTES_PER_PARAM * wf.params, 'bytes')} = "
                    f"{fmt(self._footprint, 'bytes')} (no transformer dims){note}")
        peak_line = (f"compute ceiling: {fmt(self._peak, 'throughput')} ({self._slot}) x "
                     f"efficiency {eff:g} = {fmt(self._peak * eff, 'throughput')}")
        if self._fell_back:
            peak_line += (f"; {df.name} lists no {prec.slot} peak, so the device's default "
                          f"peak ({df.default_slot}) is used")
        lines.append(peak_line)
        lines.append(f"bandwidth path: {self._bandwidth_text()}")
        unit = "token" if wf.per_token else "sample"
        work = f"{fmt(wf.flops, 'compute')}/{unit} x batch {batch}"
        if training:
            fe = (cal.RECOMPUTE_FORWARD_EQUIVALENTS if recompute
                  else cal.TRAINING_FORWARD_EQUIVALENTS)
            per = f" x seq_len {seq_len}" if wf.per_token else ""
            work = (f"{fe} forward-equivalents x {fmt(wf.flops, 'compute')}/{unit}{per} x "
                    f"batch {batch}")
        lines.append(f"compute term: {work} = {fmt(self._ops_hw, 'compute')} / "
                     f"{fmt(self._peak * eff, 'throughput')} = {fmt(self._tc, 'time')}")
        lines.append(f"memory term: W {fmt(self._weights, 'bytes')} x (1 + "
                     f"{cal.ACTIVATION_TRAFFIC_PER_SAMPLE:g} x {batch}) = "
                     f"{fmt(self._traffic, 'bytes')} / {fmt(self._bw, 'bandwidth')} = "
                     f"{fmt(self._tm, 'time')}")
        launch = cal.TRAINING_LAUNCH_MULTIPLIER if training else cal.INFERENCE_LAUNCH_MULTIPLIER
        lines.append(f"overhead: dispatch {fmt(df.dispatch, 'time')} + {wf.layers} layers x "
                     f"{fmt(df.layer, 'time')} x launch multiplier {launch} = "
                     f"{fmt(self._to, 'time')}")
        bound = ("memory term > compute term" if self.bottleneck == "Memory"
                 else "compute term >= memory term")
        od = (f"; overhead {fmt(self._to, 'time')} exceeds both terms (overhead dominated)"
              if self.overhead_dominated else "")
        lines.append(f"bound: {self.bottleneck} ({bound}){od}; latency {fmt(self._t, 'time')}, "
                     f"throughput {self._thr:.6g} {self._sample_plural()}/s")
        lines.append(f"utilization: MFU {self.mfu:.4f}, HFU {self.hfu:.4f} of the "
                     f"{self._slot} peak")
        if df.tdp > 0:
            lines.append(f"energy: TDP {fmt(df.tdp, 'power')} x ({cal.ENERGY_IDLE_FRACTION:g} + "
                         f"{cal.ENERGY_DYNAMIC_FRACTION:g} x HFU {self.hfu:.4f}) x "
                         f"{fmt(self._t, 'time')} = {fmt(self._energy, 'energy')}")
        else:
            lines.append(f"energy: {df.name} declares no TDP, so energy is 0 J")
        return lines

    def _sample_plural(self) -> str:
        sample = self.sample
        if sample.startswith("token"):
            return "tokens"
        if sample.startswith("sequence"):
            return "sequences"
        return "samples"

    def _capacity_text(self, what: str) -> str:
        df, prec, fmt = self._df, self._prec, units.fmt
        training = self._inputs[3]
        need = (f"capacity: needs {fmt(self._footprint, 'bytes')} ({what}, {prec.name} at "
                f"{prec.bytes_per_element:g} B/element)")
        mem = f"{fmt(df.capacity, 'bytes')} on {df.name}"
        if self._footprint <= df.capacity:
            return f"{need} <= {mem}: fits"
        flash = df.flash_capacity
        if self._tier == "flash":  # inference whose weights fit the flash
            return (f"{need} > {mem} (primary memory): DOES NOT FIT (the reference's capacity "
                    f"check); its {fmt(flash, 'bytes')} flash holds the weights, so the "
                    "latency is the flash-limited estimate, reading them in place")
        if flash is None:
            return f"{need} > {mem}: DOES NOT FIT"
        if training:
            return (f"{need} > {mem} (primary memory; its {fmt(flash, 'bytes')} flash is "
                    "read-only at run time, so training state cannot live there): DOES NOT FIT")
        return (f"{need} > {mem} (primary memory) and > its {fmt(flash, 'bytes')} flash: "
                "DOES NOT FIT")

    def _bandwidth_text(self) -> str:
        df, fmt = self._df, units.fmt
        tier = self._tier
        if tier == "offload":
            return (f"{_TIER_NAMES[tier]}: footprint exceeds capacity, all traffic charged at "
                    f"the limiting link min(memory {fmt(df.bandwidth, 'bandwidth')}, host link "
                    f"{fmt(df.host_bandwidth, 'bandwidth')}) = {fmt(self._bw, 'bandwidth')}")
        if tier == "none":
            where = "memory and flash" if df.flash_capacity is not None and not \
                self._inputs[3] else "memory"
            return (f"{_TIER_NAMES[tier]}: the footprint exceeds {df.name}'s {where} and its "
                    "spec declares no [host_link], so nothing can be offloaded: the "
                    "configuration cannot run (bandwidth 0, latency infinite)")
        if tier == "sram":
            return (f"{_TIER_NAMES[tier]}: weights {fmt(self._weights, 'bytes')} <= SRAM "
                    f"{fmt(df.sram_capacity, 'bytes')}, {fmt(self._bw, 'bandwidth')}")
        if tier == "flash":
            sram = ("" if df.sram_capacity is None
                    else f" > SRAM {fmt(df.sram_capacity, 'bytes')},")
            return (f"{_TIER_NAMES[tier]}: weights {fmt(self._weights, 'bytes')}{sram} <= "
                    f"flash {fmt(df.flash_capacity, 'bytes')}: they stream from flash at "
                    f"{fmt(self._bw, 'bandwidth')}")
        return f"{_TIER_NAMES[tier]}: {fmt(self._bw, 'bandwidth')}"

    @property
    def basis(self) -> str:
        """Where the device numbers come from: the spec fields used and their provenance."""
        if self._route is not None:
            return self._route[1]
        df, prec = self._df, self._prec
        spec = df.spec
        prov = spec.provenance

        def src(path: str) -> str:
            entry = prov.get(path) or prov.get(path.split(".")[0]) or "no provenance"
            return f"{path} ({entry})"

        parts = [f"device {df.name}: datasheet ceilings from {df.origin or 'its spec'}"]
        peak = src(f"compute.{self._slot}")
        if self._fell_back:
            peak += (f" as the default peak: {df.name} lists no {prec.slot} peak for "
                     f"{prec.name}")
        parts.append(f"peak {peak}")
        tier = self._tier
        if tier == "offload":
            parts.append(src("memory.bandwidth"))
            parts.append(src("host_link.bandwidth"))
        elif tier == "none":
            parts.append("no [host_link] in the spec: no offload path")
        elif tier == "sram":
            parts.append(src("sram.bandwidth"))
        elif tier == "flash":
            parts.append(src("flash.bandwidth"))
            parts.append(src("flash.capacity"))
        else:
            parts.append(src("memory.bandwidth"))
        parts.append(src("memory.capacity"))
        parts.append(f"{src('overheads.dispatch')}, {src('overheads.layer')}")
        parts.append(src("power.tdp") if df.tdp > 0 else "no TDP")
        parts.append(f"efficiency {self._inputs[2]:g} declared, not measured")
        parts.append(f"workload {self._wf.name}: {self._wf.source}")
        return "; ".join(parts)

    # -- output ----------------------------------------------------------------------------
    @property
    def plugins(self) -> tuple[str, ...]:
        """The plugin set of the registry that produced this profile."""
        return tuple(self._plugins)

    def to_dict(self) -> dict:
        """Plain floats with unit-suffixed keys (JSON-ready)."""
        return {
            "latency_ms": self._t * 1e3,
            "latency_compute_ms": self._tc * 1e3,
            "latency_memory_ms": self._tm * 1e3,
            "latency_overhead_ms": self._to * 1e3,
            "throughput_per_s": self._thr,
            "sample": self.sample,
            "energy_j": self._energy,
            "memory_footprint_bytes": self._footprint,
            "bottleneck": self.bottleneck,
            "feasible": self.feasible,
            "overhead_dominated": self.overhead_dominated,
            "mfu": self.mfu,
            "hfu": self.hfu,
            "bandwidth_path": self._tier,
            "flash_resident": self._tier == "flash",
            "peak_flops_per_s": self._peak,
            "compute_slot": self._slot,
            "fell_back": self._fell_back,
            "bandwidth_bytes_per_s": self._bw,
            "inputs": self.inputs,
            "trace": self.trace,
            "basis": self.basis,
            "plugins": list(self._plugins),
        }

    def summary(self) -> str:
        fmt = units.fmt
        return "\n".join([
            f"{self._wf.name} on {self._df.name}: {self.bottleneck}-bound"
            f"{' (overhead dominated)' if self.overhead_dominated else ''}, "
            f"{'fits' if self.feasible else 'does not fit'}"
            f"{' (no offload path: it cannot run)' if self._tier == 'none' else ''}",
            f"latency    {fmt(self._t, 'time')}  (compute {fmt(self._tc, 'time')}, memory "
            f"{fmt(self._tm, 'time')}, overhead {fmt(self._to, 'time')})",
            f"throughput {self._thr:.6g} {self._sample_plural()}/s  [sample: {self.sample}]",
            f"energy     {fmt(self._energy, 'energy')}   footprint "
            f"{fmt(self._footprint, 'bytes')}   MFU {self.mfu:.3f}  HFU {self.hfu:.3f}",
        ])
