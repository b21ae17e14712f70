"""Memory-bound traffic of one transformer layer, bytes per token, forward and backward,
by the kernels the training stack runs (costed at the memory bandwidth by the step).

``fused`` (Megatron-LM, NeMo): one kernel per fused op, the bf16 tensor read and written
once. Per token, in elements of ``h`` sharded ``shared`` ways by sequence parallelism: two
norms (read, write: ``4 h``), two residual adds (``6 h``), dropout where the recipe has it
(``10 h``); the MLP activation (``3 f`` gated, ``2 f`` otherwise, ``f`` the local FFN
width) and RoPE on Q and K (``2 (a + kv) d / tp``); backward twice the forward.

``eager`` (Hugging Face Transformers modelling code run op by op in PyTorch eager mode, as
in ``modeling_qwen.py`` / ``modeling_llama.py``): every PyTorch op is its own kernel reading
and writing its whole tensor. Bytes per element, forward / backward (autograd of the same
ops; fp32 = 4 B, bf16 = 2 B):

* RMSNorm in fp32, ``(x.float() * rsqrt(x.float().pow(2).mean(-1) + eps)).type_as(x) * w``:
  cast 6, pow 8, mean 4, scale 8, cast back 6, weight 4 = **36**; backward: weight 4,
  cast 6, scale 8, the row reduction of ``g * x`` 16, mean 4, pow 12, the two branches
  summed 12, cast 6 = **68**; two per layer.
* rotary on Q and K (``apply_rotary_pos_emb`` in fp32): cast 6, ``* cos`` 8,
  ``rotate_half`` (negate half, concatenate) 12, ``* sin`` 8, add 12, concatenate 8, cast
  back 6 = **60** per element of Q and K; backward: cast 6, ``* sin`` 8, negate 4,
  ``* cos`` 8, the two branches summed 12, cast 6 = **44**.
* residual add: read 2 + 2, write 2 = **6** per add forward; backward, the residual's
  gradient summed with the branch's = **6**.
* SwiGLU ``act(gate) * up``: activation 4, product 6 = **10** per element of ``f``;
  backward: two products 12, activation gradient 6 = **18**. GeLU: **4** / **6**.

LoRA adapters as PEFT runs them, per adapted linear ``(k in, n out)``:
``result += lora_B(lora_A(dropout(x))) * scaling``: dropout of the input 5 (read 2, write
2, a 1-byte mask) per ``k``, scaling 4 and the in-place add 6 per ``n``; backward: scaling
4 per ``n``, the dropout's gradient 5 and the sum of the adapter's and the frozen weight's
input gradients 6 per ``k``.
"""

from __future__ import annotations

import numpy as np

FUSED, EAGER = "fused", "eager"
KERNELS = (FUSED, EAGER)
BF16 = 2.0

#: eager PyTorch op chains, bytes per element (see the module docstring)
EAGER_NORM = (36.0, 68.0)
EAGER_ROPE = (60.0, 44.0)
EAGER_RESIDUAL = (6.0, 6.0)
EAGER_GATED = (10.0, 18.0)
EAGER_GELU = (4.0, 6.0)
#: PEFT LoRA per adapted linear: (per k, per n) forward and backward
LORA_DROPOUT_FWD = 5.0
LORA_FWD_N = 10.0  # scaling 4 + in-place add 6
LORA_BWD_N = 4.0
LORA_DROPOUT_BWD = 5.0
LORA_GRAD_SUM = 6.0


def layer_bytes(arch, tp, shared, kernels: str, dropout: bool, moe_frac: float,
                capacity_factor: float):
    """(forward, backward) bytes per token of one layer's elementwise ops; arrays broadcast."""
    h = float(arch.hidden)
    f = arch.ffn_dim / tp
    rope = (arch.heads + arch.kv_heads) * arch.qk_dim / tp
    moe = moe_frac * 4 * arch.top_k * capacity_factor * h * BF16 if arch.experts else 0.0
    drop = dropout * 10 * h / shared * BF16
    if kernels == FUSED:
        fwd = BF16 * ((4 * h + 6 * h) / shared + (3 if arch.gated else 2) * f + 2 * rope) \
            + drop + moe
        return fwd, 2 * fwd
    act = EAGER_GATED if arch.gated else EAGER_GELU
    fwd = 2 * (EAGER_NORM[0] + EAGER_RESIDUAL[0]) * h / shared + EAGER_ROPE[0] * rope \
        + act[0] * f + drop + moe
    bwd = 2 * (EAGER_NORM[1] + EAGER_RESIDUAL[1]) * h / shared + EAGER_ROPE[1] * rope \
        + act[1] * f + 2 * drop + 2 * moe
    return fwd, bwd


def lora_bytes(adapters, tp, lora_dropout: bool):
    """(forward, backward) bytes per token of the PEFT adapter ops on ``adapters`` (the
    adapted GEMMs, each ``(k, n)``), TP-sharded along each GEMM's split axis."""
    fwd = bwd = 0.0
    for g in adapters:
        k = g.k / (tp if g.split == "k" else 1.0)
        n = g.n / (tp if g.split == "n" else 1.0)
        fwd = fwd + LORA_DROPOUT_FWD * k * lora_dropout + LORA_FWD_N * n
        bwd = bwd + LORA_BWD_N * n + (LORA_DROPOUT_BWD * lora_dropout + LORA_GRAD_SUM) * k
    return np.asarray(fwd), np.asarray(bwd)
