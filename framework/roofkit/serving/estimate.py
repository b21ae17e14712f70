"""A request-level serving estimate: a static batch of ``B`` requests of ``I`` prompt tokens
that each generate ``O`` tokens, on ``tp`` devices of one node.

    TTFT   = prefill(B x I tokens) + host(prefill step)
    ITL_j  = decode(B rows, context I + j) + host(decode step),   j = 1 .. O-1
    e2e    = TTFT + sum_j ITL_j          (summed as the KV read grows, not ITL_1 * (O - 1))
    output tokens/s = B * O / e2e

Memory per device: weights / tp + B * kv_bytes_per_token / tp * context (KV heads replicated
when fewer than devices); it fits when that is within the device's usable memory
(capacity * usable_fraction). The largest batch that fits at a context is
floor((usable - weights / tp) / (kv_per_token_per_device * context)). Activations,
workspaces and the runtime's own memory beyond the usable fraction are not counted.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ..errors import OOMError, RoofkitError
from . import overhead as _overhead
from . import roofline as _roofline
from . import step as _step
from .work import Formats, Shape, step_kernels


@attrs.frozen(eq=False)
class ServingEstimate:
    """The estimate of one serving configuration; times in seconds inside, ms in ``*_ms``."""

    workload: str
    device: str
    basis: str
    basis_detail: str
    provenance: dict
    batch: int
    input_len: int
    output_len: int
    tp: int
    precision: str
    kv_dtype: str
    engine: str | None
    slot: str
    ttft: float
    itl_steps: np.ndarray
    e2e: float
    prefill_host: _overhead.StepOverhead
    decode_host: _overhead.StepOverhead
    weights_per_device: float
    kv_per_token_per_device: float
    usable_memory: float
    fit_context: int
    notes: tuple[str, ...] = ()
    decode_breakdown: tuple = ()
    launches_source: str = ""

    # -- headline numbers -----------------------------------------------------------------
    @property
    def ttft_ms(self) -> float:
        return self.ttft * 1e3

    @property
    def itl_ms(self) -> float | None:
        """Inter-token latency, mean over the ``O - 1`` decode steps (None when O = 1)."""
        return float(np.mean(self.itl_steps)) * 1e3 if len(self.itl_steps) else None

    @property
    def e2e_ms(self) -> float:
        return self.e2e * 1e3

    @property
    def output_tokens_per_s(self) -> float:
        """Generated tokens per second of the whole batch: B * O / e2e."""
        return self.batch * self.output_len / self.e2e

    @property
    def memory_per_device(self) -> float:
        return self.weights_per_device + self.batch * self.kv_per_token_per_device * \
            self.fit_context

    @property
    def fits(self) -> bool:
        return self.memory_per_device <= self.usable_memory

    def max_batch(self, context: int | None = None) -> int:
        """The largest batch whose weights and KV fit at ``context`` tokens (0: none)."""
        context = self.input_len + self.output_len if context is None else context
        free = self.usable_memory - self.weights_per_device
        if free <= 0:
            return 0
        return int(free // (self.kv_per_token_per_device * max(context, 1)))

    # -- pint at the edge -----------------------------------------------------------------
    def quantity(self, name: str):
        """``ttft``, ``itl`` or ``e2e`` as a pint Quantity in ms."""
        from ..units import Q

        value = {"ttft": self.ttft_ms, "itl": self.itl_ms, "e2e": self.e2e_ms}[name]
        return None if value is None else Q(value, "ms")

    def to_dict(self) -> dict:
        itl = self.itl_steps * 1e3
        return {
            "workload": self.workload, "device": self.device, "tp": self.tp,
            "batch": self.batch, "input_len": self.input_len, "output_len": self.output_len,
            "precision": self.precision, "kv_dtype": self.kv_dtype, "engine": self.engine,
            "compute_slot": self.slot,
            "ttft_ms": self.ttft_ms, "itl_ms": self.itl_ms,
            "itl_first_ms": float(itl[0]) if len(itl) else None,
            "itl_last_ms": float(itl[-1]) if len(itl) else None,
            "e2e_ms": self.e2e_ms, "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens_per_s_per_device": self.output_tokens_per_s / self.tp,
            "fits": self.fits,
            "max_batch": self.max_batch(),
            "memory": {
                "context": self.fit_context,
                "weights_per_device_bytes": self.weights_per_device,
                "kv_bytes_per_token_per_device": self.kv_per_token_per_device,
                "required_per_device_bytes": self.memory_per_device,
                "usable_per_device_bytes": self.usable_memory,
            },
            "host": {
                "decode_step_s": self.decode_host.host_time,
                "prefill_step_s": self.prefill_host.host_time,
                "launches_per_step": self.decode_host.launches,
                "launches_source": self.launches_source,
                "launch_s": self.decode_host.launch,
                "step_dispatch_s": self.decode_host.dispatch,
                "step_dispatch_source": self.decode_host.source,
            },
            "basis": self.basis, "basis_detail": self.basis_detail,
            "provenance": dict(self.provenance), "notes": list(self.notes),
        }


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise RoofkitError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _resolve(registry, workload, device, precision, kv_dtype):
    from ..registry import resolve

    reg = resolve(registry)
    w = reg.workload(workload)
    d = reg.device(device)
    if precision is None:
        precision = w.formats.get("default", "bf16")
    wp = reg.precision(precision)
    kp = reg.precision(kv_dtype)
    return reg, w, d, wp, kp


def expert_bytes(registry, workload, precision_given: bool) -> float | None:
    """Bytes per routed-expert weight when the checkpoint ships experts in their own format
    (``formats.experts``) and no precision was asked for; None: the weights' format."""
    fmt = workload.formats.get("experts")
    if fmt is None or precision_given:
        return None
    return registry.precision(fmt).bytes_per_element


def estimate(workload, device, *, batch: int = 1, input_len: int = 128, output_len: int = 128,
             tp: int = 1, precision: str | None = None, kv_dtype: str = "bf16",
             basis: str = "calibrated", engine: str | None = None, registry=None,
             fit_context: int | None = None, require_fit: bool = False) -> ServingEstimate:
    """The serving estimate of a static batch; see the module docstring for the equations.

    ``fit_context`` is the context the memory check holds per sequence (default: input +
    output, the end of the request).
    """
    batch = _positive_int("batch", batch)
    input_len = _positive_int("input_len", input_len)
    output_len = _positive_int("output_len", output_len)
    tp = _positive_int("tp", tp)
    reg, w, d, wp, kp = _resolve(registry, workload, device, precision, kv_dtype)
    shape = Shape.of(w)
    notes = []
    if tp > 1:
        ic = d.interconnect
        if ic is None:
            raise RoofkitError(f"{d.name} has no [interconnect]; tp={tp} needs one")
        if tp > ic.max_devices:
            raise RoofkitError(f"tp={tp} exceeds the {ic.max_devices} devices {d.name}'s "
                               f"{ic.name or 'interconnect'} joins in one node")
    shape.check_tp(tp)
    roof = _roofline.build(d, basis, reg)
    host = _roofline.host_calibration(reg)
    slot, note = roof.slot(wp)
    if note:
        notes.append(note)
    head_bytes = max(wp.bytes_per_element, 2.0)
    fmt = Formats(weight=wp.bytes_per_element, activation=2.0, kv=kp.bytes_per_element,
                  head=head_bytes, expert=expert_bytes(reg, w, precision is not None))

    # prefill: B sequences of I tokens, causal
    pre_k = step_kernels(shape, fmt, tp, batch, prompt=input_len)
    launches, how = circuit_launches(w, reg, shape, tp)
    if launches is None:
        launches = _step.launches(pre_k)
    pre_t = _step.kernel_times(pre_k, roof, slot, tp, prefill=True)
    pre_dev = float(_step.device_time(pre_t))
    pre_host = _overhead.step_overhead(roof, host, launches, batch, engine)
    ttft = pre_dev + pre_host.host_time

    # decode: steps j = 1 .. O-1 at context I + j
    ctx = input_len + np.arange(1, output_len, dtype=float)
    dec_host = _overhead.step_overhead(roof, host, launches, batch, engine)
    itl = np.zeros(0)
    breakdown = ()
    if len(ctx):
        dec_k = step_kernels(shape, fmt, tp, batch, context=ctx)
        dec_t = _step.kernel_times(dec_k, roof, slot, tp, prefill=False)
        itl = np.asarray(_step.device_time(dec_t), dtype=float) + dec_host.host_time
        itl = np.broadcast_to(itl, ctx.shape).copy()
        breakdown = tuple(_summarize(dec_t))
    if engine is not None and roof.basis == "datasheet":
        notes.append(f"engine {engine!r}: its measured step time enters the calibrated basis "
                     "only")
    e2e = ttft + float(itl.sum())
    usable = d.memory.capacity * d.memory.usable_fraction
    est = ServingEstimate(
        workload=w.name, device=d.name, basis=basis, basis_detail=roof.describe(),
        provenance=dict(roof.provenance), batch=batch, input_len=input_len,
        output_len=output_len, tp=tp, precision=wp.name, kv_dtype=kp.name, engine=engine,
        slot=slot, ttft=ttft, itl_steps=itl, e2e=e2e, prefill_host=pre_host,
        decode_host=dec_host, weights_per_device=shape.weight_bytes(fmt, tp),
        kv_per_token_per_device=shape.kv_bytes_per_token(fmt, tp), usable_memory=usable,
        fit_context=input_len + output_len if fit_context is None else int(fit_context),
        notes=tuple(notes), decode_breakdown=breakdown, launches_source=how)
    if require_fit and not est.fits:
        raise OOMError(
            f"{w.name} at batch {batch}, context {est.fit_context} needs "
            f"{est.memory_per_device / 1e9:.1f} GB per device; {d.name} has "
            f"{usable / 1e9:.1f} GB usable (largest batch that fits: {est.max_batch()})",
            required=est.memory_per_device, available=usable)
    return est


def circuit_launches(workload, registry, shape: Shape, tp: int) -> tuple[int | None, str]:
    """Kernels of one step counted from the workload's circuit (every node of the embed,
    main and head sections, ``count`` times), plus the two all-reduces per layer of tensor
    parallelism; ``(None, reason)`` when the circuit cannot be built."""
    try:
        from ..circuit.model import build_model

        model = build_model(workload, registry, precision=None, formats=None,
                            kv_cache_dtype=None, ssm_h_dtype=None)
    except Exception as exc:  # no circuit for this template: count the serving kernels
        return None, f"kernels counted from the serving lowering ({exc})"
    nodes = sum(n.count for n in model.nodes if n.section != "draft")
    extra = 2 * shape.layers if tp > 1 else 0
    return int(nodes + extra), "kernels counted from the circuit"


def _summarize(times) -> list[dict]:
    """Per-kernel share of the mean decode step, largest first."""
    rows = []
    for kt in times:
        t = float(np.mean(kt.time)) * kt.count
        rows.append({"kernel": kt.name, "kind": kt.kind, "count": kt.count, "time_s": t,
                     "bound": kt.bound})
    return sorted(rows, key=lambda r: -r["time_s"])


def max_load(workload, device, *, input_len: int, output_len: int, tp: int = 1,
             precision: str | None = None, kv_dtype: str = "bf16", basis: str = "calibrated",
             engine: str | None = None, registry=None, max_requests: int | None = None
             ) -> ServingEstimate:
    """Offline serving at full load with in-flight batching and a paged KV cache.

    Each request holds its tokens so far, on average ``I + O/2``, so the concurrency is the
    batch that fits at that context, ``B = floor((usable - weights/tp) / (kv_dev * (I + O/2)))``
    (at most ``max_requests``); throughput is then that of a batch of ``B``.
    """
    reg, w, d, _, kp = _resolve(registry, workload, device, precision, kv_dtype)
    probe = estimate(w, d, batch=1, input_len=input_len, output_len=1, tp=tp,
                     precision=precision, kv_dtype=kp.name, basis="datasheet", registry=reg)
    mean_ctx = input_len + math.ceil(output_len / 2)
    batch = probe.max_batch(mean_ctx)
    if batch < 1:
        raise OOMError(f"{w.name} does not fit on {tp} x {d.name} at context {mean_ctx}",
                       required=probe.weights_per_device, available=probe.usable_memory)
    if max_requests:
        batch = min(batch, max_requests)
    est = estimate(w, d, batch=batch, input_len=input_len, output_len=output_len, tp=tp,
                   precision=precision, kv_dtype=kp.name, basis=basis, engine=engine,
                   registry=reg, fit_context=mean_ctx)
    return attrs.evolve(est, notes=(*est.notes, f"max load: {batch} requests in flight, the KV "
                                    f"capacity at the mean context {mean_ctx}"))
