"""The public circuit API: ``decode``, ``prefill``, ``footprint``, ``fits``.

Each takes a workload and a device (catalogue name, alias, TOML path or spec object) and
returns a result with per-node rows, totals and the basis of its numbers::

    roofkit.decode("llama-3.1-70b", "h100", batch=64, context=2048).time
    roofkit.prefill("llama-3.1-8b", "h100", tokens=8192).to_dict()
    roofkit.fits("qwen3-next-80b-a3b", "h200", seqs=32, context=32768).margin

Settings (keyword arguments): ``kv_cache_dtype`` (bf16, fp8...), ``ssm_h_dtype`` (f32,
f16, bf16), ``formats={"experts": "nvfp4", "activations": "fp8"}`` (see
:mod:`roofkit.circuit.formats`), ``basis`` ("datasheet" or "calibrated"), and for the
footprint ``draft`` (count a draft/MTP section's weights; default True). ``cost_model``
defaults by basis: ``roofline`` (max of compute and memory) on the datasheet basis,
``roofline_calibrated`` (GEMM-size efficiency, partial overlap, measured attention) on the
calibrated one.

Tensor parallelism: ``tp=N`` costs one of N devices of one node. The template describes the
shard (Megatron-style: ``heads / N`` query heads, ``max(kv_heads / N, 1)`` KV heads, ``ffn /
N`` of every FFN and expert, ``vocab / N`` of the embedding and LM head; norms and routers
replicated) and adds an ``all_reduce`` node after each row-parallel projection (two per
transformer layer), costed on the device's interconnect:
``t = 2 (N-1)/N * bytes / link_bw + 2 (N-1) * latency``. Rows, totals and the footprint are
one device's; ``N`` must stay within the interconnect's ``max_devices``.

Decode at a batch of B sequences at context C costs every node with rows = seqs = B and
context C. Prefill of T tokens (per sequence, ``seqs`` sequences) costs rows = seqs·T at
context T/2 (the causal half), the head at one row per sequence. Everything is compiled
once per (workload, device, settings) and cached on the registry: a repeated call is
float or numpy arithmetic only, and ``batch`` / ``context`` may be arrays.
"""

from __future__ import annotations

import numpy as np

from ..errors import SpecError, UnknownNameError
from ..registry import default_registry
from .model import build_model
from .plan import build_plan
from .results import Estimate, Fit, Footprint, NodeCost, bound_of
from .roofline import device_roofline

SETTINGS = ("ssm_h_dtype", "formats", "basis", "draft")


def _check_settings(settings: dict, allowed=SETTINGS) -> None:
    for k in settings:
        if k not in allowed:
            raise UnknownNameError("setting", k, allowed)


def _ref_key(ref):
    return ref.lower() if isinstance(ref, str) else id(ref)


#: the cost model each basis runs when none is named
DEFAULT_COST_MODELS = {"datasheet": "roofline", "calibrated": "roofline_calibrated"}


def default_cost_model(basis: str | None) -> str:
    """``roofline`` on the datasheet basis, ``roofline_calibrated`` on the calibrated one."""
    return DEFAULT_COST_MODELS.get(basis or "datasheet", "roofline")


def as_tp(tp) -> int:
    """``tp`` as an int >= 1 (a SpecError otherwise)."""
    if isinstance(tp, bool) or not isinstance(tp, int | np.integer) or tp < 1:
        raise SpecError(f"tp must be an integer >= 1, got {tp!r}")
    return int(tp)


def check_device_tp(device, tp: int) -> None:
    """``tp > 1`` needs the device's ``[interconnect]``, joining at least ``tp`` devices."""
    if tp == 1:
        return
    ic = device.interconnect
    if ic is None:
        raise SpecError(f"{device.name} has no [interconnect]; tp={tp} needs a "
                        "device-to-device link")
    if tp > ic.max_devices:
        raise SpecError(f"tp={tp} exceeds the {ic.max_devices} devices {device.name}'s "
                        f"{ic.name or 'interconnect'} joins in one node")


def _plan(reg, workload, device, mode, precision, kv_cache_dtype, cost_model, settings, tp=1):
    fmts = settings.get("formats")
    basis = settings.get("basis", "datasheet")
    if cost_model is None:
        cost_model = default_cost_model(basis)
    key = ("circuit-plan", _ref_key(workload), _ref_key(device), mode,
           getattr(precision, "name", precision), kv_cache_dtype, settings.get("ssm_h_dtype"),
           tuple(sorted(fmts.items())) if fmts else None, basis,
           getattr(cost_model, "name", cost_model), tp)
    hit = reg._memo.get(key)
    if hit is not None and (isinstance(workload, str) or hit[0] is workload) and \
            (isinstance(device, str) or hit[1] is device):
        return hit[2]
    tp = as_tp(tp)
    w = reg.workload(workload)
    d = reg.device(device)
    check_device_tp(d, tp)
    model = build_model(w, reg, precision=precision, formats=fmts,
                        kv_cache_dtype=kv_cache_dtype, ssm_h_dtype=settings.get("ssm_h_dtype"),
                        tp=tp)
    if mode == "decode" and not model.circuit.decoder:
        raise ValueError(f"{w.name} is an encoder (template {model.template.name!r}): it has "
                         "no decode step; use prefill")
    roof = device_roofline(d, basis, reg)
    cm = reg.cost_model(cost_model)
    plan = build_plan(model, roof, cm, mode)
    reg._memo[key] = (workload, device, plan)
    return plan


def plan(workload, device, mode="decode", precision=None, kv_cache_dtype=None,
         cost_model=None, registry=None, tp=1, **settings):
    """The compiled :class:`~roofkit.circuit.plan.Plan` the estimates run (cached)."""
    _check_settings(settings)
    reg = default_registry() if registry is None else registry
    return _plan(reg, workload, device, mode, precision, kv_cache_dtype, cost_model, settings,
                 tp)


def _as_count(name, v, low):
    if isinstance(v, list | tuple | np.ndarray):
        a = np.asarray(v, dtype=float)
        if a.size == 0 or np.any(a < low) or not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be at least {low} everywhere, got {v!r}")
        return a
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating) \
            or not v >= low or v != v or v == float("inf"):
        raise ValueError(f"{name} must be a number at least {low}, got {v!r}")
    return float(v)


def _estimate(plan, mode, rows, context, seqs, head_rows, batch, tokens, settings,
              kv_cache_dtype, precision):
    out = plan.run(rows, context, seqs, head_rows)
    node_rows = []
    for p, flops, b, t, t_mem, t_cmp, t_link, link_bytes in out:
        n = p.node
        node_rows.append(NodeCost(
            node=n.id, op=n.op, section=n.section, count=n.count, flops=flops,
            bytes=b[0] + b[1] + b[2] + b[3] + b[4] + b[5], time=t,
            bound=bound_of(t_mem, t_cmp, t, t_link), slot="link" if p.link else p.slot,
            weight_bytes=b[0],
            act_bytes=b[1], kv_bytes=b[2] + b[3], state_bytes=b[4] + b[5], t_memory=t_mem,
            t_compute=t_cmp, t_link=t_link, link_bytes=link_bytes))
    model = plan.model
    shown = {"precision": getattr(precision, "name", precision),
             "kv_cache_dtype": model.formats.kv.name,
             "activations": model.formats.activation.name,
             **{k: v for k, v in settings.items()}}
    return Estimate(mode=mode, workload=model.workload.name, device=plan.roofline.device,
                    cost_model=plan.cost_model.name, basis=plan.basis,
                    measured=plan.roofline.measured, rows=tuple(node_rows), batch=batch,
                    context=context, tokens=tokens, notes=tuple(plan.notes), settings=shown,
                    tp=model.tp)


def decode(workload, device, batch=1, context=2048, precision=None, kv_cache_dtype=None,
           cost_model=None, registry=None, tp=1, **settings) -> Estimate:
    """One decode step of ``batch`` sequences, each at ``context`` tokens, on one of ``tp``
    devices.

    ``batch`` and ``context`` may be arrays (numpy broadcasting): one call costs many.
    """
    _check_settings(settings)
    reg = default_registry() if registry is None else registry
    plan = _plan(reg, workload, device, "decode", precision, kv_cache_dtype, cost_model,
                 settings, tp)
    b = _as_count("batch", batch, 1)
    c = _as_count("context", context, 0)
    return _estimate(plan, "decode", b, c, b, None, batch, 0, settings, kv_cache_dtype,
                     precision)


def prefill(workload, device, tokens=2048, seqs=1, precision=None, kv_cache_dtype=None,
            cost_model=None, registry=None, tp=1, **settings) -> Estimate:
    """Prefill of ``tokens`` prompt tokens in each of ``seqs`` sequences, on one of ``tp``
    devices.

    rows = seqs * tokens at context max(tokens // 2, 1), the causal half; the head runs
    one row per sequence (logits of the last token).
    """
    _check_settings(settings)
    reg = default_registry() if registry is None else registry
    plan = _plan(reg, workload, device, "prefill", precision, kv_cache_dtype, cost_model,
                 settings, tp)
    t = _as_count("tokens", tokens, 1)
    s = _as_count("seqs", seqs, 1)
    half = np.maximum(t // 2, 1) if isinstance(t, np.ndarray) else max(t // 2, 1.0)
    return _estimate(plan, "prefill", s * t, half, s, s, seqs, tokens, settings,
                     kv_cache_dtype, precision)


def footprint(workload, device=None, precision=None, kv_cache_dtype=None, registry=None,
              tp=1, **settings) -> Footprint:
    """Weights, KV bytes per token, recurrent state per sequence and the weight floor, of
    one of ``tp`` devices.

    With a ``device`` the weight floor's time at its bandwidth is given too.
    """
    _check_settings(settings)
    reg = default_registry() if registry is None else registry
    w = reg.workload(workload)
    key = ("circuit-footprint", _ref_key(workload), None if device is None else
           _ref_key(device), getattr(precision, "name", precision), kv_cache_dtype,
           repr(sorted(settings.items())), tp)
    hit = reg._memo.get(key)
    if hit is not None and hit[0] is w:
        return hit[1]
    tp = as_tp(tp)
    if device is not None:
        check_device_tp(reg.device(device), tp)
    model = build_model(w, reg, precision=precision, formats=settings.get("formats"),
                        kv_cache_dtype=kv_cache_dtype, ssm_h_dtype=settings.get("ssm_h_dtype"),
                        tp=tp)
    draft = settings.get("draft", True)
    weights = kvpt = state = 0.0
    by_role: dict[str, float] = {}
    by_section: dict[str, float] = {}
    kv_terms = []
    for n in model.nodes:
        if n.section == "draft" and not draft:
            continue
        m = model.memory[n.id]
        wb = m.weight_bytes * n.count
        weights += wb
        if wb:
            by_role[n.role or n.op] = by_role.get(n.role or n.op, 0.0) + wb
            by_section[n.section] = by_section.get(n.section, 0.0) + wb
        if n.section == "draft":
            continue  # a draft head keeps its own KV only while speculating; not counted
        kvpt += m.kv_per_token * n.count
        state += m.state_per_seq * n.count
        if m.kv_per_token:
            fs, fv = model.kv_tokens[n.id]
            kv_terms.append((m.kv_per_token * n.count, fs, fv))
    floor = weight_floor_bytes(model)
    d = None if device is None else reg.device(device)
    roof = None if d is None else device_roofline(d, settings.get("basis", "datasheet"), reg)
    fp = Footprint(workload=w.name, weights=weights, kv_per_token=kvpt, state_per_seq=state,
                   weight_floor=floor, kv_cache_dtype=model.formats.kv.name,
                   ssm_h_dtype=model.formats.state.name, weights_by_role=by_role,
                   weights_by_section=by_section, device=None if d is None else d.name,
                   weight_floor_time=None if roof is None else floor / roof.bandwidth,
                   basis="" if roof is None else roof.basis, kv_terms=tuple(kv_terms),
                   tp=tp)
    reg._memo[key] = (w, fp)
    return fp


def weight_floor_bytes(model) -> float:
    """Weight bytes one decode row reads: the decode rule's weight bytes at rows = 1 over the
    embed, main and head sections (routed experts at top_k, one embedding row)."""
    total = 0.0
    for n in model.nodes:
        if n.section == "draft":
            continue
        scalar = model.node_functions(n, "decode")[1]
        total += float(scalar(1.0, 0.0, 1.0)[1]) * n.count
    return total


def fits(workload, device, seqs=1, context=2048, precision=None, kv_cache_dtype=None,
         registry=None, tp=1, **settings) -> Fit:
    """Whether ``seqs`` sequences of ``context`` tokens fit in the usable memory of each of
    ``tp`` devices."""
    _check_settings(settings)
    reg = default_registry() if registry is None else registry
    s = _as_count("seqs", seqs, 1)
    c = _as_count("context", context, 0)
    fp = footprint(workload, device, precision=precision, kv_cache_dtype=kv_cache_dtype,
                   registry=reg, tp=tp, **settings)
    d = reg.device(device)
    mem = d.memory
    usable = mem.capacity * mem.usable_fraction
    required = fp.bytes(s, c)
    per_seq = fp.kv_bytes(c) + fp.state_per_seq
    spare = usable - fp.weights
    max_seqs = 0 if spare <= 0 else (10**12 if per_seq <= 0 else int(spare // per_seq))
    return Fit(workload=fp.workload, device=d.name, seqs=int(s), context=int(c),
               fits=bool(required <= usable), required=float(required), usable=usable,
               capacity=mem.capacity, usable_fraction=mem.usable_fraction,
               usable_reason=mem.usable_reason or "the whole capacity (no usable_fraction "
               "given)", margin=float(usable - required), max_seqs=max_seqs, footprint=fp,
               tp=fp.tp)
