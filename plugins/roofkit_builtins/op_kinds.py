"""Builtin op kinds: the node types circuit templates are written in.

``params`` are the node dims an op-cost rule (``specs/ops/<name>.toml``) may read;
``role`` says what the op touches: ``weight`` (reads a weight matrix), ``attention`` (the
KV cache), ``state`` (recurrent state), ``routing``, ``elementwise``.
"""

from roofkit import OpKind, hookimpl

OP_KINDS = (
    OpKind("embed", "weight", ("vocab", "hidden"), weight_bearing=True,
           description="table lookup: one hidden-wide row per token"),
    OpKind("rms_norm", "elementwise", ("width", "groups"), weight_bearing=True,
           description="RMSNorm over `width`, `groups` vectors per row (q/k norms per head)"),
    OpKind("layer_norm", "elementwise", ("width", "groups"), weight_bearing=True,
           description="LayerNorm (scale and bias) over `width`"),
    OpKind("linear", "weight", ("k", "n", "bias"), weight_bearing=True,
           description="dense projection k -> n, optional bias"),
    OpKind("activation", "elementwise", ("width", "gated"),
           description="SiLU/GELU on `width` outputs; gated multiplies by a second half"),
    OpKind("rotary", "elementwise", ("heads", "head_dim"),
           description="rotary position embedding on `heads` q and k heads"),
    OpKind("paged_attention", "attention",
           ("heads", "kv_heads", "head_dim", "window", "sinks", "causal"), weight_bearing=True,
           description="attention over a paged KV cache; window 0 = full; sinks = learned "
           "per-head sink logits (gpt-oss); causal 0 = bidirectional (encoders)"),
    OpKind("kv_write", "attention", ("kv_heads", "head_dim"),
           description="append this step's K and V to the cache"),
    OpKind("router", "routing", ("k", "experts", "bias"), weight_bearing=True,
           description="MoE router logits: hidden -> experts"),
    OpKind("topk", "routing", ("experts", "top_k"),
           description="softmax/sigmoid over experts and top-k selection"),
    OpKind("expert_gate_up", "weight", ("experts", "top_k", "k", "n", "bias"),
           weight_bearing=True,
           description="routed experts' gate+up projections; T tokens read "
           "E*(1-(1-k/E)^T) distinct experts"),
    OpKind("expert_down", "weight", ("experts", "top_k", "k", "n", "bias"), weight_bearing=True,
           description="routed experts' down projection"),
    OpKind("gdn_gates", "state", ("v_heads",), weight_bearing=True,
           description="GatedDeltaNet decay and beta gates (A_log, dt_bias per v head)"),
    OpKind("conv1d_update", "state", ("channels", "kernel", "bias"), weight_bearing=True,
           description="causal depthwise conv1d with a rolling (kernel-1) window per sequence"),
    OpKind("gdn_recurrence", "state", ("k_heads", "v_heads", "k_dim", "v_dim"),
           description="gated delta rule: a k_dim x v_dim state per v head per sequence"),
    OpKind("ssm_update", "state", ("heads", "head_dim", "state", "groups", "a_per_head",
                                   "dt_bias"), weight_bearing=True,
           description="selective-scan state update (Mamba, Mamba2): head_dim x state per head"),
    OpKind("mla_attention", "attention", ("heads", "kv_lora_rank", "qk_nope_head_dim",
                                          "qk_rope_head_dim", "v_head_dim"),
           weight_bearing=True,
           description="multi-head latent attention, absorbed: a (kv_lora_rank + rope) latent "
           "per token; kv_b is read as the absorbed up-projections"),
    OpKind("lm_head", "weight", ("vocab", "hidden", "tied"), weight_bearing=True,
           description="hidden -> vocab logits; tied = shares the embedding table"),
    OpKind("all_reduce", "communication", ("width", "devices"),
           description="ring all-reduce of a rows x width activation over `devices` "
           "tensor-parallel devices"),
)


@hookimpl
def roofkit_register_op_kinds():
    return OP_KINDS
