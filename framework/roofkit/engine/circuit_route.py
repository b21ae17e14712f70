"""``Engine.solve(..., cost_model="roofline")``: a template workload through its circuit.

The reference equation treats a transformer as W bytes and 2·params FLOPs per token; the
circuit costs every node (attention over the context, KV reads, routed experts…) with a
registered cost model. Taken only when a caller names a cost model; the default stays the
reference equation. For inference of a template workload:

    T = Σ_nodes cost_model(node) + T_dispatch + L * T_layer

one decode step of B sequences at a context of ``seq_len`` tokens (an encoder without a
decode step: a prefill of ``seq_len`` tokens in each of B sequences). Feasibility is
KV-aware: weights plus the KV cache and state of B sequences against the device's usable
memory (``roofkit.fits``). ``latency_compute`` and ``latency_memory`` are the nodes'
Σ FLOPs/peak and Σ bytes/bandwidth; whatever the cost model adds beyond max(memory,
compute) per node (kernel launches) counts as overhead. The circuit costs against the
device roofline of its basis, so ``efficiency`` does not apply; the trace says so.
"""

from __future__ import annotations

from .. import units
from ..errors import OOMError, SpecError
from . import calibration as cal
from .profile import PerformanceProfile


def solve_with_cost_model(cache, wf, df, prec, cost_model, batch, eff, raise_errors, training,
                          seq_len, zero, dp, lora, recompute):
    reg = cache.registry
    if isinstance(cost_model, str):
        reg.cost_model(cost_model)  # an unknown name lists the registered ones
    if not wf.per_token:
        raise SpecError(f"cost_model={cost_model!r} costs a template workload's circuit; "
                        f"{wf.name} is a generic workload (declared FLOPs), so omit cost_model")
    if training:
        raise SpecError(f"cost_model={cost_model!r} estimates inference (decode or prefill); "
                        "for training omit cost_model to use the reference equation")
    from ..circuit import api

    decoder = _is_decoder(reg, wf)
    name = prec.name
    if decoder:
        est = api.decode(wf.spec, df.spec, batch=batch, context=seq_len, precision=name,
                         cost_model=cost_model, registry=reg, basis="datasheet")
        step = f"decode step of {batch} sequences at context {seq_len}"
        sample = "token (one per sequence: a decode step over the batch)"
    else:
        est = api.prefill(wf.spec, df.spec, tokens=seq_len, seqs=batch, precision=name,
                          cost_model=cost_model, registry=reg, head=True,
                          basis="datasheet")  # the whole forward
        step = f"prefill of {seq_len} tokens in each of {batch} sequences (an encoder)"
        sample = f"sequence of {seq_len} tokens"
    fit = api.fits(wf.spec, df.spec, seqs=batch, context=seq_len,
                   precision=name, registry=reg, basis="datasheet")
    if not fit.fits and raise_errors:
        raise OOMError(f"{wf.name} needs {units.fmt(fit.required, 'bytes')} (weights + KV of "
                       f"{batch} sequences at {seq_len} tokens, {name}) but {df.name} has "
                       f"{units.fmt(fit.usable, 'bytes')} usable", fit.required, fit.usable)

    t_compute = float(est.compute_time)
    t_memory = float(est.memory_time)
    roof_nodes = sum(max(float(r.t_memory), float(r.t_compute)) for r in est.rows)
    extra = float(est.time) - roof_nodes
    t_fixed = df.dispatch + wf.layers * df.layer * cal.INFERENCE_LAUNCH_MULTIPLIER
    t_overhead = t_fixed + extra
    latency = roof_nodes + t_overhead
    peak, slot, fell_back = df.peak(prec)
    flops = float(est.flops)
    throughput = batch / latency
    util = min(flops / latency / peak, 1.0)
    energy = cal.energy(df.tdp, util, latency) if df.tdp > 0.0 else 0.0
    fmt = units.fmt
    trace = [
        f"cost model {est.cost_model!r} over the circuit of {wf.name}: {step}",
        f"capacity: needs {fmt(fit.required, 'bytes')} (weights "
        f"{fmt(fit.footprint.weights, 'bytes')} + KV and state of {batch} sequences) "
        f"{'<=' if fit.fits else '>'} usable {fmt(fit.usable, 'bytes')} on {df.name} "
        f"({fit.usable_reason}): {'fits' if fit.fits else 'DOES NOT FIT'}",
        f"nodes: Σ FLOPs/peak {fmt(t_compute, 'time')}, Σ bytes/bandwidth "
        f"{fmt(t_memory, 'time')}, Σ per-node max {fmt(roof_nodes, 'time')}",
        f"overhead: dispatch {fmt(df.dispatch, 'time')} + {wf.layers} layers x "
        f"{fmt(df.layer, 'time')} + cost-model extra {fmt(extra, 'time')} = "
        f"{fmt(t_overhead, 'time')}",
        f"bound: {'Memory' if t_memory > t_compute else 'Compute'}; latency "
        f"{fmt(latency, 'time')}, throughput {throughput:.6g} per s",
        f"efficiency {eff:g} not applied: the circuit costs against the device roofline "
        f"({est.basis})",
        *est.notes,
    ]
    if not fit.fits:
        trace.insert(2, "does not fit: the circuit's time assumes every byte resident in "
                        "device memory (no offload is modeled on this route)")
    if df.tdp > 0.0:
        trace.append(f"energy: TDP {fmt(df.tdp, 'power')} x ({cal.ENERGY_IDLE_FRACTION:g} + "
                     f"{cal.ENERGY_DYNAMIC_FRACTION:g} x HFU {util:.4f}) x "
                     f"{fmt(latency, 'time')} = {fmt(energy, 'energy')}")
    else:
        trace.append(f"energy: {df.name} declares no TDP, so energy is 0 J")
    basis = f"{est.basis}; workload {wf.name}: {wf.source}"
    return PerformanceProfile(
        latency, t_compute, t_memory, t_overhead, throughput, energy, fit.required, util,
        util, "Memory" if t_memory > t_compute else "Compute", fit.fits,
        t_overhead > max(t_compute, t_memory), df.bandwidth, "memory", peak, slot, fell_back,
        flops, flops, float(est.bytes), fit.footprint.weights, wf, df, prec,
        (batch, name, eff, training, seq_len, zero, dp, lora, recompute, raise_errors), None,
        route=(tuple(trace), basis, sample), plugins=cache.plugins)


def _is_decoder(reg, wf) -> bool:
    from ..circuit.model import build_model

    return bool(build_model(wf.spec, reg).circuit.decoder)
