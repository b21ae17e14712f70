"""Device time of one step: every kernel on the roofline of a basis, summed.

Per kernel instance (``F`` FLOPs, ``B`` bytes):

    matmul      t = comb(F / (P_w * eta_w(F_gemm)), B / BW)   P_w: the weight format's slot
    attention   t = comb(F / P_a, B / BW)   P_a: the measured FlashAttention throughput for
                prefill on the calibrated basis, else the 16-bit slot's peak
    memory      t = B / BW
    allreduce   t = ring all-reduce of the message over the tensor-parallel group

where ``comb`` is the basis's overlap of compute and memory (``max`` on the datasheet basis,
see :mod:`roofkit.serving.roofline`), and the step is ``sum(count * t)`` over kernels.
Context-dependent terms are numpy arrays, so one call costs every decode step of a request.
"""

from __future__ import annotations

import attrs
import numpy as np

ACTIVATION_SLOTS = ("bf16", "fp16", "fp32")


@attrs.frozen
class KernelTime:
    """One kernel's time per instance (s) and whether compute or memory bound it."""

    name: str
    kind: str
    count: int
    time: object
    bound: str


def activation_slot(roofline) -> str:
    for s in ACTIVATION_SLOTS:
        if s in roofline.peaks:
            return s
    return roofline.device.default_slot


def kernel_times(kernels, roofline, slot: str, tp: int, *, prefill: bool) -> list[KernelTime]:
    """Time per instance of each kernel on ``roofline``; matmuls on ``slot``."""
    bw = roofline.bandwidth
    a_slot = activation_slot(roofline)
    out = []
    for k in kernels:
        if k.kind == "allreduce":
            t = roofline.allreduce_time(k.message, tp)
            out.append(KernelTime(k.name, k.kind, k.count, t, "interconnect"))
            continue
        mem = np.asarray(k.bytes, dtype=float) / bw
        if k.kind == "matmul":
            comp = np.asarray(k.flops, dtype=float) / roofline.matmul_rate(slot, k.gemm_flops)
        elif k.kind == "attention":
            rate = roofline.attention_peak if (prefill and roofline.attention_peak) else \
                roofline.peaks[a_slot]
            comp = np.asarray(k.flops, dtype=float) / rate
        else:
            comp = 0.0 * mem
        t = roofline.combine(comp, mem)
        bound = "compute" if np.all(comp > mem) else "memory"
        out.append(KernelTime(k.name, k.kind, k.count, t, bound))
    return out


def device_time(times: list[KernelTime]):
    """``sum(count * time)``: seconds (an array when the kernels depend on context)."""
    total = 0.0
    for kt in times:
        total = total + kt.count * kt.time
    return total


def launches(kernels) -> int:
    """Kernel instances in the step (each one a launch)."""
    return int(sum(k.count for k in kernels))
