"""The single-device roofline of ``Engine.solve``, in plain floats.

    T = max(F_batch / (eta * F_peak), W * (1 + 0.1 * B) / BW) + T_dispatch + L * T_layer * m

F_batch is the batch's forward FLOPs, times 3 forward-equivalents in training (4 with full
activation recomputation), with a token-based workload's per-token FLOPs times seq_len in
training; W the weight bytes at the precision; B the batch; BW the bandwidth of the selected
path (:class:`~roofkit.engine.facts.DeviceFacts`: on-chip SRAM when the weights fit in it,
flash when the device has one that holds the weights (inference only), else primary memory;
when the footprint exceeds primary memory it does not fit (``feasible=False``; OOMError with
``raise_errors=True``) and the offload-limited estimate reads the weights in place from flash
when flash holds them (inference: ``flash_resident``), else offloads to the host at the
limiting link, or has no path at all, BW = 0 and an infinite latency, when the device
declares no ``[host_link]``); m = 3 in training, 1 in inference.
Throughput = B / T. MFU and HFU are model and hardware FLOPs over T * F_peak (they differ only
by recomputation). Energy = TDP * (idle + dynamic * HFU) * T, 0 without a TDP.
"""

from __future__ import annotations

from .. import units
from ..bounds import MAX_BATCH, MAX_DEVICES, MAX_TOKENS
from ..errors import OOMError
from . import calibration as cal
from . import validation
from .facts import cache_for
from .profile import PerformanceProfile
from .training_memory import generic_training_memory, transformer_training_memory

_TRAFFIC = cal.ACTIVATION_TRAFFIC_PER_SAMPLE
_IDLE = cal.ENERGY_IDLE_FRACTION
_DYNAMIC = cal.ENERGY_DYNAMIC_FRACTION
_EFF_MIN = cal.EFFICIENCY_MIN
_EFF_MAX = cal.EFFICIENCY_MAX
_TRAIN_FE = cal.TRAINING_FORWARD_EQUIVALENTS
_RECOMPUTE_FE = cal.RECOMPUTE_FORWARD_EQUIVALENTS
_TRAIN_LAUNCH = cal.TRAINING_LAUNCH_MULTIPLIER
_INFER_LAUNCH = cal.INFERENCE_LAUNCH_MULTIPLIER
_INF = float("inf")


def solve(model, hardware, batch_size=1, precision="fp16", efficiency=0.5, raise_errors=False,
          is_training=False, seq_len=2048, zero_stage=0, dp_size=1, is_lora=False,
          activation_recomputation=False, *, registry=None, cost_model=None):
    """Estimate one device's compute, memory and capacity limits (see the module docstring).

    ``model`` and ``hardware`` are specs, registry names (``"llama-3.1-8b"``, ``"h100"``) or
    TOML paths. ``cost_model="roofline"`` routes a template workload's inference through the
    circuit's per-node estimate instead of the reference equation.
    """
    # -- validation: a few comparisons on the fast path ----------------------------------
    if type(batch_size) is not int or not 1 <= batch_size <= MAX_BATCH:
        batch_size = validation.positive_int("batch_size", batch_size)
    if type(efficiency) is not float or not (_EFF_MIN <= efficiency <= _EFF_MAX):
        efficiency = validation.efficiency(efficiency)
    if type(seq_len) is not int or not 1 <= seq_len <= MAX_TOKENS:
        seq_len = validation.positive_int("seq_len", seq_len)
    if type(dp_size) is not int or not 1 <= dp_size <= MAX_DEVICES:
        dp_size = validation.positive_int("dp_size", dp_size)
    if type(zero_stage) is not int or not (0 <= zero_stage <= 3):
        zero_stage = validation.zero_stage(zero_stage)
    if raise_errors is not False and raise_errors is not True:
        raise_errors = validation.flag("raise_errors", raise_errors)
    if is_training is not False and is_training is not True:
        is_training = validation.flag("is_training", is_training)
    if is_lora is not False and is_lora is not True:
        is_lora = validation.flag("is_lora", is_lora)
    if activation_recomputation is not False and activation_recomputation is not True:
        activation_recomputation = validation.flag("activation_recomputation",
                                                   activation_recomputation)

    cache = cache_for(registry)
    prec = cache.precisions.get(precision) if type(precision) is str else None
    if prec is None:
        prec = cache.precision(precision)
    wf = cache.workload(model)
    df = cache.device(hardware)

    if cost_model is not None:
        from .circuit_route import solve_with_cost_model

        return solve_with_cost_model(cache, wf, df, prec, cost_model, batch_size, efficiency,
                                     raise_errors, is_training, seq_len, zero_stage, dp_size,
                                     is_lora, activation_recomputation)

    return _roofline(wf, df, prec, batch_size, efficiency, raise_errors, is_training, seq_len,
                     zero_stage, dp_size, is_lora, activation_recomputation, cache.plugins)


def _roofline(wf, df, prec, batch, eff, raise_errors, training, seq_len, zero, dp, lora,
              recompute, plugins=()):
    """The reference equation on resolved facts (validated arguments)."""
    peak, slot, fell_back = df._peak_of.get(prec.name) or df.peak(prec)
    weights = wf.params * prec.bytes_per_element
    parts = None
    if training:
        per_sample = wf.flops * seq_len if wf.per_token else wf.flops
        ops_model = per_sample * _TRAIN_FE * batch
        ops_hw = per_sample * (_RECOMPUTE_FE if recompute else _TRAIN_FE) * batch
        if wf.transformer:
            parts = transformer_training_memory(
                wf.params, prec.bytes_per_element, layers=wf.layers, hidden=wf.hidden,
                heads=wf.heads, batch=batch, seq_len=seq_len, zero_stage=zero, dp_size=dp,
                lora=lora, recompute=recompute)
            footprint = parts["total"]
        else:
            footprint = generic_training_memory(wf.params, prec.bytes_per_element, lora=lora)
        launch = _TRAIN_LAUNCH
    else:
        ops_model = ops_hw = wf.flops * batch
        footprint = weights
        launch = _INFER_LAUNCH

    capacity = df.capacity
    # DeviceFacts.fits inline: the reference's capacity check, primary memory only
    if footprint <= capacity:
        feasible = True
        bw, tier = df.resident_path(weights, training)
    else:
        feasible = False
        if raise_errors:
            what = f"{'training state' if training else 'weights'} at {prec.name}"
            raise OOMError(f"{wf.name} " + df.misfit_reason(
                f"needs {units.fmt(footprint, 'bytes')}", what, training, weights),
                footprint, capacity)
        # the offload-limited estimate: weights read in place from flash (inference), host
        # offload, or "none" (no host link: no path)
        bw, tier = df.misfit_path(weights, training)

    t_compute = ops_hw / (peak * eff) if ops_hw > 0.0 else 0.0
    traffic = weights * (1.0 + _TRAFFIC * batch)
    t_memory = traffic / bw if bw > 0.0 else _INF
    t_overhead = df.dispatch + wf.layers * df.layer * launch
    roof = t_memory if t_memory > t_compute else t_compute
    latency = roof + t_overhead
    if latency > 0.0:
        throughput = batch / latency
        mfu = ops_model / latency / peak
        hfu = ops_hw / latency / peak
        mfu = 1.0 if mfu > 1.0 else mfu
        hfu = 1.0 if hfu > 1.0 else hfu
    else:  # pragma: no cover - a zero-work, zero-overhead device
        throughput = mfu = hfu = 0.0
    tdp = df.tdp
    energy = tdp * (_IDLE + _DYNAMIC * hfu) * latency if tdp > 0.0 else 0.0
    return PerformanceProfile(
        latency, t_compute, t_memory, t_overhead, throughput, energy, footprint, mfu, hfu,
        "Memory" if t_memory > t_compute else "Compute", feasible, t_overhead > roof,
        bw, tier, peak, slot, fell_back, ops_model, ops_hw, traffic, weights, wf, df, prec,
        (batch, prec.name, eff, training, seq_len, zero, dp, lora, recompute, raise_errors),
        parts, plugins=plugins)
