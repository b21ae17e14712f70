"""The work of one forward step of a transformer, kernel by kernel, on one of ``tp`` devices.

A step over ``rows`` tokens lowers to kernels, each repeated ``count`` times (once per layer
that has it). Per instance a kernel has FLOPs and bytes of memory traffic; context-dependent
terms (attention) are numpy arrays over the steps of a request, so a whole output is costed
at once. Dense layer (Llama, Mistral, Qwen) with ``H`` heads, ``G`` KV heads, head size ``d``,
hidden ``h``, FFN width ``f``, tensor parallelism ``n`` (``H/n`` heads and ``max(G/n, 1)`` KV
heads per device):

    qkv      matmul  rows x (H/n + 2 G/n) d x h
    attn     decode: reads the KV of ``context`` tokens, 2 (G/n) d kv_bytes each, and does
             4 context (H/n) d FLOPs per row; prefill of T tokens (causal): 4 d (H/n) T (T+1)/2
    o_proj   matmul  rows x h x (H/n) d
    gate_up  matmul  rows x 2f/n x h          (f/n without a gate)
    down     matmul  rows x h x f/n
    2 all-reduces of rows x h activations when n > 1

MoE layers replace gate_up/down by routed experts: ``rows`` tokens sent to ``k`` of ``E``
experts touch ``E (1 - (1 - k/E)^rows)`` distinct experts, whose weights are read once;
FLOPs follow the ``rows * k`` routed tokens. Norms, rotary, the activation and residual
adds are memory-bound elementwise kernels. The LM head runs on the last token of each
sequence. Supported templates: ``dense`` and ``moe``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from ..errors import RoofkitError

TEMPLATES = ("dense", "moe")


@attrs.frozen
class Kernel:
    """One kernel of a step: ``count`` instances, each of ``flops`` and ``bytes``.

    ``kind`` is ``matmul`` (weights, timed at the weight precision's slot, with the GEMM-size
    efficiency read at ``gemm_flops``), ``attention``, ``memory`` (elementwise) or
    ``allreduce`` (``message`` bytes over the tensor-parallel group).
    """

    name: str
    kind: str
    count: int
    flops: object = 0.0
    bytes: object = 0.0
    gemm_flops: object = 0.0
    message: float = 0.0


@attrs.frozen
class Formats:
    """Element sizes in bytes: weights, the 16-bit tensors around them (embedding, head,
    activations), the KV cache, and routed experts (``expert``: the weights' unless a
    checkpoint ships its experts in another format, such as gpt-oss in MXFP4)."""

    weight: float
    activation: float = 2.0
    kv: float = 2.0
    head: float = 2.0
    expert: float | None = None

    @property
    def experts(self) -> float:
        return self.weight if self.expert is None else self.expert


@attrs.frozen
class Shape:
    """The dims of a template workload that the serving estimator reads."""

    template: str
    layers: int
    hidden: float
    heads: float
    kv_heads: float
    head_dim: float
    ffn: float
    vocab: float
    gated: bool = True
    tied: bool = False
    sliding_window: float = 0.0
    sliding_every: int = 0
    qkv_bias: bool = False
    experts: float = 0.0
    top_k: float = 0.0
    expert_ffn: float = 0.0
    shared_experts: float = 0.0
    shared_ffn: float = 0.0
    dense_layers: int = 0
    moe_every: int = 1

    @classmethod
    def of(cls, workload) -> Shape:
        """The shape of a catalogue workload; a RoofkitError for templates not served."""
        if workload.template not in TEMPLATES:
            what = workload.template or "a generic (non-template) workload"
            raise RoofkitError(
                f"serving estimates cover the {', '.join(TEMPLATES)} transformer templates; "
                f"{workload.name} is {what}")
        d = workload.dims
        g = d.get
        return cls(
            template=workload.template, layers=int(d["layers"]), hidden=d["hidden"],
            heads=d["heads"], kv_heads=g("kv_heads", d["heads"]),
            head_dim=g("head_dim", d["hidden"] / d["heads"]), ffn=g("ffn", 4 * d["hidden"]),
            vocab=d["vocab"], gated=bool(g("gated_ffn", 1)), tied=bool(g("tie_embeddings", 0)),
            sliding_window=g("sliding_window", 0.0), sliding_every=int(g("sliding_every", 0)),
            qkv_bias=bool(g("qkv_bias", 0)), experts=g("experts", 0.0), top_k=g("top_k", 0.0),
            expert_ffn=g("expert_ffn", g("ffn", 0.0)), shared_experts=g("shared_experts", 0.0),
            shared_ffn=g("shared_ffn", 0.0), dense_layers=int(g("dense_layers", 0)),
            moe_every=max(1, int(g("moe_every", 1))))

    # -- layer pattern --------------------------------------------------------------------
    @property
    def moe_layers(self) -> int:
        """Layers with routed experts: every ``moe_every``-th after ``dense_layers``."""
        if self.template != "moe" or self.experts <= 0:
            return 0
        return math.ceil(max(0, self.layers - self.dense_layers) / self.moe_every)

    @property
    def dense_ffn_layers(self) -> int:
        return self.layers - self.moe_layers

    @property
    def windowed_layers(self) -> int:
        """Layers whose attention sees at most ``sliding_window`` tokens."""
        if self.sliding_window <= 0 or self.sliding_every <= 0:
            return 0
        return math.ceil(self.layers / self.sliding_every)

    # -- parameters -----------------------------------------------------------------------
    def layer_params(self) -> dict[str, float]:
        """Weights per layer kind: attention, dense FFN, one routed expert, router, shared."""
        h, d = self.hidden, self.head_dim
        ffn_mats = 3 if self.gated else 2
        attn = h * (self.heads + 2 * self.kv_heads) * d + self.heads * d * h
        return {
            "attention": attn + 2 * h,  # + the two norms
            "ffn": ffn_mats * h * self.ffn,
            "expert": ffn_mats * h * self.expert_ffn,
            "router": h * self.experts,
            "shared": self.shared_experts * ffn_mats * h * self.shared_ffn,
        }

    def weight_bytes(self, fmt: Formats, tp: int = 1) -> float:
        """Weight bytes held by one of ``tp`` devices: layers at ``fmt.weight`` (the router in
        16 bit), embedding and head at ``fmt.head``; everything sharded ``tp`` ways."""
        p = self.layer_params()
        layers = self.layers * p["attention"] + self.dense_ffn_layers * p["ffn"]
        layers += self.moe_layers * p["shared"]
        experts = self.moe_layers * self.experts * p["expert"]
        router = self.moe_layers * p["router"]
        embed = self.vocab * self.hidden * (1 if self.tied else 2)
        return (layers * fmt.weight + experts * fmt.experts + (router + embed) * fmt.head) / tp

    def params(self) -> float:
        p = self.layer_params()
        total = self.layers * p["attention"] + self.dense_ffn_layers * p["ffn"]
        total += self.moe_layers * (self.experts * p["expert"] + p["shared"] + p["router"])
        return total + self.vocab * self.hidden * (1 if self.tied else 2)

    def kv_bytes_per_token(self, fmt: Formats, tp: int = 1) -> float:
        """KV cache bytes per token of one sequence on one device: 2 G' d kv_bytes per layer,
        with G' = max(G / tp, 1) (KV heads are replicated when fewer than devices)."""
        return 2.0 * self.layers * self.kv_shard(tp) * self.head_dim * fmt.kv

    def kv_shard(self, tp: int) -> float:
        return max(self.kv_heads / tp, 1.0)

    def check_tp(self, tp: int) -> None:
        if tp < 1:
            raise RoofkitError(f"tp must be at least 1, got {tp}")
        if tp > 1 and self.heads % tp:
            raise RoofkitError(f"{int(self.heads)} attention heads do not split over tp={tp}")


def _matmul(name: str, count: int, m, n: float, k: float, fmt: Formats, *, weight_bytes=None,
            gemms: float = 1.0) -> Kernel:
    """``count`` GEMMs [m x k] x [k x n]: 2mnk FLOPs; bytes = weights + input + output."""
    flops = 2.0 * m * n * k
    weights = n * k * fmt.weight if weight_bytes is None else weight_bytes
    traffic = weights + m * (k + n) * fmt.activation
    return Kernel(name, "matmul", count, flops, traffic, flops / max(gemms, 1.0))


def _memory(name: str, count: int, nbytes) -> Kernel:
    return Kernel(name, "memory", count, 0.0, nbytes)


def layer_kernels(s: Shape, fmt: Formats, tp: int, rows, *, context=None, prompt=None,
                  seqs=1) -> list[Kernel]:
    """Kernels of every layer for one step over ``rows`` tokens.

    Decode: ``rows = seqs`` (one token per sequence), each attending to ``context`` tokens
    (a number or an array over steps). Prefill: ``prompt`` tokens per sequence, ``rows =
    seqs * prompt``, causal attention.
    """
    h, d, a = s.hidden, s.head_dim, fmt.activation
    L = s.layers
    heads, kvs = s.heads / tp, s.kv_shard(tp)
    qkv_n = (heads + 2 * kvs) * d
    out: list[Kernel] = [
        _memory("attn_norm", L, 2.0 * rows * h * a),
        _matmul("qkv", L, rows, qkv_n, h, fmt),
        _memory("rope_kv_write", L, rows * qkv_n * a * 2 + rows * 2 * kvs * d * fmt.kv),
    ]
    windowed = s.windowed_layers
    spans = [("attention", L - windowed, None), ("attention_window", windowed, s.sliding_window)]
    for name, count, window in spans:
        if count == 0:
            continue
        io = rows * (2 * heads * d) * a  # q in, o out
        if prompt is None:
            ctx = context if window is None else np.minimum(context, window)
            flops = seqs * 4.0 * ctx * heads * d
            nbytes = seqs * ctx * 2 * kvs * d * fmt.kv + io
        else:
            t = float(prompt)
            pairs = t * (t + 1) / 2 if window is None else _windowed_pairs(t, window)
            flops = seqs * 4.0 * d * heads * pairs
            nbytes = seqs * t * 2 * kvs * d * fmt.kv + io
        out.append(Kernel(name, "attention", count, flops, nbytes))
    out.append(_matmul("o_proj", L, rows, h, heads * d, fmt))
    if tp > 1:
        out.append(Kernel("allreduce_attn", "allreduce", L, message=rows * h * a))
    out.append(_memory("ffn_norm", L, 3.0 * rows * h * a))
    up_n = (2 if s.gated else 1)
    if s.dense_ffn_layers:
        n = s.dense_ffn_layers
        out += [
            _matmul("gate_up", n, rows, up_n * s.ffn / tp, h, fmt),
            _memory("act", n, rows * (up_n + 1) * s.ffn / tp * a),
            _matmul("down", n, rows, h, s.ffn / tp, fmt),
        ]
    if s.moe_layers:
        n, E, k, f = s.moe_layers, s.experts, s.top_k, s.expert_ffn / tp
        routed = rows * k
        touched = E * (1.0 - (1.0 - k / E) ** rows)
        out += [
            _matmul("router", n, rows, E, h, Formats(fmt.head, a, fmt.kv, fmt.head)),
            _matmul("experts_gate_up", n, routed, up_n * f, h, fmt,
                    weight_bytes=touched * up_n * f * h * fmt.experts, gemms=touched),
            _memory("experts_act", n, routed * (up_n + 1) * f * a),
            _matmul("experts_down", n, routed, h, f, fmt,
                    weight_bytes=touched * h * f * fmt.experts, gemms=touched),
        ]
        if s.shared_experts and s.shared_ffn:
            sf = s.shared_experts * s.shared_ffn / tp
            out += [_matmul("shared_gate_up", n, rows, up_n * sf, h, fmt),
                    _matmul("shared_down", n, rows, h, sf, fmt)]
    if tp > 1:
        out.append(Kernel("allreduce_ffn", "allreduce", L, message=rows * h * a))
    return out


def _windowed_pairs(t: float, w: float) -> float:
    """Query-key pairs of causal attention over ``t`` tokens with a window of ``w``."""
    if t <= w:
        return t * (t + 1) / 2
    return w * (w + 1) / 2 + (t - w) * w


def step_kernels(s: Shape, fmt: Formats, tp: int, seqs: int, *, context=None,
                 prompt=None) -> list[Kernel]:
    """Every kernel of one decode step (``context`` given) or one prefill (``prompt``)."""
    rows = seqs if prompt is None else seqs * prompt
    h, a = s.hidden, fmt.activation
    head = Formats(fmt.head, a, fmt.kv, fmt.head)
    out = [_memory("embed", 1, rows * h * (a + fmt.head))]
    out += layer_kernels(s, fmt, tp, rows, context=context, prompt=prompt, seqs=seqs)
    out += [_memory("final_norm", 1, 2.0 * seqs * h * a),
            _matmul("lm_head", 1, seqs, s.vocab / tp, h, head)]
    return out


def kernels_per_layer(kernels: list[Kernel], layers: int) -> float:
    """Kernel launches per layer (all instances over all layers, divided by layers)."""
    return sum(k.count for k in kernels) / max(layers, 1)
