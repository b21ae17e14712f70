"""Serving a static batch on a cluster layout: tensor, pipeline and expert parallelism and
data-parallel attention (``roofkit serve ... --pp/--ep/--attention-dp``).

``B`` requests of ``I`` prompt tokens each generate ``O`` tokens on ``tp * pp * dp_attn``
devices: ``dp_attn`` attention replicas each take ``B / dp_attn`` requests and run their
attention with TP ``tp``; the experts of a MoE layer are sharded over ``ep`` devices
(``ep = tp * dp_attn``, the whole stage; ``ep = 1``: the experts are TP-sharded); ``pp``
stages each hold ``L / pp`` layers. Per layer on one device, a roofline step:

    t_layer = max(F / (P eta(F)), W / BW) + t_coll
    W = weights read (attention and dense MLP / tp; the local experts the batch touches,
        E/ep * (1 - (1 - k/E)^B) of them; shared experts / tp) + the KV cache read
    F = 2 * tokens * matmul params of the layer on this device (+ the attention core)
    t_coll = 2 all-reduces of the replica's activations over tp (dense/attention) and, per
             MoE layer, a dispatch and a combine all-to-all of tokens * top_k * h bytes over
             ep (roofkit.fleet.collectives, placed on the cluster's tiers)

A dense TP x PP layout (no EP, no attention DP) reuses the circuit's TP estimate of the whole
model (``roofkit.serve``) and adds the stage hops; the roofline above is for layouts the
circuit does not shard (EP, DP attention). A decode step is ``pp`` stages in sequence plus
``pp - 1`` point-to-point hops (a static batch has no second micro-batch to fill the
pipeline); the LM head runs on the last stage.
TTFT is one prefill step of ``B * I`` tokens; ITL the decode step at the mean context
``I + O / 2`` (the step is linear in the context); e2e = TTFT + (O - 1) ITL.
"""

from __future__ import annotations

import attrs

from ..errors import OOMError, SpecError
from ..registry import resolve as resolve_registry
from .cluster import with_devices
from .collectives import Group, collective_time, topology
from .model import arch_of
from .step import half_slot


@attrs.frozen
class FleetServingEstimate:
    workload: str
    cluster: str
    device: str
    layout: dict
    ttft_s: float
    itl_s: float
    output_len: int
    batch: int
    memory_per_device_bytes: float
    capacity: float
    breakdown: dict
    basis: str
    device_class: str = ""  # vendor and category, the stratum of its intervals
    inside: bool = False  # on its device's measured constants: the calibrated range

    @property
    def e2e_s(self) -> float:
        return self.ttft_s + max(self.output_len - 1, 0) * self.itl_s

    @property
    def output_tokens_per_s(self) -> float:
        return self.batch * self.output_len / self.e2e_s

    @property
    def fits(self) -> bool:
        return self.memory_per_device_bytes <= self.capacity

    def to_pandas(self):
        from .report import flat, frame

        return frame([flat(self.to_dict())])

    def _repr_html_(self) -> str:
        from .report import html_table

        d = self.to_dict()
        return html_table(f"{self.workload} on {self.cluster}", [
            ("TTFT (ms)", d["ttft_ms"]), ("ITL (ms)", d["itl_ms"]), ("e2e (ms)", d["e2e_ms"]),
            ("output tokens/s", d["output_tokens_per_s"]),
            ("memory per device (GB)", d["memory_per_device_bytes"] / 1e9), ("fits", d["fits"])])

    def __repr__(self) -> str:
        return (f"FleetServingEstimate({self.workload} on {self.layout['devices']} x "
                f"{self.device}: TTFT {1e3 * self.ttft_s:.1f} ms, ITL {1e3 * self.itl_s:.2f} "
                f"ms)")

    def intervals(self, level: float = 0.8) -> dict:
        """Per headline figure its prediction interval at ``level`` from the static serving
        cases' out-of-sample residuals (:mod:`roofkit.intervals`)."""
        from ..intervals import interval, table

        d = {"ttft_ms": 1e3 * self.ttft_s, "itl_ms": 1e3 * self.itl_s,
             "e2e_ms": 1e3 * self.e2e_s, "output_tokens_per_s": self.output_tokens_per_s}
        out = {}
        for name, v in d.items():
            iv = interval(v, table(), metric=name, device_class=self.device_class,
                          inside=self.inside, level=level)
            if iv is not None:
                out[name] = iv
        return out

    def to_dict(self, level: float = 0.8) -> dict:
        return {"intervals": {k: v.to_dict() for k, v in self.intervals(level).items()},
                "workload": self.workload, "cluster": self.cluster, "device": self.device,
                "layout": dict(self.layout), "batch": self.batch,
                "ttft_ms": 1e3 * self.ttft_s, "itl_ms": 1e3 * self.itl_s,
                "e2e_ms": 1e3 * self.e2e_s, "output_tokens_per_s": self.output_tokens_per_s,
                "memory_per_device_bytes": self.memory_per_device_bytes,
                "capacity_bytes": self.capacity, "fits": self.fits,
                "decode_breakdown_s": dict(self.breakdown), "basis": self.basis}


def _device_class(device) -> str:
    return f"{(device.vendor or 'other').lower()} {device.category}"


def _layer(arch, c, slot, *, tokens, dp, kv_read, tp, ep, topo, registry, inner_tp,
           inner_ep, w_bytes, moe, prefill_ctx=0.0):
    """(seconds, compute s, memory s, collective s) of one layer on one device; ``tokens``
    per attention replica, ``dp`` replicas."""
    from ..circuit.calibrated import efficiency

    def rate(flops):  # a layer's matmuls are about four GEMMs: read eta at a quarter
        curve = c.curves.get(slot)
        return c.peaks[slot] * (efficiency(curve, flops / 4.0) if curve is not None else 1.0)

    h = float(arch.hidden)
    attn_p = arch.attention_params / tp
    flops = 2.0 * tokens * attn_p
    weights = attn_p * w_bytes
    coll = 0.0
    if tp > 1:
        coll += 2 * collective_time("all_reduce", tokens * h * 2.0, Group.of(tp, inner_tp),
                                    topo, registry)
    if moe:
        E, k = float(arch.experts), float(arch.top_k)
        per_expert = arch.layer_params(arch.expert)
        if ep > 1:  # experts spread over the stage: every replica's tokens meet in the MoE
            routed = tokens * dp
            touched = E * (1.0 - (1.0 - k / E) ** max(routed, 1.0))
            weights += touched / ep * per_expert * w_bytes
            flops += 2.0 * routed * k * per_expert / ep
            coll += 2 * collective_time("all_to_all", tokens / tp * k * h * 2.0,
                                        Group.of(ep, inner_ep), topo, registry)
        else:  # every replica holds all experts, TP-sharded
            touched = E * (1.0 - (1.0 - k / E) ** max(tokens, 1.0))
            weights += touched * per_expert / tp * w_bytes
            flops += 2.0 * tokens * k * per_expert / tp
        if arch.shared:
            sp = arch.layer_params(arch.shared) / tp
            weights += sp * w_bytes
            flops += 2.0 * tokens * sp
    else:
        mp = arch.layer_params(arch.mlp) / tp
        weights += mp * w_bytes
        flops += 2.0 * tokens * mp
    # attention core over the context (prefill: causal over its own tokens)
    ctx = prefill_ctx / 2.0 if prefill_ctx else kv_read[1]
    flops += 2.0 * tokens * ctx * (arch.heads / tp) * (arch.qk_dim + arch.v_dim)
    compute = flops / rate(flops)
    memory = (weights + kv_read[0]) / c.bandwidth
    return max(compute, memory) + coll, compute, memory, coll


def serve_fleet(workload, cluster, *, batch: int = 1, input_len: int = 128,
                output_len: int = 128, tp: int = 1, pp: int = 1, ep: int = 1,
                attention_dp: int = 1, precision: str | None = None,
                kv_cache_dtype: str = "bf16", basis: str = "auto", registry=None,
                require_fit: bool = False) -> FleetServingEstimate:
    """Estimate a static batch on ``tp * pp * attention_dp`` devices of ``cluster``
    (``basis="auto"``, the default: calibrated where its device has a calibration, else
    datasheet)."""
    from ..circuit.roofline import resolve_basis
    from ..circuit.stats import workload_stats
    from .training import costing

    registry = resolve_registry(registry)
    arch = arch_of(workload, registry)
    w = registry.workload(workload)
    devices = tp * pp * attention_dp
    problems = []
    if arch.heads % tp:
        problems.append(f"tp {tp} does not divide the {arch.heads} attention heads")
    if arch.layers % pp:
        problems.append(f"pp {pp} does not divide the {arch.layers} layers")
    if ep > 1 and not arch.experts:
        problems.append(f"ep {ep} on {arch.name}, which has no experts")
    elif ep > 1 and (arch.experts % ep or ep != tp * attention_dp):
        problems.append(f"ep {ep} must divide the {arch.experts} experts and equal "
                        f"tp * attention_dp = {tp * attention_dp} (experts span the stage)")
    if batch % attention_dp:
        problems.append(f"batch {batch} is not a multiple of attention_dp {attention_dp}")
    if problems:
        raise SpecError(f"invalid serving layout for {arch.name}: " + "; ".join(problems))
    cl = with_devices(registry.cluster(cluster), devices)
    basis = resolve_basis(basis, cl.device, registry)
    c, basis_text = costing(cl, basis, registry)
    prec = registry.precision(precision or w.formats.get("default", "bf16"))
    w_bytes = prec.bytes_per_element
    slot = "fp8" if prec.slot == "fp8" and "fp8" in c.peaks else half_slot(c.peaks)
    kv_bytes = workload_stats(w, registry).kv_bytes_per_token_bf16 / arch.layers \
        * registry.precision(kv_cache_dtype).bytes_per_element / 2.0
    topo = topology(cl, basis, registry)
    domain = cl.scale_up.size
    inner_tp = min(tp, domain)
    inner_ep = min(ep, domain)
    rb = batch / attention_dp  # requests per attention replica
    stage = arch.layers // pp
    moe_frac = arch.moe_layers / arch.layers

    mla = any(g.name == "kv_a" for g in arch.attention)
    kv_shard = 1 if mla else min(tp, arch.kv_heads)  # MLA's latent is one per token

    def step(tokens, kv_tokens, ctx, prefill_ctx=0.0, head_tokens=None):
        kv = (kv_tokens * kv_bytes / kv_shard, ctx)
        args = dict(tokens=tokens, dp=attention_dp, kv_read=kv, tp=tp, ep=ep, topo=topo,
                    registry=registry, inner_tp=inner_tp, inner_ep=inner_ep, w_bytes=w_bytes,
                    prefill_ctx=prefill_ctx)
        dense = _layer(arch, c, slot, moe=False, **args)
        parts = dense
        if arch.experts:
            moe = _layer(arch, c, slot, moe=True, **args)
            parts = tuple((1 - moe_frac) * d + moe_frac * m for d, m in zip(dense, moe,
                                                                                  strict=True))
        head_p = arch.vocab * arch.hidden / tp
        head_tokens = tokens if head_tokens is None else head_tokens
        head = max(2 * head_tokens * head_p / c.peaks[half_slot(c.peaks)],
                   head_p * 2.0 / c.bandwidth)
        hop = 0.0
        if pp > 1:
            inner_pp = 1 if tp * attention_dp >= domain else max(1, domain // (tp * attention_dp))
            hop = collective_time("p2p", tokens * arch.hidden * 2.0,
                                  Group.of(pp, min(pp, inner_pp)), topo, registry)
        total = arch.layers * parts[0] + head + (pp - 1) * hop
        return total, {"layers": arch.layers * (parts[0] - parts[3]),
                       "collectives": arch.layers * parts[3], "pp_hops": (pp - 1) * hop,
                       "lm_head": head}

    if ep == 1 and attention_dp == 1:  # TP x PP of a dense layout: the circuit's own plan
        return _circuit_pp(arch, w, cl, c, basis, basis_text, registry, topo, prec,
                           kv_cache_dtype, batch, input_len, output_len, tp, pp, domain,
                           require_fit)
    mean_ctx = input_len + output_len / 2.0
    itl, breakdown = step(rb, rb * mean_ctx, mean_ctx)
    ttft, _ = step(rb * input_len, 0.0, 0.0, prefill_ctx=float(input_len), head_tokens=rb)
    dispatch = registry.device(cl.device).overheads.dispatch
    itl += dispatch
    ttft += dispatch
    breakdown["dispatch"] = dispatch
    weights = (arch.attention_params / tp + (1 - moe_frac) * arch.layer_params(arch.mlp) / tp)
    if arch.experts:
        weights += moe_frac * (arch.experts / (ep if ep > 1 else 1)
                               * arch.layer_params(arch.expert) / (1 if ep > 1 else tp)
                               + arch.layer_params(arch.shared) / tp)
    memory = (stage * weights + arch.vocab * arch.hidden / tp) * w_bytes \
        + stage * rb * (input_len + output_len) * kv_bytes / kv_shard
    est = FleetServingEstimate(
        workload=arch.name, cluster=cl.name, device=cl.device,
        layout={"tp": tp, "pp": pp, "ep": ep, "attention_dp": attention_dp,
                "devices": devices, "precision": prec.name, "kv_cache_dtype": kv_cache_dtype},
        ttft_s=ttft, itl_s=itl, output_len=output_len, batch=batch,
        memory_per_device_bytes=memory, capacity=registry.device(cl.device).memory.capacity,
        breakdown=breakdown, basis=f"{basis_text}; static batch, roofline per layer",
        device_class=_device_class(registry.device(cl.device)),
        inside=basis_text.startswith("measured"))
    if require_fit and not est.fits:
        raise OOMError(f"{arch.name} needs {memory / 1e9:.1f} GB per device on this layout; "
                       f"{est.capacity / 1e9:.1f} GB available")
    return est


def _circuit_pp(arch, w, cl, c, basis, basis_text, registry, topo, prec, kv_cache_dtype,
                batch, input_len, output_len, tp, pp, domain, require_fit):
    """TP x PP: the circuit's TP estimate of the whole model (its decode and prefill steps,
    collectives, launch and step overheads), every stage holding 1 / pp of the layers and of
    their KV, plus ``pp - 1`` point-to-point hops of the step's activations per step."""
    from ..serving import serve

    est = serve(w, cl.device, batch=batch, input_len=input_len, output_len=output_len, tp=tp,
                precision=prec.name, kv_cache_dtype=kv_cache_dtype, basis=basis,
                registry=registry)
    hop_decode = hop_prefill = 0.0
    if pp > 1:
        inner = max(1, min(pp, domain // tp))
        g = Group.of(pp, inner)
        hop_decode = collective_time("p2p", batch * arch.hidden * 2.0, g, topo, registry)
        hop_prefill = collective_time("p2p", batch * input_len * arch.hidden * 2.0, g, topo,
                                      registry)
    itl = est.itl_ms / 1e3 + (pp - 1) * hop_decode
    ttft = est.ttft_ms / 1e3 + (pp - 1) * hop_prefill
    memory = est.memory_per_device / pp
    out = FleetServingEstimate(
        workload=arch.name, cluster=cl.name, device=cl.device,
        layout={"tp": tp, "pp": pp, "ep": 1, "attention_dp": 1, "devices": tp * pp,
                "precision": prec.name, "kv_cache_dtype": kv_cache_dtype},
        ttft_s=ttft, itl_s=itl, output_len=output_len, batch=batch,
        memory_per_device_bytes=memory, capacity=registry.device(cl.device).memory.capacity,
        breakdown={"circuit_tp_step": est.itl_ms / 1e3, "pp_hops": (pp - 1) * hop_decode},
        basis=f"circuit TP {tp} estimate ({est.basis}); {pp} stages of 1/{pp} of the layers; "
              f"links: {topo.basis}", device_class=est.device_class,
        inside=bool(est.measured and est.basis == "calibrated"))
    if require_fit and not out.fits:
        raise OOMError(f"{arch.name} needs {memory / 1e9:.1f} GB per device on this layout; "
                       f"{out.capacity / 1e9:.1f} GB available")
    return out
