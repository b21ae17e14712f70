"""Hugging Face ``config.json`` -> circuit-template dims, one mapper per ``model_type``.

Each mapper reads the config's own keys (as ``transformers``' ``*Config`` classes name them)
into the dims of one circuit template. A dim the config leaves out takes the default of the
model's ``*Config`` class, and says so in the provenance. Keys are refused, never guessed:

- an unknown ``model_type`` is an error listing the mapped ones;
- a key that changes the cost (:data:`COST_KEYS`) which the mapper did not read, or read
  at a value the template cannot express (``use_sliding_window`` with ``max_window_layers``,
  an irregular ``layer_types``), is an error naming the key;
- a key whose cost the template approximates (partial rotary, ALiBi-free details) is
  accepted with a sentence in the workload's notes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping

import attrs

from ..errors import Problem, SpecError

TRANSFORMERS = "https://github.com/huggingface/transformers/tree/main/src/transformers/models"

#: keys that change a model's parameters, FLOPs or bytes when set (not null/false/0/[]):
#: a mapper must read each one it meets, or the import fails naming it
COST_KEYS = frozenset({
    "num_hidden_layers", "n_layer", "num_layers", "hidden_size", "n_embd", "d_model",
    "intermediate_size", "n_inner", "ffn_hidden_size", "d_intermediate",
    "num_attention_heads", "n_head", "num_key_value_heads", "num_kv_heads", "n_head_kv",
    "multi_query", "head_dim", "vocab_size", "tie_word_embeddings", "tie_embeddings",
    "attention_bias", "mlp_bias", "bias", "use_bias", "use_conv_bias", "qkv_bias",
    "sliding_window", "use_sliding_window", "layer_types", "max_window_layers",
    "num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
    "num_experts_per_tok", "experts_per_token", "n_shared_experts",
    "shared_expert_intermediate_size", "first_k_dense_replace", "moe_layer_freq",
    "decoder_sparse_step", "mlp_only_layers", "q_lora_rank", "kv_lora_rank",
    "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_nextn_predict_layers",
    "full_attention_interval", "linear_num_key_heads", "linear_num_value_heads",
    "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
    "state_size", "expand", "conv_kernel", "time_step_rank", "n_groups", "num_heads",
    "ssm_cfg", "attn_layer_idx", "new_decoder_architecture", "parallel_attn", "alibi",
    "position_embedding_type", "type_vocab_size", "rotary_dim", "partial_rotary_factor",
    "rotary_pct", "text_config", "vision_config", "audio_config", "cross_attention_layers",
    "pad_vocab_size_multiple", "topk_method",
})


def _set(value) -> bool:
    """Whether a config value is set: not null, false, zero or empty."""
    return value not in (None, False, 0, "", [], {})


@attrs.define
class Draft:
    """A workload table being built: its dims, provenance beyond ``dims = "config"``, notes."""

    template: str
    file: str = ""
    dims: dict = attrs.field(factory=dict)
    provenance: dict = attrs.field(factory=dict)
    notes: list = attrs.field(factory=list)
    sources: dict = attrs.field(factory=dict)  # beyond config and transformers

    def dim(self, key: str, value, why: str | None = None) -> None:
        """Set a dim; ``why`` (a provenance entry) when it is not read straight from a key."""
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise SpecError(Problem(self.file, None, (
                f"the value for dim {key!r} is {value!r}, not a finite number; check the "
                "config key it is read from")))
        v = float(value)
        self.dims[key] = int(v) if v.is_integer() else v
        if why:
            self.provenance[f"dims.{key}"] = why


class Reader:
    """The config of one model, read key by key; remembers what it read."""

    def __init__(self, config: Mapping, file: str, model_type: str):
        self.config = config
        self.file = file
        self.model_type = model_type
        self.read: set[str] = set()

    def has(self, key: str) -> bool:
        return key in self.config

    def get(self, key: str, default=None):
        self.read.add(key)
        v = self.config.get(key, default)
        return default if v is None else v

    def first(self, *keys: str, default=None):
        """The first of ``keys`` the config sets (aliases of one dim), else ``default``."""
        for k in keys:
            self.read.add(k)
        for k in keys:
            if self.config.get(k) is not None:
                return self.config[k]
        return default

    def need(self, *keys: str):
        """The first of ``keys`` the config sets; an error naming them when none is."""
        v = self.first(*keys)
        if v is None:
            raise self.error(keys[0], f"model_type {self.model_type!r} needs "
                             f"{' or '.join(map(repr, keys))}, which the config lacks")
        key = next(k for k in keys if self.config.get(k) is not None)
        v = self.number(key, v)
        if v <= 0:
            raise self.error(key, f"{key} = {json_text(v)} must be positive")
        return v

    def number(self, key: str, v):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise self.error(key, f"{key} = {v!r} is not a number")
        return v

    def table(self, key: str) -> Mapping:
        """A sub-table of the config (``ssm_cfg``), empty when absent."""
        v = self.get(key, {})
        if not isinstance(v, Mapping):
            raise self.error(key, f"{key} must be a JSON object, got {v!r}")
        return v

    def flag(self, key: str, default: bool) -> int:
        v = self.get(key, default)
        if not isinstance(v, bool | int):
            raise self.error(key, f"{key} = {v!r} is not true or false")
        return int(bool(v))

    def ignore(self, key: str) -> None:
        """Mark ``key`` as read (its effect is handled elsewhere or noted)."""
        self.read.add(key)

    def error(self, key: str | None, message: str) -> SpecError:
        return SpecError(Problem(self.file, key, message))

    def unread_cost_keys(self) -> list[str]:
        return sorted(k for k in COST_KEYS - self.read if _set(self.config.get(k)))


def _default_why(r: Reader, key: str, value, cls: str) -> str:
    return (f"transformers: config omits {key}; {cls} defaults it to "
            f"{json_text(value)}")


def json_text(v) -> str:
    return {True: "true", False: "false", None: "null"}.get(v, str(v)) if not isinstance(
        v, int | float) or isinstance(v, bool) else f"{v:g}"


# ---------------------------------------------------------------- shared pieces
def _heads(r: Reader, d: Draft, *, layers=("num_hidden_layers",), hidden=("hidden_size",),
           heads=("num_attention_heads",), kv=("num_key_value_heads",),
           vocab=("vocab_size",)) -> tuple[float, float]:
    d.dim("layers", r.need(*layers))
    hid = r.need(*hidden)
    d.dim("hidden", hid)
    h = r.need(*heads)
    d.dim("heads", h)
    kvh = r.first(*kv)
    if kvh is None:
        d.dim("kv_heads", h, f"derived: config omits {kv[0]}; multi-head attention, "
              f"kv_heads = {heads[0]} = {h:g}")
    else:
        kvh = r.need(*kv)
        if h % kvh:
            raise r.error(kv[0], f"{kv[0]} {kvh:g} does not divide {heads[0]} {h:g}: "
                          "each key/value head serves a whole group of query heads")
        d.dim("kv_heads", kvh)
    hd = r.get("head_dim")
    if hd is None:
        if hid % h:
            raise r.error(heads[0], f"{hidden[0]} {hid:g} is not a multiple of {heads[0]} "
                          f"{h:g} and the config gives no head_dim")
        d.dim("head_dim", hid // h, f"derived: {hidden[0]} / {heads[0]} = {hid:g} / {h:g}")
    else:
        d.dim("head_dim", r.need("head_dim"))
    d.dim("vocab", r.need(*vocab))
    return hid, h


def _tie(r: Reader, d: Draft, default: bool, cls: str, key: str = "tie_word_embeddings"):
    if r.has(key) and r.config[key] is not None:
        d.dim("tie_embeddings", r.flag(key, default))
    else:
        r.ignore(key)
        d.dim("tie_embeddings", int(default), _default_why(r, key, default, cls))


def _context(r: Reader, d: Draft, *keys: str) -> None:
    v = r.first(*keys)
    if v is not None:
        d.dim("max_context", r.number(keys[0], v))


def _ffn(r: Reader, d: Draft, key: str = "intermediate_size") -> None:
    d.dim("ffn", r.need(key))


def _dim_or(r: Reader, d: Draft, dim: str, key: str, fallback, why: str) -> None:
    """Dim ``dim`` read from ``key``; ``fallback``, with ``why``, when the config leaves it
    null or out."""
    v = r.get(key)
    if v is None:
        d.dim(dim, fallback, why)
    else:
        d.dim(dim, r.number(key, v))


def _mha_shape(r: Reader, d: Draft, *, layers: tuple[str, ...], heads: tuple[str, ...],
               cite: str = "") -> tuple[float, float]:
    """layers, hidden, heads and head_dim = hidden_size / heads (configs without a
    head_dim key); ``cite`` names where the division is written."""
    d.dim("layers", r.need(*layers))
    hid = r.need("hidden_size")
    d.dim("hidden", hid)
    h = r.need(*heads)
    d.dim("heads", h)
    if hid % h:
        raise r.error("hidden_size", f"hidden_size {hid:g} is not a multiple of "
                      f"num_attention_heads {h:g}, so the heads cannot split it; check both")
    d.dim("head_dim", hid // h, f"derived: hidden_size / num_attention_heads = {hid:g} / "
          f"{h:g}" + (f" ({cite})" if cite else ""))
    return hid, h


def _sliding_all(r: Reader, d: Draft) -> None:
    """``sliding_window`` on every layer (Mistral, Mixtral, Phi-3), or none when null."""
    w = r.get("sliding_window")
    if _set(w):
        d.dim("sliding_window", r.number("sliding_window", w))
        d.dim("sliding_every", 1, f"transformers: {r.model_type} applies sliding_window "
              "to every layer")


def _qwen_window(r: Reader, d: Draft) -> None:
    """Qwen2/Qwen3: ``sliding_window`` only counts with ``use_sliding_window``, and then on
    the layers from ``max_window_layers`` on, which no template pattern expresses."""
    r.ignore("sliding_window")
    r.ignore("max_window_layers")
    if r.flag("use_sliding_window", False):
        raise r.error("use_sliding_window", (
            "use_sliding_window = true windows only the layers from max_window_layers on; "
            "the dense template alternates local layers by `sliding_every` and cannot express "
            "that; write the workload by hand (docs/workloads.md)"))


def _layer_types(r: Reader, d: Draft) -> None:
    """``layer_types`` (Gemma-2, gpt-oss): local at layer i when i % p == 0, for one p."""
    types = r.get("layer_types")
    if types is None:
        return
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise r.error("layer_types", "layer_types must be a list of strings")
    local = [i for i, t in enumerate(types) if t == "sliding_attention"]
    other = {t for t in types if t not in ("sliding_attention", "full_attention")}
    if other:
        raise r.error("layer_types", f"layer type(s) {', '.join(sorted(other))} are not "
                      "mapped (only sliding_attention and full_attention)")
    if not local:
        d.dim("sliding_window", 0, "config: layer_types are all full_attention")
        d.dim("sliding_every", 0, "config: layer_types are all full_attention")
        return
    p = local[1] - local[0] if len(local) > 1 else len(types)
    if local != list(range(0, len(types), p)):
        raise r.error("layer_types", (
            "the dense template makes layer i local when i % sliding_every == 0; these "
            f"layer_types put sliding_attention on layers {local[:8]}..., which no "
            "sliding_every expresses; write the workload by hand (docs/workloads.md)"))
    w = r.get("sliding_window")
    if not _set(w):
        raise r.error("sliding_window", "layer_types names sliding_attention layers but "
                      "sliding_window is not set")
    d.dim("sliding_window", r.number("sliding_window", w))
    d.dim("sliding_every", p, f"config: layer_types put sliding_attention on every {p} "
          "layer(s) from layer 0")


def _rotary_fraction(r: Reader, d: Draft, key: str, full: float = 1.0) -> None:
    v = r.get(key)
    if v is not None and v != full:
        d.notes.append(f"{key} = {json_text(v)}: rotary is costed over the whole head_dim "
                       "(an elementwise op, well under 1% of a step)")


# ---------------------------------------------------------------- dense decoders
def _llama_like(r: Reader, d: Draft, cls: str, *, tie: bool = False,
                qkv_bias: bool | None = None) -> None:
    _heads(r, d)
    _ffn(r, d)
    _tie(r, d, tie, cls)
    _context(r, d, "max_position_embeddings")
    if qkv_bias is None:
        bias = r.flag("attention_bias", False)
        if bias:  # q, k, v and o all biased (LlamaAttention, Qwen3Attention)
            d.dim("qkv_bias", 1)
            d.dim("o_bias", 1, "config: attention_bias applies to q, k, v and o_proj")
    elif qkv_bias:
        d.dim("qkv_bias", 1, f"transformers: {cls.replace('Config', 'Attention')} biases "
              "q, k and v (not o)")
    if r.flag("mlp_bias", False):
        d.dim("mlp_bias", 1)
    r.ignore("pretraining_tp")
    _rotary_fraction(r, d, "partial_rotary_factor")


def _gated_act(r: Reader, key: str = "hidden_act") -> None:
    act = r.get(key)
    if act is not None and not isinstance(act, str):
        raise r.error(key, f"{key} = {act!r} is not an activation name")


def map_llama(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "LlamaConfig")
    _gated_act(r)
    _sliding_all(r, d)


def map_mistral(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "MistralConfig")
    _sliding_all(r, d)


def map_qwen2(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Qwen2Config", qkv_bias=True)
    _qwen_window(r, d)


def map_qwen3(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Qwen3Config")
    _qwen_window(r, d)
    d.dim("qk_norm", 1, "transformers: Qwen3Attention applies q_norm and k_norm (RMSNorm "
          "per head)")


def map_gemma(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "GemmaConfig", tie=True)
    r.ignore("hidden_activation")


def map_gemma2(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Gemma2Config", tie=True)
    r.ignore("hidden_activation")
    d.dim("sandwich_norm", 1, "transformers: Gemma2DecoderLayer normalizes before and after "
          "attention and the MLP")
    if r.has("layer_types"):
        _layer_types(r, d)
    else:
        w = r.get("sliding_window", 4096)
        d.dim("sliding_window", r.number("sliding_window", w),
              None if r.has("sliding_window") else _default_why(r, "sliding_window", 4096,
                                                                "Gemma2Config"))
        d.dim("sliding_every", 2, "transformers: Gemma2 layer i is sliding when i % 2 == 0")
    for k in ("attn_logit_softcapping", "final_logit_softcapping"):
        if _set(r.get(k)):
            d.notes.append(f"{k} = {json_text(r.config[k])}: the tanh soft-cap is not costed "
                           "(elementwise on the scores or logits)")


def map_phi3(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Phi3Config")
    _sliding_all(r, d)


def map_gpt2(r: Reader, d: Draft) -> None:
    hid, _ = _heads(r, d, layers=("n_layer", "num_hidden_layers"), hidden=("n_embd",),
                    heads=("n_head",), kv=("n_head_kv",))
    _dim_or(r, d, "ffn", "n_inner", 4 * hid, "derived: n_inner is null, which GPT2MLP reads "
            f"as 4 * n_embd = 4 * {hid:g}")
    _tie(r, d, True, "GPT2Config")
    _context(r, d, "n_positions", "n_ctx")
    r.ignore("n_ctx")
    why = "transformers: GPT2 uses Conv1D projections with biases, LayerNorm, a learned wpe table"
    for k, v in (("gated_ffn", 0), ("qkv_bias", 1), ("norm", 1), ("learned_pos", 1)):
        d.dim(k, v, why)


def map_gptj(r: Reader, d: Draft) -> None:
    hid, _ = _heads(r, d, layers=("n_layer",), hidden=("n_embd",), heads=("n_head",),
                    kv=("n_head_kv",))
    _dim_or(r, d, "ffn", "n_inner", 4 * hid, "derived: n_inner is null, which GPTJBlock reads "
            f"as 4 * n_embd = 4 * {hid:g}")
    _tie(r, d, False, "GPTJConfig")
    _context(r, d, "n_positions")
    why = ("transformers: GPTJ has unbiased q/k/v/out_proj, biased fc_in/fc_out, LayerNorm "
           "and rotary positions")
    for k, v in (("gated_ffn", 0), ("qkv_bias", 0), ("mlp_bias", 1), ("norm", 1)):
        d.dim(k, v, why)
    hd = d.dims["head_dim"]
    rd = r.get("rotary_dim")
    if rd is not None and rd != hd:
        d.notes.append(f"rotary_dim = {rd:g} of head_dim {hd:g}: rotary is costed over the "
                       "whole head_dim (an elementwise op, well under 1% of a step)")
    d.notes.append("GPT-J runs attention and the MLP in parallel off one ln_1; the template "
                   "counts a LayerNorm per sub-block (2 * n_embd parameters a layer more)")
    r.ignore("rotary")


def map_falcon(r: Reader, d: Draft) -> None:
    hid, h = _mha_shape(r, d, layers=("num_hidden_layers", "n_layer"),
                        heads=("num_attention_heads", "n_head"), cite="FalconConfig.head_dim")
    new = r.flag("new_decoder_architecture", False)
    if new:
        kv = r.first("num_kv_heads", "n_head_kv")
        d.dim("kv_heads", r.number("num_kv_heads", kv) if kv is not None else h)
    elif r.flag("multi_query", True):
        d.dim("kv_heads", 1, "transformers: multi_query (the FalconConfig default) shares "
              "one key/value head")
        r.ignore("num_kv_heads")
    else:
        d.dim("kv_heads", h, "config: multi_query false, new_decoder_architecture false")
        r.ignore("num_kv_heads")
    d.dim("vocab", r.need("vocab_size"))
    _dim_or(r, d, "ffn", "ffn_hidden_size", 4 * hid, "derived: ffn_hidden_size unset, "
            f"FalconConfig reads it as 4 * hidden_size = 4 * {hid:g}")
    _tie(r, d, True, "FalconConfig")
    _context(r, d, "max_position_embeddings")
    if r.flag("alibi", False):
        raise r.error("alibi", "ALiBi positions are not mapped: the dense template costs "
                      "rotary or learned positions; write the workload by hand")
    bias = r.flag("bias", False)
    why = "transformers: FalconMLP is dense_h_to_4h -> gelu -> dense_4h_to_h, LayerNorm"
    for k, v in (("gated_ffn", 0), ("norm", 1), ("qkv_bias", bias), ("mlp_bias", bias),
                 ("o_bias", bias)):
        d.dim(k, v, why if k in ("gated_ffn", "norm") else None)
    if r.flag("parallel_attn", True) and not new:
        d.notes.append("Falcon's parallel attention reads one input_layernorm; the template "
                       "counts a LayerNorm per sub-block (2 * hidden parameters a layer more)")


# ---------------------------------------------------------------- mixture of experts
def _experts(r: Reader, d: Draft, key: str = "num_experts",
             top_k: tuple[str, ...] = ("num_experts_per_tok",), same_ffn: str = "") -> float:
    """experts, top_k and expert_ffn: ``moe_intermediate_size``, or the dense ``ffn`` with
    ``same_ffn`` as its provenance when the experts are intermediate_size wide."""
    d.dim("experts", r.need(key))
    d.dim("top_k", r.need(*top_k))
    if same_ffn:
        d.dim("expert_ffn", d.dims["ffn"], same_ffn)
    else:
        d.dim("expert_ffn", r.need("moe_intermediate_size"))
    return d.dims["expert_ffn"]


def _shared_expert(r: Reader, d: Draft, why: str) -> bool:
    """One shared expert ``shared_expert_intermediate_size`` wide (Qwen MoE), when set."""
    shared = r.get("shared_expert_intermediate_size", 0)
    if shared:
        d.dim("shared_experts", 1, why)
        d.dim("shared_ffn", r.number("shared_expert_intermediate_size", shared))
    return bool(shared)


def _moe_layers(r: Reader, d: Draft, sparse_key: str = "decoder_sparse_step") -> None:
    step = r.get(sparse_key, 1)
    d.dim("moe_every", r.number(sparse_key, step))
    only = r.get("mlp_only_layers", [])
    if not isinstance(only, list) or not all(isinstance(i, int) for i in only):
        raise r.error("mlp_only_layers", f"mlp_only_layers must be a list of layer indices, "
                      f"got {only!r}")
    if only:
        if only != list(range(len(only))):
            raise r.error("mlp_only_layers", (
                f"mlp_only_layers {only} are not the first layers; the moe template keeps a "
                "dense FFN only on the first `dense_layers` layers"))
        d.dim("dense_layers", len(only), f"config: mlp_only_layers {only}")
    if step != 1 and only:
        raise r.error(sparse_key, f"{sparse_key} {step} with mlp_only_layers is not mapped")


def map_mixtral(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "MixtralConfig")
    _sliding_all(r, d)
    _experts(r, d, "num_local_experts",
             same_ffn="config: Mixtral experts are intermediate_size wide")


def map_qwen2_moe(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Qwen2MoeConfig", qkv_bias=True)
    _qwen_window(r, d)
    _experts(r, d)
    if _shared_expert(r, d, "transformers: Qwen2MoeSparseMoeBlock has one shared expert "
                      "shared_expert_intermediate_size wide, gated by shared_expert_gate"):
        d.dim("shared_expert_gate", 1, "transformers: shared_expert_gate Linear(hidden, 1)")
    _moe_layers(r, d)


def map_qwen3_moe(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Qwen3MoeConfig")
    _qwen_window(r, d)
    d.dim("qk_norm", 1, "transformers: Qwen3MoeAttention applies q_norm and k_norm")
    _experts(r, d)
    _moe_layers(r, d)


def map_gpt_oss(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "GptOssConfig")
    r.ignore("hidden_act")
    if r.has("layer_types"):
        _layer_types(r, d)
    else:
        _sliding_all(r, d)
    d.dim("attn_sinks", 1, "transformers: GptOssAttention holds a learned sink per head")
    d.dim("qkv_bias", r.flag("attention_bias", True))
    d.provenance.pop("dims.o_bias", None)
    d.dims.pop("o_bias", None)  # the template biases o with the sinks
    _experts(r, d, "num_local_experts", ("num_experts_per_tok", "experts_per_token"),
             same_ffn="config: gpt-oss experts are intermediate_size wide")
    for k in ("swiglu_limit", "initial_context_length"):
        r.ignore(k)


def map_deepseek(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "DeepseekV3Config" if r.model_type == "deepseek_v3"
                else "DeepseekV2Config")
    d.dims.pop("head_dim", None)
    d.provenance.pop("dims.head_dim", None)
    _dim_or(r, d, "q_lora_rank", "q_lora_rank", 0, "config: q_lora_rank null (q_proj maps "
            "hidden straight to the heads, no query compression)")
    for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        d.dim(k, r.need(k))
    moe = _experts(r, d, "n_routed_experts")
    shared = r.get("n_shared_experts", 0)
    if shared:
        d.dim("shared_experts", 1, f"config: n_shared_experts {shared:g} of "
              "moe_intermediate_size, costed as one shared FFN")
        d.dim("shared_ffn", shared * moe, f"derived: n_shared_experts x moe_intermediate_size "
              f"= {shared:g} x {moe:g}")
    d.dim("dense_layers", r.get("first_k_dense_replace", 0))
    d.dim("moe_every", r.get("moe_layer_freq", 1))
    d.dim("mtp_layers", r.get("num_nextn_predict_layers", 0))
    method = r.get("topk_method", "greedy")
    d.dim("router_bias", int(method == "noaux_tc"), f"config: topk_method {method!r} "
          "(noaux_tc keeps an e_score_correction_bias per expert)")


def map_qwen3_next(r: Reader, d: Draft) -> None:
    _llama_like(r, d, "Qwen3NextConfig")
    _qwen_window(r, d)
    d.dim("qk_norm", 1, "transformers: Qwen3NextAttention applies q_norm and k_norm")
    d.dim("full_attention_interval", r.need("full_attention_interval"))
    for key, dim in (("linear_num_key_heads", "lin_k_heads"),
                     ("linear_num_value_heads", "lin_v_heads"),
                     ("linear_key_head_dim", "lin_k_dim"),
                     ("linear_value_head_dim", "lin_v_dim"),
                     ("linear_conv_kernel_dim", "conv_kernel")):
        d.dim(dim, r.need(key))
    _experts(r, d)
    _shared_expert(r, d, "transformers: Qwen3NextSparseMoeBlock has one gated shared expert")
    _moe_layers(r, d)


# ---------------------------------------------------------------- state-space models
def _ssm_common(r: Reader, d: Draft, cls: str) -> float:
    d.dim("layers", r.need("num_hidden_layers", "n_layer"))
    hid = r.need("hidden_size", "d_model")
    d.dim("hidden", hid)
    d.dim("vocab", r.need("vocab_size"))
    _tie(r, d, True, cls, "tie_word_embeddings" if r.has("tie_word_embeddings")
         else "tie_embeddings")
    r.ignore("tie_embeddings")
    pad = r.get("pad_vocab_size_multiple")
    if pad:
        d.dim("vocab_pad_multiple", r.number("pad_vocab_size_multiple", pad))
    if r.flag("use_bias", False):
        raise r.error("use_bias", "biased in/out projections are not mapped (the template "
                      "has none)")
    if r.has("use_conv_bias") and not r.flag("use_conv_bias", True):
        raise r.error("use_conv_bias", "an unbiased conv1d is not mapped (the template "
                      "biases it)")
    if not r.flag("rms_norm", True):
        raise r.error("rms_norm", "LayerNorm Mamba blocks are not mapped (the template "
                      "uses RMSNorm)")
    for k in ("d_intermediate", "attn_layer_idx"):
        if _set(r.get(k)):
            raise r.error(k, f"{k} = {r.config[k]!r}: MLP or attention layers between the "
                          "Mamba blocks are not mapped; write the workload by hand")
    r.ignore("intermediate_size")  # expand * hidden_size, derived by the template
    return hid


MAMBA_SSM = "https://github.com/state-spaces/mamba/blob/main/mamba_ssm/modules"


def _ssm_dim(r: Reader, d: Draft, ssm: Mapping, dim: str, key: str, native: str, default,
             block: str) -> float:
    """Dim ``dim`` from the HF ``key``, else the native ``ssm_cfg.native``, else the
    ``mamba_ssm`` default of ``block``; a positive number."""
    v = r.get(key)
    why, shown = None, key
    if v is None:
        v, shown = ssm.get(native, default), f"ssm_cfg.{native}"
        why = f"mamba_ssm: {block} default {native} {default}"
    if r.number(shown, v) <= 0:
        raise r.error(shown, f"{shown} = {json_text(v)} must be positive")
    d.dim(dim, v, why)
    return v


def map_mamba(r: Reader, d: Draft) -> None:
    d.sources["mamba_ssm"] = f"{MAMBA_SSM}/mamba_simple.py"
    ssm = r.table("ssm_cfg")
    hid = _ssm_common(r, d, "MambaConfig")
    _ssm_dim(r, d, ssm, "ssm_state", "state_size", "d_state", 16, "Mamba")
    _ssm_dim(r, d, ssm, "expand", "expand", "expand", 2, "Mamba")
    _ssm_dim(r, d, ssm, "conv_kernel", "conv_kernel", "d_conv", 4, "Mamba")
    rank = r.get("time_step_rank", ssm.get("dt_rank", "auto"))
    if rank == "auto":
        d.dim("dt_rank", math.ceil(hid / 16), f"derived: time_step_rank 'auto' = "
              f"ceil(hidden_size / 16) = ceil({hid:g} / 16)")
    else:
        d.dim("dt_rank", r.number("time_step_rank", rank))


def map_mamba2(r: Reader, d: Draft) -> None:
    d.sources["mamba_ssm"] = f"{MAMBA_SSM}/mamba2.py"
    ssm = r.table("ssm_cfg")
    hid = _ssm_common(r, d, "Mamba2Config")
    expand = _ssm_dim(r, d, ssm, "expand", "expand", "expand", 2, "Mamba2")
    _ssm_dim(r, d, ssm, "ssm_state", "state_size", "d_state", 128, "Mamba2")
    _ssm_dim(r, d, ssm, "conv_kernel", "conv_kernel", "d_conv", 4, "Mamba2")
    hd = _ssm_dim(r, d, ssm, "mamba_head_dim", "head_dim", "headdim", 64, "Mamba2")
    _dim_or(r, d, "mamba_heads", "num_heads", expand * hid / hd, "derived: expand * d_model "
            f"/ headdim = {expand:g} * {hid:g} / {hd:g}")
    d.dim("n_groups", r.get("n_groups", ssm.get("ngroups", 1)))


# ---------------------------------------------------------------- encoders
def map_bert(r: Reader, d: Draft) -> None:
    _mha_shape(r, d, layers=("num_hidden_layers",), heads=("num_attention_heads",))
    d.dim("ffn", r.need("intermediate_size"))
    d.dim("vocab", r.need("vocab_size"))
    d.dim("max_context", r.need("max_position_embeddings"))
    d.dim("type_vocab", r.get("type_vocab_size", 2))
    pos = r.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise r.error("position_embedding_type", f"position_embedding_type {pos!r} is not "
                      "mapped (the encoder template has an absolute position table)")


@attrs.frozen
class Arch:
    """How one ``model_type`` maps onto a circuit template."""

    template: str
    build: Callable[[Reader, Draft], None]
    cls: str  # the transformers config class whose defaults fill what a config omits


ARCHITECTURES: dict[str, Arch] = {
    "llama": Arch("dense", map_llama, "LlamaConfig"),
    "mistral": Arch("dense", map_mistral, "MistralConfig"),
    "qwen2": Arch("dense", map_qwen2, "Qwen2Config"),
    "qwen3": Arch("dense", map_qwen3, "Qwen3Config"),
    "gemma": Arch("dense", map_gemma, "GemmaConfig"),
    "gemma2": Arch("dense", map_gemma2, "Gemma2Config"),
    "phi3": Arch("dense", map_phi3, "Phi3Config"),
    "falcon": Arch("dense", map_falcon, "FalconConfig"),
    "gpt2": Arch("dense", map_gpt2, "GPT2Config"),
    "gptj": Arch("dense", map_gptj, "GPTJConfig"),
    "mixtral": Arch("moe", map_mixtral, "MixtralConfig"),
    "qwen2_moe": Arch("moe", map_qwen2_moe, "Qwen2MoeConfig"),
    "qwen3_moe": Arch("moe", map_qwen3_moe, "Qwen3MoeConfig"),
    "gpt_oss": Arch("moe", map_gpt_oss, "GptOssConfig"),
    "deepseek_v2": Arch("mla-moe", map_deepseek, "DeepseekV2Config"),
    "deepseek_v3": Arch("mla-moe", map_deepseek, "DeepseekV3Config"),
    "qwen3_next": Arch("hybrid-gdn", map_qwen3_next, "Qwen3NextConfig"),
    "mamba": Arch("mamba", map_mamba, "MambaConfig"),
    "mamba2": Arch("mamba2", map_mamba2, "Mamba2Config"),
    "bert": Arch("encoder", map_bert, "BertConfig"),
}

#: older spellings of a model_type
MODEL_TYPE_ALIASES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}


def model_type_of(config: Mapping, file: str) -> str:
    """The config's ``model_type``; the native ``mamba_ssm`` configs (``d_model`` and
    ``ssm_cfg``, no model_type) are Mamba or Mamba2 by ``ssm_cfg.layer``."""
    if not isinstance(config, Mapping):
        raise SpecError(Problem(file, None, "a config must be a JSON object (a mapping)"))
    mt = config.get("model_type")
    if mt is None and "d_model" in config and "ssm_cfg" in config:
        ssm = config.get("ssm_cfg")
        layer = ssm.get("layer", "Mamba1") if isinstance(ssm, Mapping) else "Mamba1"
        return "mamba2" if layer == "Mamba2" else "mamba"
    if not isinstance(mt, str):
        raise SpecError(Problem(file, "model_type", "the config has no model_type; is this a "
                                "Hugging Face config.json?"))
    mt = MODEL_TYPE_ALIASES.get(mt, mt)
    if mt not in ARCHITECTURES:
        from ..errors import closest

        near = closest(mt, ARCHITECTURES)
        hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
        raise SpecError(Problem(file, "model_type", (
            f"model_type {mt!r} is not mapped to a circuit template; {hint}mapped: "
            f"{', '.join(sorted(ARCHITECTURES))}. Write the workload by hand "
            "(docs/workloads.md)")))
    return mt


#: the model classes (``architectures``) whose head the templates cost: a causal LM head
#: for decoders; the bare encoder (with its pooler) or its pre-training heads for BERT
_HEADS = ("ForCausalLM", "LMHeadModel")
_ENCODER_HEADS = ("BertModel", "BertForMaskedLM", "BertForPreTraining")


def _check_architectures(r: Reader, d: Draft) -> None:
    archs = r.config.get("architectures")
    if archs is None:
        return
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise r.error("architectures", "architectures must be a list of class names")
    ok = _ENCODER_HEADS if d.template == "encoder" else _HEADS
    bad = [a for a in archs if not (a in ok or a.endswith(ok))]
    if bad:
        raise r.error("architectures", (
            f"{bad[0]} has a head the {d.template!r} template does not cost (it has "
            f"{'a pooler' if d.template == 'encoder' else 'a vocabulary LM head'}); mapped "
            f"classes end in {', '.join(ok)}"))
    if any(a != "BertModel" for a in archs) and d.template == "encoder":
        d.notes.append(f"{archs[0]}'s pre-training head (a hidden x hidden transform and "
                       "LayerNorm before the tied decoder) is not costed; the pooler is")


def map_config(config: Mapping, file: str) -> Draft:
    """The dims, provenance and notes of ``config``; SpecError naming the key on refusal."""
    mt = model_type_of(config, file)
    arch = ARCHITECTURES[mt]
    r = Reader(config, file, mt)
    for k in ("model_type", "architectures", "torch_dtype", "dtype", "quantization_config",
              "_name_or_path", "ssm_cfg"):
        r.ignore(k)
    d = Draft(arch.template, file)
    arch.build(r, d)
    _check_architectures(r, d)
    unread = r.unread_cost_keys()
    if unread:
        k = unread[0]
        v = config[k]
        shown = json.dumps(v)[:60] if isinstance(v, list | dict | str) else json_text(v)
        raise r.error(k, (
            f"{k} = {shown} changes the cost, and model_type {mt!r} does not map it"
            + (f" (nor {', '.join(unread[1:])})" if len(unread) > 1 else "")
            + "; write the workload by hand (docs/workloads.md)"))
    return d
