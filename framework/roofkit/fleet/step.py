"""The training step of one layout, as numpy arithmetic over arrays of layouts (one layout is
a batch of one; the layout search passes 10^5 at once).

Per micro-batch of ``T = mb * s / cp`` tokens on one device of the heaviest pipeline stage:

* **GEMMs**: each sharded GEMM ``(k, n)`` costs ``F = 2 T k n / tp`` at
  ``P_slot * eta(F)`` (the calibrated GEMM-efficiency curve; eta = 1 on the datasheet basis);
  backward is a data and a weight gradient of the same FLOPs (a frozen LoRA base: the data
  gradient only). fp8 runs the attention, MLP and expert projections on the fp8 slot; the
  LM head, the attention core and every elementwise op stay at bf16.
* **attention core** (FlashAttention): forward ``2 T k_avg (a / tp) (d_qk + d_v)`` with
  ``k_avg = s / 2`` keys per query (causal), backward 2.5 x forward (five matmuls to two: it
  recomputes the scores, which is Korthikanti's selective recomputation by construction).
* **elementwise** traffic (norms, residual adds, activation, RoPE, MoE permutation, loss,
  PEFT's adapter ops) at the memory bandwidth, bytes by the stack's kernels (fused or eager
  PyTorch: :mod:`roofkit.fleet.elementwise`).
* **recompute**: ``full`` repeats the forward in the backward; ``selective`` equals ``none``
  under FlashAttention (nothing of size s^2 is stored either way).
* **communication**: TP with sequence parallelism (4 all-gathers and 4 reduce-scatters of
  ``T h e`` per layer, forward and backward, 6 and 6 with full recomputation; without SP the
  same bytes as all-reduces), CP ring attention (K and V passed ``cp - 1``
  times forward, 2x that backward, overlapped with the attention core), EP dispatch and
  combine all-to-alls (``T top_k h e cf``, twice forward and twice backward per MoE layer),
  PP point-to-point (below), DP gradient sync overlapped with the
  last micro-batch's backward (ZeRO 1/2: reduce-scatter, then an all-gather of the updated
  weights overlapped with the next forward; ZeRO 3: all-gathers forward and backward and a
  reduce-scatter per micro-batch).
* **stage boundaries**: ``T h e / tp`` per TP rank (sequence parallelism, or Megatron-LM's
  scatter/gather of the replicated output); ``T h e`` per rank where the engine sends the
  whole replicated tensor from every rank (DeepSpeed's pipeline engine, ``pp_scatter``
  false).
* **pipeline**: ``t = (m + (p - 1) / v) * t_mb`` with ``t_mb`` the heaviest stage's
  forward plus backward; the bubble is ``(p - 1) / (v m)`` of the busy time. Uneven stages
  (``p`` not dividing the layers; DeepSpeed's ``type:transformer|embedding`` partition,
  Megatron's ``--account-for-embedding-in-pipeline-split``): the embedding and the head
  count as one layer each, ``ceil((L + 2) / p)`` layers on a full stage and one fewer on
  the last, whose head it also runs; ``t_mb`` is the slower of the two.
* **fp32 gradient accumulation** outside the GEMMs (DeepSpeed's BF16_Optimizer): 10 bytes
  per local trainable parameter after every micro-batch's backward, and the data-parallel
  reduction of those fp32 gradients (4 bytes per parameter instead of 2).
* **optimizer**: the mixed-precision Adam step moves 44 bytes per local trainable parameter
  (main-gradient copy, clipping norm, Adam, weight copy; 52 with fp16 loss scaling).

Memory per device (Rajbhandari et al. 2020; Korthikanti et al. 2022 section 4, with
FlashAttention so no ``5 a s / h`` term): weights ``2 P`` (QLoRA base 4.125 bits), gradients
``2 P_train``, Adam ``12 P_train``, sharded by ZeRO 3/2/1 over the data-parallel group
(ZeRO 3 also holds two gathered layers, the one computing and the one prefetched); the
activations of one layer per token from the architecture (inputs of every GEMM, the norms,
the flash output; ``2 h / tp`` with full recomputation) times the micro-batches in flight on
the first stage: ``min(m, p)`` under 1F1B, times ``1 + (p - 1) / (p v)`` interleaved; logits
in fp32 on the last stage; a declared allocator reserve of the capacity.
"""

from __future__ import annotations

import attrs
import numpy as np

from ..circuit.calibrated import efficiency
from ..errors import SpecError
from .collectives import Group, collective_time
from .elementwise import FUSED, layer_bytes, lora_bytes
from .model import Gemm

BF16 = 2.0
ADAM_STATE = 12.0  # FP32 master weights, first and second moments (Rajbhandari et al. 2020)
#: the mixed-precision optimizer step per local trainable parameter (Megatron-LM's
#: ``MixedPrecisionOptimizer.step``, apex multi-tensor kernels): the 16-bit gradient copied
#: to the fp32 main gradient (read 2, write 4), its norm for clipping (read 4), Adam (fp32
#: master read and write 8, moments 16, gradient read 4), the master copied back to the
#: 16-bit weight (read 4, write 2)
ADAM_STEP_BYTES = 6.0 + 4.0 + 28.0 + 6.0
GRAD_ACCUM_FP32_BYTES = 10.0  # per parameter per micro-batch (see training_step)
FP16_UNSCALE_BYTES = 8.0  # fp16 loss scaling: unscale and check for inf/nan (read 4, write 4)
QLORA_BYTES = (4 + 8 / 64) / 8  # NF4 with one 8-bit scale per 64 (Dettmers et al. 2023)
FLASH_BACKWARD = 2.5  # five matmuls in the backward to two in the forward
LORA_TARGETS = ("qkv", "o", "q_a", "q_b", "kv_a", "kv_b")
#: which linears carry adapters: the attention projections, or every linear of the layer
ADAPTER_SETS = ("attention", "all")
RECOMPUTE = {"none": 0, "selective": 1, "full": 2}
GROUPS = ("tp", "cp", "ep", "dp", "pp")
#: bytes per score element moved outside FlashAttention (2-byte scores): forward, the QK^T
#: output written, softmax read and written, read by the PV GEMM; backward, the PV and softmax
#: gradients read and written (Korthikanti et al. 2022 section 4.1 lists the same tensors)
UNFUSED_FWD_BYTES = 8.0
UNFUSED_BWD_BYTES = 12.0
DROPOUT_BYTES = 5.0  # attention dropout: read 2, write 2, a 1-byte mask


@attrs.frozen
class Costing:
    """What a layout is costed with: the device's roofline and the cluster's tiers."""

    peaks: dict
    curves: dict
    bandwidth: float
    attention_rate: float | None
    capacity: float
    topology: object
    registry: object
    domain: int
    algorithm: str | None = None


def half_slot(peaks, half: str = "bf16") -> str:
    """The 16-bit slot a step's non-fp8 math runs on: ``half`` (bf16 or fp16), else the
    other where the device lacks it (V100 has fp16 only)."""
    for slot in (half, "bf16", "fp16"):
        if slot in peaks:
            return slot
    raise SpecError(f"the device has neither a bf16 nor an fp16 peak; peaks: {', '.join(peaks)}")


def _gemm_time(c: Costing, slot: str, flops):
    curve = c.curves.get(slot)
    eta = efficiency(curve, flops) if curve is not None else 1.0
    return flops / (c.peaks[slot] * eta)


def _sum_gemms(c: Costing, gemms, tokens, tp, slot):
    """(forward FLOPs, forward seconds) of ``gemms`` over ``tokens`` rows, TP-sharded."""
    flops = 0.0
    time = 0.0
    for g in gemms:
        f = 2.0 * tokens * g.k * g.n / (tp if g.split else 1.0)
        flops = flops + f
        time = time + _gemm_time(c, slot, f)
    return flops, time


def adapted_gemms(arch, targets: str = "attention") -> list[Gemm]:
    """The GEMMs LoRA adapts: the attention projections, with ``"all"`` the MLP's too (a
    gated MLP's fused gate-and-up GEMM counted as the two linears PEFT adapts)."""
    out = [g for g in arch.attention if g.name in LORA_TARGETS]
    if targets == "all":
        for g in arch.mlp:
            if arch.gated and g.split == "n":
                out += [Gemm(g.name + "_gate", g.k, g.n / 2, g.split),
                        Gemm(g.name + "_up", g.k, g.n / 2, g.split)]
            else:
                out.append(g)
    return out


def placement(sizes: dict, volumes: dict, domain: int):
    """Members per scale-up domain of each group: groups sorted by bytes per step, heaviest
    innermost; a group of stride ``q`` has ``min(size, max(1, domain // q))`` members in one
    domain. Returns ({group: inner count}, {group: stride}); arrays broadcast."""
    names = list(GROUPS)
    size = np.stack(np.broadcast_arrays(*[np.asarray(sizes[g], dtype=float) for g in names]),
                    axis=-1)
    vol = np.stack(np.broadcast_arrays(*[np.asarray(volumes[g], dtype=float)
                                         for g in names]), axis=-1)
    vol = np.where(size > 1, vol, -1.0)  # groups of one take no room
    order = np.argsort(-vol, axis=-1, kind="stable")
    sorted_size = np.take_along_axis(size, order, axis=-1)
    stride_sorted = np.cumprod(np.concatenate(
        [np.ones((*sorted_size.shape[:-1], 1)), sorted_size[..., :-1]], axis=-1), axis=-1)
    stride = np.empty_like(stride_sorted)
    np.put_along_axis(stride, order, stride_sorted, axis=-1)
    inner = np.clip(np.floor(domain / stride), 1, size)
    return ({g: inner[..., i] for i, g in enumerate(names)},
            {g: stride[..., i] for i, g in enumerate(names)})


def training_step(arch, c: Costing, *, tp, pp, vpp, dp, cp, ep, mb, gb, seq, recompute,
                  zero, lora, qlora, fp8, capacity_factor=1.0, reserve=0.1, half="bf16",
                  flash=True, dropout=False, sp=True, dp_overlap=True, kernels=FUSED,
                  lora_targets="attention", lora_dropout=False, uneven=False,
                  pp_scatter=True, fp32_accumulation=False):
    """Every figure of the step, as arrays over the layouts (see the module docstring)."""
    tp, pp, vpp, dp, cp, ep, mb, gb, seq = (np.asarray(x, dtype=float) for x in
                                            (tp, pp, vpp, dp, cp, ep, mb, gb, seq))
    recompute = np.asarray(recompute)
    zero = np.asarray(zero)
    lora = np.asarray(lora, dtype=float)
    trainable_base = lora <= 0
    h, a, kv = float(arch.hidden), float(arch.heads), float(arch.kv_heads)
    L, V = float(arch.layers), float(arch.vocab)
    micro = gb / (mb * dp)  # micro-batches per step (gradient accumulation)
    T = mb * seq / cp  # tokens per micro-batch on one device
    stage_layers = L / pp
    if uneven:  # the embedding and the head each count as a layer (see the docstring)
        stage_layers = np.minimum(np.ceil((L + 2) / pp), L)
        last_layers = stage_layers - 1
    bf = half_slot(c.peaks, half)
    mm_slot = "fp8" if fp8 and "fp8" in c.peaks else bf
    full = recompute == RECOMPUTE["full"]

    # -- compute per layer, per micro-batch ------------------------------------------------
    f_attn, t_attn = _sum_gemms(c, arch.attention, T, tp, mm_slot)
    f_mlp, t_mlp = _sum_gemms(c, arch.mlp, T, tp, mm_slot)
    f_moe = t_moe = 0.0
    moe_frac = arch.moe_layers / L
    if arch.experts:
        local_experts = arch.experts / ep
        per_expert = T * arch.top_k * capacity_factor * ep / arch.experts  # tokens per expert
        fe, te = _sum_gemms(c, arch.expert, per_expert, tp, mm_slot)
        fs, ts = _sum_gemms(c, arch.shared, T, tp, mm_slot) if arch.shared else (0.0, 0.0)
        fr, tr = 2.0 * T * arch.router, _gemm_time(c, bf, 2.0 * T * arch.router)
        f_moe = fe * local_experts + fs + fr
        t_moe = te * local_experts + ts + tr
    f_layer = f_attn + (1 - moe_frac) * f_mlp + moe_frac * f_moe
    t_layer_mm = t_attn + (1 - moe_frac) * t_mlp + moe_frac * t_moe
    keys = seq / 2.0
    if arch.window_layers:
        w = float(arch.window)
        win_keys = np.where(seq > w, w - w * w / (2 * seq), seq / 2.0)
        keys = (arch.window_layers * win_keys + (L - arch.window_layers) * keys) / L
    if flash:
        f_core = 2.0 * T * keys * (a / tp) * (arch.qk_dim + arch.v_dim)
        t_core = f_core / (c.attention_rate or c.peaks[bf])
        t_core_b = FLASH_BACKWARD * t_core
    else:  # scores materialised: every key of s, batched per-head GEMMs, softmax, dropout
        f_core = 2.0 * T * seq * (a / tp) * (arch.qk_dim + arch.v_dim)
        scores = T * seq * (a / tp)  # score elements per micro-batch on one device
        head_gemm = 2.0 * seq * seq * arch.qk_dim
        t_mm_core = _gemm_time(c, bf, head_gemm) * f_core / head_gemm
        t_core = t_mm_core + scores * (UNFUSED_FWD_BYTES + dropout * DROPOUT_BYTES) \
            / c.bandwidth
        t_core_b = 2 * t_mm_core + scores * (UNFUSED_BWD_BYTES + dropout * DROPOUT_BYTES) \
            / c.bandwidth
    shared = np.where(sp, tp, 1.0)  # the replicated part of a layer, sharded by SP
    e_fwd, e_bwd = layer_bytes(arch, tp, shared, kernels, dropout, moe_frac, capacity_factor)
    t_elem = T * e_fwd / c.bandwidth
    t_elem_b = T * e_bwd / c.bandwidth

    # adapters (LoRA rank r): a k x r and an r x n GEMM each, and PEFT's elementwise ops
    lora_gemms = adapted_gemms(arch, lora_targets)
    adapter_per_layer = sum(lora * (g.k + g.n) for g in lora_gemms)
    l_fwd, l_bwd = lora_bytes(lora_gemms, tp, lora_dropout)
    t_elem = t_elem + np.where(lora > 0, T * l_fwd / c.bandwidth, 0.0)
    t_elem_b = t_elem_b + np.where(lora > 0, T * l_bwd / c.bandwidth, 0.0)
    t_adapter = 0.0
    for g in lora_gemms:
        for f in (2.0 * T * g.k * lora, 2.0 * T * lora * g.n / tp):
            t_adapter = t_adapter + np.where(lora > 0, _gemm_time(c, bf, np.maximum(f, 1.0)),
                                             0.0)

    t_fwd_layer = t_layer_mm + t_core + t_elem + t_adapter
    bwd_mm = np.where(trainable_base, 2.0, 1.0) * t_layer_mm
    selective = recompute == RECOMPUTE["selective"]
    t_bwd_layer = bwd_mm + t_core_b + t_elem_b + 2 * t_adapter \
        + np.where(full, t_fwd_layer, 0.0) + np.where(selective & (not flash), t_core, 0.0)

    # head (last stage): LM head GEMM and the fp32 loss
    f_head, t_head_mm = _sum_gemms(c, (Gemm("head", h, V, "n"),), T, tp, bf)
    t_loss = T * V / tp * 4.0 * 3 / c.bandwidth
    t_head_f = t_head_mm + t_loss
    t_head_b = 2 * t_head_mm + t_loss

    # -- communication per micro-batch (bytes and placement) ------------------------------
    act = T * h * BF16  # one micro-batch's activations on a TP group (full width)
    # a stage boundary: each TP rank sends its 1 / tp slice (sequence-parallel output, or
    # Megatron-LM's scatter/gather), or the whole replicated tensor (DeepSpeed's engine)
    p2p_msg = np.where(sp | pp_scatter, act / tp, act)
    n_tp = stage_layers * np.where(full, 12.0, 8.0)  # AG and RS: fwd, bwd (and recompute)
    kv_chunk = 2.0 * T * kv * arch.qk_dim * BF16 / np.minimum(tp, kv)
    n_moe_stage = stage_layers * moe_frac
    a2a_msg = T * arch.top_k * capacity_factor * h * BF16 if arch.experts else 0.0
    trainable_layer = np.where(trainable_base, 1.0, 0.0)
    dense_local = (arch.attention_params + (1 - moe_frac) * arch.layer_params(arch.mlp)
                   + moe_frac * (arch.layer_params(arch.shared) + arch.router)) / tp
    expert_local = moe_frac * arch.experts * arch.layer_params(arch.expert) / (ep * tp)
    head_local = V * h / tp
    # one stage holds the embedding table beside the head (tied: the same weights); with
    # pp > 1 the first stage holds it and the last the head, the heaviest as large
    embed_local = np.where(pp > 1, 0.0, 0.0 if arch.tied else arch.embedding_params / tp)
    stage_dense = stage_layers * dense_local + head_local + embed_local
    stage_expert = stage_layers * expert_local
    grad_size = np.where(fp32_accumulation, 4.0, BF16)  # fp32-accumulated: reduced in fp32
    grad_bytes = grad_size * (stage_dense * trainable_layer
                              + stage_layers * adapter_per_layer / tp)
    grad_expert = grad_size * stage_expert * trainable_layer
    volumes = {"tp": n_tp * act * micro, "cp": stage_layers * 3 * (cp - 1) * kv_chunk * micro,
               "ep": n_moe_stage * 4 * a2a_msg * micro, "dp": grad_bytes * 2 + grad_expert,
               "pp": 2 * p2p_msg * micro}
    inner, stride = placement({"tp": tp, "cp": cp, "ep": ep, "dp": dp, "pp": pp}, volumes,
                              c.domain)
    topo, reg, algo = c.topology, c.registry, c.algorithm

    def coll(kind, msg, size, members):
        return collective_time(kind, msg, Group.of(size, members), topo, reg, algo)

    t_tp_layer = np.where(tp > 1, coll("all_gather", act, tp, inner["tp"])
                          + coll("reduce_scatter", act, tp, inner["tp"]), 0.0)
    t_tp = t_tp_layer * n_tp / 2  # per micro-batch on the stage
    t_cp_layer = np.where(cp > 1, coll("p2p", kv_chunk, cp, inner["cp"]) * (cp - 1), 0.0)
    t_cp = stage_layers * (np.maximum(0.0, t_cp_layer - t_core)
                           + np.maximum(0.0, 2 * t_cp_layer - FLASH_BACKWARD * t_core))
    t_ep = np.where(ep > 1, n_moe_stage * 4 * coll("all_to_all", a2a_msg, ep, inner["ep"]),
                    0.0)
    t_p2p = np.where(pp > 1, coll("p2p", p2p_msg, pp, inner["pp"]), 0.0)

    trainable_local = (stage_dense + stage_expert) * trainable_layer \
        + stage_layers * adapter_per_layer / tp
    # gradients accumulated into an fp32 buffer after each micro-batch's backward, outside
    # the GEMMs (DeepSpeed's BF16_Optimizer): read the 16-bit gradient 2, the buffer 4, write 4
    t_accum = np.where(fp32_accumulation, GRAD_ACCUM_FP32_BYTES * trainable_local
                       / c.bandwidth, 0.0)
    t_f = stage_layers * t_fwd_layer + t_head_f  # the last (heaviest) stage
    t_b = stage_layers * t_bwd_layer + t_head_b + t_accum
    if uneven:  # the slower of a full middle stage and the last stage with the head
        mid_f, mid_b = stage_layers * t_fwd_layer, stage_layers * t_bwd_layer + t_accum
        last_f = last_layers * t_fwd_layer + t_head_f
        last_b = last_layers * t_bwd_layer + t_head_b + t_accum
        mid_slower = mid_f + mid_b >= last_f + last_b
        t_f = np.where(mid_slower, mid_f, last_f)
        t_b = np.where(mid_slower, mid_b, last_b)
    compute = micro * (t_f + t_b)
    busy = compute + micro * (t_tp + t_cp + t_ep)
    bubble = (pp - 1) / vpp * (t_f + t_b + t_tp + t_cp + t_ep)
    pp_comm = np.where(pp > 1, 2 * (micro * vpp + pp - 1) * t_p2p, 0.0)

    dp_all = dp * cp
    dp_exp = dp * cp / ep
    buckets = np.maximum(stage_layers, 1.0)
    w_bytes = np.where(qlora, QLORA_BYTES, BF16)
    weight_bytes = w_bytes * (stage_dense + stage_expert) \
        + BF16 * stage_layers * adapter_per_layer / tp
    dp_in = inner["dp"]
    ar = coll("all_reduce", grad_bytes, dp_all, dp_in) \
        + np.where(ep > 1, coll("all_reduce", grad_expert, dp_exp, dp_in),
                   coll("all_reduce", grad_expert, dp_all, dp_in))
    rs = coll("reduce_scatter", grad_bytes + grad_expert, dp_all, dp_in)
    ag_update = coll("all_gather", BF16 * trainable_local, dp_all, dp_in)
    ag_weights = coll("all_gather", weight_bytes, dp_all, dp_in)
    exposed_sync = np.where(zero == 0, np.maximum(ar - t_b, ar / buckets),
                            np.maximum(rs - t_b, rs / buckets)
                            + np.maximum(ag_update - t_f, ag_update / buckets))
    zero3 = micro * (np.maximum(ag_weights - t_f, ag_weights / buckets)
                     + np.maximum(ag_weights + rs - t_b, (ag_weights + rs) / buckets))
    if not dp_overlap:  # the gradient sync waits for the whole backward (no buckets)
        exposed_sync = np.where(zero == 0, ar, rs + ag_update)
    dp_time = np.where(dp_all > 1, np.where(zero >= 3, zero3, exposed_sync), 0.0)

    opt_shard = np.where(zero >= 1, dp_all, 1.0)
    step_bytes = ADAM_STEP_BYTES + (FP16_UNSCALE_BYTES if bf == "fp16" else 0.0)
    optimizer = step_bytes * trainable_local / opt_shard / c.bandwidth

    step = busy + bubble + pp_comm + dp_time + optimizer

    # -- memory on the heaviest stage -----------------------------------------------------
    # ZeRO 3 gathers one layer while the next is prefetched: two unsharded layers resident
    layer_weights = w_bytes * (dense_local + expert_local)
    weights = np.where(zero >= 3, weight_bytes / dp_all + 2 * layer_weights, weight_bytes)
    grads = BF16 * trainable_local / np.where(zero >= 2, dp_all, 1.0)
    optim = ADAM_STATE * trainable_local / opt_shard
    per_token = _activation_bytes_per_token(arch, tp, capacity_factor, moe_frac, shared,
                                            dropout)
    if not flash:  # Korthikanti's 5 a s / h term: softmax output, dropout mask and output
        per_token = per_token + np.where(selective, 0.0,
                                         (2.0 + 3.0 * dropout) * seq * a / tp)
    per_token = np.where(full, 2.0 * h / shared, per_token)
    interleave = np.where(vpp > 1, 1 + (pp - 1) / (pp * vpp), 1.0)
    in_flight = np.where(pp > 1, np.minimum(micro, pp) * interleave, 1.0)
    working = np.where(full, T * _activation_bytes_per_token(arch, tp, capacity_factor,
                                                             moe_frac, shared, dropout), 0.0)
    activations = stage_layers * T * per_token * in_flight + working
    logits = T * V / tp * (4.0 + BF16)
    activations = activations + np.where(pp > 1, 0.0, logits)
    last = np.where(pp > 1, logits, 0.0)
    reserve_bytes = reserve * c.capacity
    total = weights + grads + optim + activations + last + reserve_bytes

    # -- FLOPs --------------------------------------------------------------------------
    devices = tp * pp * dp * cp
    tokens = gb * seq
    fwd_layer_flops = f_layer + f_core
    matmul_params = arch.active_params - (0.0 if arch.tied else arch.embedding_params)
    attn_fwd_token = 2.0 * keys * a * (arch.qk_dim + arch.v_dim) * L
    model_flops = tokens * np.where(trainable_base, 6.0 * matmul_params + 3 * attn_fwd_token,
                                    4.0 * matmul_params + 3 * attn_fwd_token
                                    + 6 * L * adapter_per_layer)
    hw_layer = (fwd_layer_flops * np.where(trainable_base, 3.0, 2.0)
                + ((FLASH_BACKWARD - 2.0) * f_core if flash else 0.0)
                + np.where(full, fwd_layer_flops, 0.0)
                + np.where(selective & (not flash), f_core, 0.0))
    hardware_flops = (hw_layer * L + 3 * f_head) * micro * tp * cp * dp
    return {
        "step": step, "compute": compute, "tp": micro * t_tp, "cp": micro * t_cp,
        "ep": micro * t_ep, "pp": pp_comm, "dp": dp_time, "bubble": bubble,
        "optimizer": optimizer, "tokens": tokens, "devices": devices,
        "model_flops": model_flops, "hardware_flops": hardware_flops,
        "weights": weights, "gradients": grads, "optimizer_state": optim,
        "activations": activations + last, "reserve": reserve_bytes, "memory": total,
        "micro_batches": micro, "inner": inner, "stride": stride,
        "bubble_fraction": (pp - 1) / (vpp * micro),
    }


def _activation_bytes_per_token(arch, tp, cf, moe_frac, shared=None, dropout=False):
    """Bytes one layer stores per token for its backward, FlashAttention and sequence
    parallelism (Korthikanti et al. 2022 eq. 2 without the 5 a s / h term, generalised to
    GQA, gated MLPs and experts): the inputs of every GEMM, the norms' inputs, Q, K, V and
    the flash output with its log-sum-exp."""
    h, a = float(arch.hidden), float(arch.heads)
    shared = tp if shared is None else shared
    masks = 1.0 * h * dropout / shared  # a 1-byte dropout mask after attention and the MLP
    attn = (2 * h + 2 * h) / shared + masks \
        + (2 * sum(g.n for g in arch.attention[:-1])  # projections' outputs (Q, K, V...)
           + 2 * a * arch.v_dim + 4 * a) / tp  # flash output (o-proj input), log-sum-exp
    f = arch.ffn_dim
    dense = (2 * h + 2 * h) / shared + masks + (6 if arch.gated else 4) * f / tp
    moe = 0.0
    if arch.experts:
        fe = arch.expert[-1].k
        moe = (2 * h + 2 * h) / shared + arch.top_k * cf * (2 * h + (6 if arch.gated else 4) * fe) \
            / tp
        if arch.shared:
            moe += (6 if arch.gated else 4) * arch.shared[-1].k / tp
    return attn + (1 - moe_frac) * dense + moe_frac * moe

