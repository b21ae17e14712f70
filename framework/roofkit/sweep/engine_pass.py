"""The ``Engine.solve`` equation over arrays: one numpy pass per (device, precision) group.

    T = max(F_batch / (eta * F_peak), W * (1 + 0.1 * B) / BW) + T_dispatch + L * T_layer * m

with the same inputs as the scalar path (the engine's per-registry
:class:`~roofkit.engine.facts.WorkloadFacts`, ``DeviceFacts`` and ``PrecisionFacts``) and the
same floating-point operations in the same order, so each row equals
``Engine.solve(workload, device, batch_size=b, precision=p, ...)`` bit for bit:

* peak: the precision's slot on the device, else the device's default peak (``compute_slot``,
  ``fell_back``; ``basis`` is ``datasheet``);
* W = params * bytes_per_element; F_batch = flops * B in inference; in training
  flops (* seq_len for token workloads) * 3 (4 with recomputation) * B, m = 3;
* footprint: W in inference; in training the transformer formula of
  :mod:`roofkit.engine.training_memory` (ZeRO, LoRA, recomputation) or 3 W (1.1 W LoRA);
* feasible: the footprint within primary memory, or in inference the weights within the
  device's flash (read in place; flash is read-only, so training checks memory only);
* BW (:class:`~roofkit.engine.facts.DeviceFacts`, shared with the scalar path): SRAM when W
  fits it, else flash when the device has one holding W (inference), else primary memory;
  host offload at min(memory, host link) when it does not fit, or no path (BW 0, infinite
  latency, ``bandwidth_path`` ``none``) when the device declares no ``[host_link]``;
* throughput B / T; MFU, HFU = F / T / F_peak capped at 1; energy TDP (0.3 + 0.7 HFU) T.
"""

from __future__ import annotations

import numpy as np

from .. import units
from ..engine import calibration as cal
from ..engine.facts import cache_for
from ..engine.training_memory import generic_training_memory, transformer_training_memory

_TRAFFIC = cal.ACTIVATION_TRAFFIC_PER_SAMPLE
_IDLE = cal.ENERGY_IDLE_FRACTION
_DYNAMIC = cal.ENERGY_DYNAMIC_FRACTION

INPUTS = ("workload", "device", "precision", "seq_len", "batch_size", "efficiency")
OUTPUTS = ("latency_ms", "latency_compute_ms", "latency_memory_ms", "latency_overhead_ms",
           "throughput_per_s", "energy_j", "memory_footprint_bytes", "capacity_bytes",
           "feasible", "reason", "bottleneck", "overhead_dominated", "mfu", "hfu",
           "bandwidth_path", "peak_flops_per_s", "bandwidth_bytes_per_s", "basis",
           "compute_slot", "fell_back")
#: what the Engine's device numbers rest on (``Engine.solve`` uses datasheet ceilings with a
#: declared efficiency; its ``basis`` property gives the spec fields and their sources)
BASIS = "datasheet"


class EnginePass:
    """Resolves the engine's facts once, then evaluates groups of rows as arrays."""

    mode = "engine"
    axis = "seq_len"  # the context axis of this mode (a column only in training)

    def __init__(self, grid, registry):
        cache = cache_for(registry)
        self.plugins = cache.plugins
        s = grid.settings
        self.training = s["training"]
        self.eff = s["efficiency"]
        self.zero, self.dp = s["zero_stage"], s["dp_size"]
        self.lora, self.recompute = s["lora"], s["recompute"]
        self.wf = cache.workload(grid.workload)
        self.devices = [cache.device(d) for d in grid.devices]
        self.precs = [cache.precision(p) for p in grid.precisions]
        self.inputs = tuple(c for c in INPUTS if c != "seq_len" or self.training)

    def output_kinds(self) -> dict[str, str]:
        text = ("reason", "bottleneck", "bandwidth_path", "basis", "compute_slot")
        flags = ("feasible", "overhead_dominated", "fell_back")
        return {c: "text" if c in text else "bool" if c in flags else "float" for c in OUTPUTS}

    def meta(self) -> dict:
        return {"mode": "engine", "workload": self.wf.name, "efficiency": self.eff,
                "training": self.training, "zero_stage": self.zero, "dp_size": self.dp,
                "lora": self.lora, "recompute": self.recompute,
                "sample": ("token" if self.wf.per_token and not self.training else
                           "sequence" if self.wf.per_token else self.wf.sample),
                "plugins": list(self.plugins)}

    def labels(self, d: int, p: int) -> dict:
        return {"workload": self.wf.name, "device": self.devices[d].name,
                "precision": self.precs[p].name}

    def run(self, d: int, p: int, tp: int, seq_len: np.ndarray, batch: np.ndarray) -> dict:
        wf, df, prec, eff = self.wf, self.devices[d], self.precs[p], self.eff
        peak, slot, fell_back = df.peak(prec)
        weights = wf.params * prec.bytes_per_element
        b = batch.astype(np.float64)
        if self.training:
            s = seq_len.astype(np.float64)
            per_sample = wf.flops * s if wf.per_token else wf.flops
            ops_model = per_sample * cal.TRAINING_FORWARD_EQUIVALENTS * b
            fe = (cal.RECOMPUTE_FORWARD_EQUIVALENTS if self.recompute
                  else cal.TRAINING_FORWARD_EQUIVALENTS)
            ops_hw = per_sample * fe * b
            if wf.transformer:
                footprint = transformer_training_memory(
                    wf.params, prec.bytes_per_element, layers=wf.layers, hidden=wf.hidden,
                    heads=wf.heads, batch=b, seq_len=s, zero_stage=self.zero,
                    dp_size=self.dp, lora=self.lora, recompute=self.recompute)["total"]
            else:
                footprint = np.full(len(b), generic_training_memory(
                    wf.params, prec.bytes_per_element, lora=self.lora))
            launch = cal.TRAINING_LAUNCH_MULTIPLIER
            what = f"{prec.name} training state"
        else:
            ops_model = ops_hw = wf.flops * b
            footprint = np.full(len(b), weights)
            launch = cal.INFERENCE_LAUNCH_MULTIPLIER
            what = f"{prec.name} weights"

        capacity = df.capacity
        feasible = footprint <= capacity  # the reference's check: primary memory only
        bw_fit, tier_fit = df.resident_path(weights, self.training)
        # the offload-limited estimate: flash holding the weights (inference), host
        # offload, or "none" (bandwidth 0: inf)
        bw_no, tier_no = df.misfit_path(weights, self.training)
        bw = np.where(feasible, bw_fit, bw_no)

        with np.errstate(divide="ignore", invalid="ignore"):
            t_compute = np.where(ops_hw > 0.0, ops_hw / (peak * eff), 0.0)
            traffic = weights * (1.0 + _TRAFFIC * b)
            t_memory = traffic / bw
            t_overhead = df.dispatch + wf.layers * df.layer * launch
            memory_bound = t_memory > t_compute
            roof = np.where(memory_bound, t_memory, t_compute)
            latency = roof + t_overhead
            throughput = b / latency
            mfu = np.minimum(ops_model / latency / peak, 1.0)
            hfu = np.minimum(ops_hw / latency / peak, 1.0)
            tdp = df.tdp
            energy = (tdp * (_IDLE + _DYNAMIC * hfu) * latency if tdp > 0.0
                      else np.zeros(len(b)))

        if self.training:
            no = df.misfit_reason(f"needs more than {units.fmt(capacity, 'bytes')}",
                                  f"{what}; see memory_footprint_bytes", True)
        else:  # the words of Engine.sweep's omitted rows
            no = df.misfit_reason(f"needs {units.fmt(weights, 'bytes')}", what, False,
                                  weights)
        yes = df.fit_reason(what, weights, self.training)
        return {
            "efficiency": eff,
            "latency_ms": latency * 1e3,
            "latency_compute_ms": t_compute * 1e3,
            "latency_memory_ms": t_memory * 1e3,
            "latency_overhead_ms": t_overhead * 1e3,
            "throughput_per_s": throughput,
            "energy_j": energy,
            "memory_footprint_bytes": footprint,
            "capacity_bytes": capacity,
            "feasible": feasible,
            "reason": (feasible, yes, no),
            "bottleneck": (memory_bound, "Memory", "Compute"),
            "overhead_dominated": t_overhead > roof,
            "mfu": mfu,
            "hfu": hfu,
            "bandwidth_path": (feasible, tier_fit, tier_no),
            "peak_flops_per_s": peak,
            "bandwidth_bytes_per_s": bw,
            "basis": BASIS,
            "compute_slot": slot,
            "fell_back": fell_back,
        }
