"""Workload statistics derived from the lowered circuit, the single source of truth.

``params`` sums every stored parameter of the embed, main and head sections (a tied head
adds nothing; a draft/MTP section is reported apart, as publishers do). ``active_params``
counts routed experts at ``top_k``. ``flops_per_token`` is the forward FLOPs of one token
at zero context: the decode rule's FLOPs at rows = 1, context = 0, summed over nodes,
≈ 2 * active matmul parameters. ``kv_bytes_per_token_bf16`` is the KV cache one token adds
at bf16 over every attention node; ``state_bytes_per_seq`` the recurrent state of one
sequence (the reference's formula) and ``conv_state_bytes_per_seq`` its conv windows, apart.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ..registry import resolve as resolve_registry
from . import expr as _expr
from .model import build_model, node_trees

MAIN_SECTIONS = ("embed", "main", "head")


@attrs.frozen
class WorkloadStats:
    """Counts of a template workload, from its circuit."""

    workload: str
    template: str
    params: float
    active_params: float
    embedding_params: float
    flops_per_token: float
    layers: int
    kv_bytes_per_token_bf16: float
    state_bytes_per_seq: float
    weight_elements: Mapping[str, float]
    draft_params: float = 0.0
    pattern: str = ""
    conv_state_bytes_per_seq: float = 0.0

    def to_dict(self) -> dict:
        d = attrs.asdict(self)
        d["weight_elements"] = dict(self.weight_elements)
        return d


def workload_stats(workload, registry=None) -> WorkloadStats:
    """Params, active params, FLOPs per token, layers and KV bytes per token of a template
    workload (name, path or spec); cached per registry."""
    registry = resolve_registry(registry)
    w = registry.workload(workload)
    key = ("circuit-stats", id(w))
    hit = registry._memo.get(key)
    if hit is not None and hit[0] is w:
        return hit[1]
    stats = _compute(w, registry)
    registry._memo[key] = (w, stats)
    return stats


def _compute(w, registry) -> WorkloadStats:
    model = build_model(w, registry, kv_cache_dtype="bf16")
    params = active = embed = draft = kv = state = conv = flops = 0.0
    roles: dict[str, float] = {}
    for n in model.nodes:
        mem = model.memory[n.id]
        if n.section == "draft":
            draft += mem.params * n.count
            continue
        params += mem.params * n.count
        active += mem.active_params * n.count
        if n.op == "embed":
            embed += mem.params * n.count
        if mem.params:
            roles[n.role or n.op] = roles.get(n.role or n.op, 0.0) + mem.params * n.count
        kv += mem.kv_per_token * n.count
        state += mem.state_per_seq * n.count
        conv += mem.conv_state_per_seq * n.count
        tree = node_trees(model.rules[n.op.lower()], "decode", mem.env)[0]
        fn = _expr.compile_function(("rows", "context", "seqs"), [tree])
        flops += float(fn(1.0, 0.0, 1.0)[0]) * n.count
    c = model.circuit
    return WorkloadStats(workload=w.name, template=c.template, params=params,
                         active_params=active, embedding_params=embed, flops_per_token=flops,
                         layers=c.layers, kv_bytes_per_token_bf16=kv,
                         state_bytes_per_seq=state, weight_elements=roles, draft_params=draft,
                         pattern=c.pattern(), conv_state_bytes_per_seq=conv)
