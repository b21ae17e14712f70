"""The transformer a training step shards: per-layer GEMMs, attention and parameters, read
from the workload's published dims (the same dims its circuit lowers from).

A layer is attention (GQA, or MLA where the workload has ``kv_lora_rank``) and an MLP
(dense, gated or not) or a mixture of experts (``experts``, ``top_k``, ``expert_ffn``,
shared experts; the first ``dense_layers`` stay dense). Each GEMM is ``(k, n, split)``:
``k`` inputs, ``n`` outputs, and ``split`` the tensor-parallel axis it is sharded along
(``"n"`` column-parallel, ``"k"`` row-parallel, ``""`` replicated).
"""

from __future__ import annotations

import attrs

from ..errors import SpecError

TEMPLATES = ("dense", "moe", "mla-moe")


@attrs.frozen
class Gemm:
    name: str
    k: float
    n: float
    split: str  # "n" | "k" | ""


@attrs.frozen
class Arch:
    """What a training step reads from a workload."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    qk_dim: float  # per-head query/key width
    v_dim: float  # per-head value width
    vocab: int
    attention: tuple[Gemm, ...]
    mlp: tuple[Gemm, ...]  # a dense layer's MLP
    experts: int = 0
    top_k: int = 0
    expert: tuple[Gemm, ...] = ()  # one routed expert
    shared: tuple[Gemm, ...] = ()  # the shared experts of a MoE layer
    router: float = 0.0  # router parameters per MoE layer
    moe_layers: int = 0
    gated: bool = True
    window: int = 0  # sliding-window width (0: full causal), on ``window_layers`` layers
    window_layers: int = 0
    dropout: bool = False
    tied: bool = False
    params: float = 0.0  # every stored parameter (from the circuit's statistics)
    active_params: float = 0.0
    embedding_params: float = 0.0

    @property
    def dense_layers(self) -> int:
        return self.layers - self.moe_layers

    def layer_params(self, gemms) -> float:
        return sum(g.k * g.n for g in gemms)

    @property
    def attention_params(self) -> float:
        return self.layer_params(self.attention)

    @property
    def expert_params(self) -> float:
        """Routed-expert parameters over every MoE layer."""
        return self.moe_layers * self.experts * self.layer_params(self.expert)

    @property
    def ffn_dim(self) -> float:
        """Intermediate width of the dense MLP (for activation accounting)."""
        return self.mlp[-1].k


def _mlp(prefix: str, hidden: float, ffn: float, gated: bool) -> tuple[Gemm, ...]:
    up = Gemm(f"{prefix}gate_up" if gated else f"{prefix}up", hidden,
              (2 if gated else 1) * ffn, "n")
    return (up, Gemm(f"{prefix}down", ffn, hidden, "k"))


def arch_of(workload, registry) -> Arch:
    """The :class:`Arch` of a template workload (dense, MoE or MLA-MoE transformers)."""
    from ..circuit.stats import workload_stats

    w = registry.workload(workload)
    if w.template not in TEMPLATES:
        raise SpecError(f"workload {w.name!r} (template {w.template!r}) cannot be trained "
                        f"here yet: the training step knows the {', '.join(TEMPLATES)} "
                        "transformer templates")
    key = ("fleet-arch", id(w))
    hit = registry._memo.get(key)
    if hit is not None and hit[0] is w:
        return hit[1]
    d = w.dims
    h, a, kv = int(d["hidden"]), int(d["heads"]), int(d.get("kv_heads", d["heads"]))
    gated = bool(d.get("gated_ffn", 1))
    if "kv_lora_rank" in d:  # multi-head latent attention (DeepSeek-V2/V3)
        qk = d["qk_nope_head_dim"] + d["qk_rope_head_dim"]
        v = d["v_head_dim"]
        ql, kl = d["q_lora_rank"], d["kv_lora_rank"]
        attention = (Gemm("q_a", h, ql, ""), Gemm("q_b", ql, a * qk, "n"),
                     Gemm("kv_a", h, kl + d["qk_rope_head_dim"], ""),
                     Gemm("kv_b", kl, a * (d["qk_nope_head_dim"] + v), "n"),
                     Gemm("o", a * v, h, "k"))
    else:
        qk = v = d.get("head_dim", h / a)
        attention = (Gemm("qkv", h, (a + 2 * kv) * qk, "n"), Gemm("o", a * qk, h, "k"))
    experts = int(d.get("experts", 0))
    moe_layers = 0
    expert, shared, router = (), (), 0.0
    if experts:
        every = int(d.get("moe_every", 1)) or 1
        eligible = int(d["layers"]) - int(d.get("dense_layers", 0))
        moe_layers = eligible // every
        expert = _mlp("expert_", h, d["expert_ffn"], gated)
        if d.get("shared_experts", 0) and d.get("shared_ffn", 0):
            shared = _mlp("shared_", h, d["shared_ffn"], gated)
        router = h * experts
    stats = workload_stats(w, registry)
    window_layers = 0
    if d.get("sliding_window", 0) and d.get("sliding_every", 0):
        window_layers = int(d["layers"]) // int(d["sliding_every"])
    arch = Arch(name=w.name, layers=int(d["layers"]), hidden=h, heads=a, kv_heads=kv,
                qk_dim=qk, v_dim=v, vocab=int(d["vocab"]), attention=attention,
                mlp=_mlp("", h, d["ffn"], gated), experts=experts,
                top_k=int(d.get("top_k", 0)), expert=expert, shared=shared, router=router,
                moe_layers=moe_layers, gated=gated, window=int(d.get("sliding_window", 0)),
                window_layers=window_layers, dropout=False,
                tied=bool(d.get("tie_embeddings", 0)), params=stats.params,
                active_params=stats.active_params, embedding_params=stats.embedding_params)
    registry._memo[key] = (w, arch)
    return arch
