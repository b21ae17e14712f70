"""The public circuit API: ``decode``, ``prefill``, ``footprint``, ``fits``.

Each takes a workload and a device (catalogue name, alias, TOML path or spec object) and
returns a result with per-node rows, totals and the basis of its numbers::

    roofkit.decode("llama-3.1-70b", "h100", batch=64, context=2048).time
    roofkit.prefill("llama-3.1-8b", "h100", tokens=8192).to_dict()
    roofkit.fits("qwen3-next-80b-a3b", "h200", seqs=32, context=32768).margin

Settings (keyword arguments): ``kv_cache_dtype`` (bf16, fp8...), ``ssm_h_dtype`` (f32,
f16, f16-pool, bf16: the GatedDeltaNet state), ``formats={"experts": "nvfp4",
"activations": "fp8"}`` (see :mod:`roofkit.circuit.formats`; a role the circuit lacks is
refused), ``basis`` ("datasheet", "calibrated" or "auto", the default: calibrated where
the device has a calibration in ``specs/calibration/``, else datasheet; the result records
the basis chosen), ``draft`` (count a draft/MTP section's
weights in the memory check; default True) and ``conv_windows`` (count the conv1d windows
of recurrent layers in the memory check; default False, as the reference). ``cost_model``
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

Decode at a batch of B sequences at context C costs every node of the embed, main and head
sections with rows = seqs = B and context C. Prefill of T tokens (per sequence, ``seqs``
sequences) costs the main section at rows = seqs·T and context T//2 (the causal half), as
the reference does; ``head=True`` adds the embedding gather of the prompt and the LM head
at one row per sequence (the first token's logits: what a time to first token needs).
Counts (``batch``, ``seqs``, ``tokens``, ``context``) are whole numbers, or arrays of them.

Every decode and prefill result carries its memory check (``est.fits``,
``est.memory_required``, ``est.memory_margin``): weights plus the KV cache and state of its
sequences against the usable memory of one device (of ``tp``). The estimate is given either
way; it assumes every byte resident.

Everything is compiled once per (workload, device, settings) and cached on the registry: a
repeated call is float or numpy arithmetic only, and ``batch`` / ``context`` may be arrays.
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from .. import bounds
from ..errors import ArgumentError, SpecError, UnknownNameError, shown
from ..registry import is_path_ref, resolve
from ..types import CostModel, Precision
from . import expr as _expr
from .model import RUNTIME, build_model
from .plan import build_plan
from .results import Estimate, Fit, Footprint, NodeCost
from .roofline import AUTO, device_roofline, resolve_basis

#: keyword settings every estimate accepts besides its named parameters
SETTINGS = ("ssm_h_dtype", "formats", "basis", "draft", "conv_windows", "engine",
            "engine_version")

#: the named parameters of each public call (for the message on an unknown keyword)
_NAMED = {
    "decode": ("batch", "context", "precision", "kv_cache_dtype", "cost_model", "registry",
               "tp"),
    "prefill": ("tokens", "seqs", "head", "precision", "kv_cache_dtype", "cost_model",
                "registry", "tp"),
    "footprint": ("device", "precision", "kv_cache_dtype", "registry", "tp"),
    "fits": ("seqs", "context", "precision", "kv_cache_dtype", "registry", "tp"),
    "plan": ("mode", "precision", "kv_cache_dtype", "cost_model", "registry", "tp"),
}


def _check_settings(settings: dict, allowed=SETTINGS, call: str = "decode",
                    **named_args) -> None:
    """Refuse an unknown keyword, naming the closest and every keyword ``call`` accepts, and
    a setting or a named format argument (``precision``, ``kv_cache_dtype``, ``cost_model``)
    of the wrong type; on every call, cached plan or not."""
    for name, v in named_args.items():
        if v is not None and not isinstance(v, str | Precision | CostModel):
            raise ArgumentError(f"{name} must be a name such as "
                                f"{'roofline' if name == 'cost_model' else 'bf16'!r}, got "
                                f"{shown(v, 80)} ({type(v).__name__})")
    named = _NAMED.get(call, ())
    for k in settings:
        if k not in allowed:
            every = (*named, *allowed)
            raise UnknownNameError("keyword", k, every,
                                   hint=f"{call}() accepts: {', '.join(every)}.")
    for name in ("draft", "conv_windows"):
        v = settings.get(name, False)
        if not isinstance(v, bool | np.bool_):
            raise ArgumentError(f"{name} must be True or False, got {shown(v, 80)} "
                                f"({type(v).__name__})")
    fmts = settings.get("formats")
    if fmts is not None and (not isinstance(fmts, dict) or not all(
            isinstance(r, str) and isinstance(f, str | Precision) for r, f in fmts.items())):
        raise ArgumentError(f"formats must map roles to formats, e.g. {{'experts': 'nvfp4', "
                            f"'activations': 'fp8'}}, got {shown(fmts, 80)}; one format for "
                            "everything is precision=")
    for name in ("engine", "engine_version"):
        v = settings.get(name)
        if v is not None and not isinstance(v, str):
            raise ArgumentError(f"{name} must be a name such as 'tensorrt-llm' or a version "
                                f"such as '0.6.1', got {shown(v, 80)} ({type(v).__name__})")
    ssm = settings.get("ssm_h_dtype")
    if ssm is not None and not isinstance(ssm, str):
        raise ArgumentError(f"ssm_h_dtype must be a format name such as 'f32', got "
                            f"{shown(ssm, 80)} ({type(ssm).__name__})")
    basis = settings.get("basis", AUTO)
    if not isinstance(basis, str) or (basis not in DEFAULT_COST_MODELS and basis != AUTO):
        raise ArgumentError(f"basis must be one of {', '.join(DEFAULT_COST_MODELS)} or "
                            f"{AUTO!r} (calibrated where the device has a calibration, else "
                            f"datasheet), got {shown(basis, 80)}")


def _auto_basis(reg, device, settings: dict) -> dict:
    """``basis="auto"`` (the default when none is given): the device's default basis
    (calibrated where it has a calibration, else datasheet), written into the settings the
    result shows. Without a device there is no roofline and the basis stays unset."""
    if settings.get("basis", AUTO) != AUTO:
        return settings
    if device is None:
        return {k: v for k, v in settings.items() if k != "basis"}
    return {**settings, "basis": resolve_basis(AUTO, device, reg)}


def _ref_key(ref):
    """A catalogue name (any case) or a spec object's identity; spec files are resolved to
    their spec first (:func:`_by_file`), never keyed by the path as typed."""
    return ref.lower() if isinstance(ref, str) else id(ref)


def _by_file(reg, workload, device):
    """Workload and device refs with a TOML path replaced by its spec, which the registry
    keys by real path and content."""
    if is_path_ref(workload):
        workload = reg.workload(workload)
    if device is not None and is_path_ref(device):
        device = reg.device(device)
    return workload, device


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


#: the sections a plan of each kind costs
DECODE_SECTIONS = ("embed", "main", "head")
PREFILL_SECTIONS = ("main",)
PREFILL_HEAD_SECTIONS = ("embed", "main", "head")


def _plan(reg, workload, device, mode, precision, kv_cache_dtype, cost_model, settings, tp=1,
          sections=DECODE_SECTIONS):
    """(plan, footprint of the memory check, usable bytes of one device); cached."""
    fmts = settings.get("formats")
    basis = settings.get("basis", "datasheet")
    if cost_model is None:
        cost_model = default_cost_model(basis)
    workload, device = _by_file(reg, workload, device)
    key = ("circuit-plan", _ref_key(workload), _ref_key(device), mode, sections,
           getattr(precision, "name", precision), kv_cache_dtype, settings.get("ssm_h_dtype"),
           tuple(sorted(fmts.items())) if fmts else None, basis,
           getattr(cost_model, "name", cost_model), tp, bool(settings.get("draft", True)),
           bool(settings.get("conv_windows", False)), settings.get("engine"),
           settings.get("engine_version"))
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
        raise ArgumentError(f"{w.name} is an encoder (template {model.template.name!r}): it has "
                         "no decode step; use prefill")
    roof = device_roofline(d, basis, reg)
    cm = reg.cost_model(cost_model)
    origin = reg._tables["cost_models"].get(cm.name.lower(), ("",))[0]
    from .kernels import resolve as _kernels

    kernels = _kernels(reg, settings.get("engine"), settings.get("engine_version"), d, w)
    plan = build_plan(model, roof, cm, mode, sections=sections, origin=origin, kernels=kernels)
    plan = attrs.evolve(plan, provider=origin)
    fp = _footprint(reg, model, d, basis, settings)
    out = (plan, fp, d)
    reg._memo[key] = (workload, device, out)
    return out


def plan(workload, device, mode="decode", precision=None, kv_cache_dtype=None,
         cost_model=None, registry=None, tp=1, **settings):
    """The compiled :class:`~roofkit.circuit.plan.Plan` the estimates run (cached)."""
    _check_settings(settings, call="plan", precision=precision,
                    kv_cache_dtype=kv_cache_dtype, cost_model=cost_model)
    reg = resolve(registry)
    settings = _auto_basis(reg, device, settings)
    sections = PREFILL_SECTIONS if mode == "prefill" else DECODE_SECTIONS
    return _plan(reg, workload, device, mode, precision, kv_cache_dtype, cost_model, settings,
                 tp, sections)[0]


def _as_count(name, v, low):
    """A whole number >= ``low`` and within the bound of ``name`` (:mod:`roofkit.bounds`),
    or an array of them, as a float (array); an ArgumentError otherwise."""
    if isinstance(v, list | tuple | np.ndarray):
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise ArgumentError(f"{name} must be whole numbers at least {low}, got "
                                f"{shown(v)}") from None
        if a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < low) or \
                np.any(a != np.floor(a)) or (isinstance(v, np.ndarray) and v.dtype == bool):
            raise ArgumentError(f"{name} must be whole numbers at least {low} everywhere, "
                                f"got {shown(v)}")
        bounds.check_array(name, v if isinstance(v, np.ndarray) and v.dtype.kind in "ui"
                           else a)
        return a
    if isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating):
        raise ArgumentError(f"{name} must be a whole number at least {low}, got {shown(v)}")
    if isinstance(v, int | np.integer):
        bounds.check_number(name, v)  # before any float(): 10**400 has none
    elif not math.isfinite(v) or v != math.floor(v):
        raise ArgumentError(f"{name} must be a whole number at least {low}, got {shown(v)}")
    if v < low:
        raise ArgumentError(f"{name} must be a whole number at least {low}, got {shown(v)}")
    bounds.check_number(name, v)
    return float(v)


def _estimate(plan, fp, device, mode, rows, context, seqs, head_rows, batch, tokens, settings,
              precision, mem_seqs, mem_context, plugins=()):
    out = plan.run(rows, context, seqs, head_rows)
    total = 0.0
    try:  # a cost model's complex or non-numeric time is not finite either
        for o in out:
            total = total + o[3]
        finite = math.isfinite(total) if type(total) is float else \
            bool(np.isrealobj(total) and np.all(np.isfinite(total)))
    except TypeError:
        finite = False
    if not finite:
        raise plan.arithmetic_error(rows, context, seqs, head_rows)
    node_rows = []
    for p, flops, b, t, t_mem, t_cmp, t_link, link_bytes in out:
        n = p.node
        node_rows.append(NodeCost(
            node=n.id, op=n.op, section=n.section, count=n.count, flops=flops,
            bytes=b[0] + b[1] + b[2] + b[3] + b[4] + b[5], time=t,
            slot="link" if p.link else p.slot,
            weight_bytes=b[0],
            act_bytes=b[1], kv_bytes=b[2] + b[3], state_bytes=b[4] + b[5], t_memory=t_mem,
            t_compute=t_cmp, t_link=t_link, link_bytes=link_bytes))
    model = plan.model
    shown = {"precision": getattr(precision, "name", precision),
             "kv_cache_dtype": model.formats.kv.name,
             "activations": model.formats.activation.name,
             "stream": model.formats.stream.name,
             **{k: v for k, v in settings.items()}}
    mem = device.memory
    tdp = float(device.power.tdp or 0.0) if device.power is not None else 0.0
    from .kernels import outside as _outside

    beyond = _outside(plan.kernel_ranges, rows)
    return Estimate(mode=mode, workload=model.workload.name, device=plan.roofline.device,
                    cost_model=plan.cost_model.name, basis=plan.basis,
                    measured=plan.roofline.measured, rows=tuple(node_rows), batch=batch,
                    context=context, tokens=tokens, notes=(*plan.notes, *beyond),
                    settings=shown, outside_profile_range=bool(beyond),
                    tp=model.tp, footprint=fp, memory_seqs=mem_seqs,
                    memory_context=mem_context, usable_memory=mem.capacity *
                    mem.usable_fraction, capacity=mem.capacity,
                    usable_fraction=mem.usable_fraction, plugins=tuple(plugins),
                    tdp=tdp, slot_peaks=device.compute,
                    device_class=f"{(device.vendor or 'other').lower()} {device.category}",
                    inside=plan.roofline.bandwidth_measured)


def decode(workload, device, batch=1, context=2048, precision=None, kv_cache_dtype=None,
           cost_model=None, registry=None, tp=1, **settings) -> Estimate:
    """One decode step of ``batch`` sequences, each at ``context`` tokens, on one of ``tp``
    devices: the embed, main and head sections at rows = seqs = ``batch``.

    ``batch`` and ``context`` may be arrays of whole numbers (numpy broadcasting): one call
    costs many. The result's ``fits`` says whether weights plus the batch's KV and state fit
    in one device's usable memory (the estimate is given either way).
    """
    _check_settings(settings, call="decode", precision=precision,
                    kv_cache_dtype=kv_cache_dtype, cost_model=cost_model)
    reg = resolve(registry)
    settings = _auto_basis(reg, device, settings)
    plan, fp, d = _plan(reg, workload, device, "decode", precision, kv_cache_dtype, cost_model,
                        settings, tp)
    b = _as_count("batch", batch, 1)
    c = _as_count("context", context, 0)
    return _estimate(plan, fp, d, "decode", b, c, b, None, batch, 0, settings, precision,
                     b, c, reg.plugin_set)


def prefill(workload, device, tokens=2048, seqs=1, precision=None, kv_cache_dtype=None,
            cost_model=None, registry=None, tp=1, head=False, **settings) -> Estimate:
    """Prefill of ``tokens`` prompt tokens in each of ``seqs`` sequences, on one of ``tp``
    devices.

    The main section (the layers) at rows = seqs * tokens and context max(tokens // 2, 1),
    the causal half, as the reference. ``head=True`` adds the model's ends: the embedding
    gather of every prompt token and the LM head at one row per sequence (the first output
    token's logits), which a time to first token includes. The result's ``fits`` checks
    weights plus the KV and state of ``seqs`` sequences of ``tokens`` tokens.
    """
    _check_settings(settings, call="prefill", precision=precision,
                    kv_cache_dtype=kv_cache_dtype, cost_model=cost_model)
    if not isinstance(head, bool | np.bool_):
        raise ArgumentError(f"head must be True or False, got {shown(head, 80)}")
    reg = resolve(registry)
    settings = _auto_basis(reg, device, settings)
    sections = PREFILL_HEAD_SECTIONS if head else PREFILL_SECTIONS
    plan, fp, d = _plan(reg, workload, device, "prefill", precision, kv_cache_dtype,
                        cost_model, settings, tp, sections)
    t = _as_count("tokens", tokens, 1)
    s = _as_count("seqs", seqs, 1)
    half = np.maximum(t // 2, 1) if isinstance(t, np.ndarray) else max(t // 2, 1.0)
    given = {**settings, "head": bool(head)}
    return _estimate(plan, fp, d, "prefill", s * t, half, s, s if head else None, seqs, tokens,
                     given, precision, s, t, reg.plugin_set)


def footprint(workload, device=None, precision=None, kv_cache_dtype=None, registry=None,
              tp=1, **settings) -> Footprint:
    """Weights, KV bytes per token, recurrent state and conv windows per sequence, and the
    weight floor, of one of ``tp`` devices.

    With a ``device`` the weight floor's time at its bandwidth is given too.
    """
    _check_settings(settings, call="footprint", precision=precision, kv_cache_dtype=kv_cache_dtype)
    reg = resolve(registry)
    settings = _auto_basis(reg, device, settings)
    workload, device = _by_file(reg, workload, device)
    w = reg.workload(workload)
    key = ("circuit-footprint", _ref_key(workload), None if device is None else
           _ref_key(device), getattr(precision, "name", precision), kv_cache_dtype,
           repr(sorted(settings.items())), tp)
    hit = reg._memo.get(key)
    if hit is not None and hit[0] is w:
        return hit[1]
    tp = as_tp(tp)
    d = None
    if device is not None:
        d = reg.device(device)
        check_device_tp(d, tp)
    model = build_model(w, reg, precision=precision, formats=settings.get("formats"),
                        kv_cache_dtype=kv_cache_dtype, ssm_h_dtype=settings.get("ssm_h_dtype"),
                        tp=tp)
    fp = _footprint(reg, model, d, settings.get("basis", "datasheet"), settings)
    reg._memo[key] = (w, fp)
    return fp


def _footprint(reg, model, d, basis, settings) -> Footprint:
    draft = settings.get("draft", True)
    conv = settings.get("conv_windows", False)
    for name, v in (("draft", draft), ("conv_windows", conv)):
        if not isinstance(v, bool | np.bool_):
            raise ArgumentError(f"{name} must be True or False, got {shown(v, 80)}")
    weights = kvpt = state = conv_state = 0.0
    by_role: dict[str, float] = {}
    by_section: dict[str, float] = {}
    kv_terms = []
    state_by_op: dict[str, float] = {}
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
        if m.state_per_seq:
            state_by_op[n.op] = state_by_op.get(n.op, 0.0) + m.state_per_seq * n.count
        conv_state += m.conv_state_per_seq * n.count
        if m.kv_per_token:
            fs, fv = model.kv_tokens[n.id]
            kv_terms.append((m.kv_per_token * n.count, fs, fv))
    floor = weight_floor_bytes(model)
    full = weight_floor_bytes(model, DECODE_SECTIONS)
    roof = None if d is None else device_roofline(d, basis, reg)
    bw = None if roof is None else roof.bandwidth
    return Footprint(workload=model.workload.name, weights=weights, kv_per_token=kvpt,
                     state_per_seq=state, weight_floor=floor,
                     kv_cache_dtype=model.formats.kv.name,
                     ssm_h_dtype=model.formats.state_label, weights_by_role=by_role,
                     weights_by_section=by_section, device=None if d is None else d.name,
                     weight_floor_time=None if bw is None else floor / bw,
                     basis="" if roof is None else roof.basis, kv_terms=tuple(kv_terms),
                     tp=model.tp, conv_state_per_seq=conv_state, count_conv=bool(conv),
                     weight_floor_all_sections=full, state_by_op=state_by_op,
                     weight_floor_all_sections_time=None if bw is None else full / bw,
                     plugins=tuple(reg.plugin_set))


def weight_floor_bytes(model, sections=("main",)) -> float:
    """Weight bytes one decode row reads over ``sections``: the decode rule's weight bytes at
    rows = 1 (routed experts at top_k).

    The default is the reference's floor: the main section's weights only (every layer).
    ``("embed", "main", "head")`` adds one embedding row and the LM head (the fuller number,
    :attr:`~roofkit.circuit.results.Footprint.weight_floor_all_sections`).
    """
    total = 0.0
    for n in model.nodes:
        if n.section not in sections:
            continue
        key = (n.id, "decode.weight_bytes")
        fn = model.compiled.get(key)
        if fn is None:
            trees = model.node_functions(n, "decode")[0]
            fn = model.compiled[key] = _expr.compile_function(RUNTIME, [trees[1]])
        try:
            v = fn(1.0, 0.0, 1.0)[0]
        except (ArithmeticError, ValueError, TypeError) as exc:
            v, why = None, f"fails: {type(exc).__name__} ({exc})"
        if v is None or isinstance(v, complex) or not math.isfinite(v):
            why = why if v is None else f"gives {v!r}"
            raise SpecError(f"{model.workload.name}: node {n.id!r}, op rule "
                            f"{model.rules[n.op.lower()].name!r} decode.weight_bytes {why} at "
                            "rows=1, context=0, seqs=1 (the weight floor)")
        total += float(v) * n.count
    return total


def fits(workload, device, seqs=1, context=2048, precision=None, kv_cache_dtype=None,
         registry=None, tp=1, **settings) -> Fit:
    """Whether ``seqs`` sequences of ``context`` tokens fit in the usable memory of each of
    ``tp`` devices: weights + seqs * (KV(context) + recurrent state), plus the conv windows
    with ``conv_windows=True`` (the reference leaves them out)."""
    _check_settings(settings, call="fits", precision=precision, kv_cache_dtype=kv_cache_dtype)
    reg = resolve(registry)
    settings = _auto_basis(reg, device, settings)
    s = _as_count("seqs", seqs, 1)
    c = _as_count("context", context, 0)
    fp = footprint(workload, device, precision=precision, kv_cache_dtype=kv_cache_dtype,
                   registry=reg, tp=tp, **settings)
    d = reg.device(device)
    mem = d.memory
    usable = mem.capacity * mem.usable_fraction
    required = fp.bytes(s, c)
    per_seq = fp.per_seq(c)
    spare = usable - fp.weights
    if isinstance(required, np.ndarray) or isinstance(per_seq, np.ndarray):
        required = np.broadcast_to(required, np.broadcast(s, c).shape)
        per = np.broadcast_to(per_seq, required.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            most = np.where(per > 0, np.floor(spare / np.where(per > 0, per, 1.0)), 10**12)
        max_seqs = np.where(spare <= 0, 0, most).astype(np.int64)
        s_out, c_out = (np.broadcast_to(s, required.shape).astype(np.int64),
                        np.broadcast_to(c, required.shape).astype(np.int64))
        ok, req, margin = required <= usable, required, usable - required
    else:
        max_seqs = 0 if spare <= 0 else (10**12 if per_seq <= 0 else int(spare // per_seq))
        s_out, c_out = int(s), int(c)
        ok, req, margin = bool(required <= usable), float(required), float(usable - required)
    return Fit(workload=fp.workload, device=d.name, seqs=s_out, context=c_out, fits=ok,
               required=req, usable=usable, capacity=mem.capacity,
               usable_fraction=mem.usable_fraction,
               usable_reason=mem.usable_reason or "the whole capacity (no usable_fraction "
               "given)", margin=margin, max_seqs=max_seqs, footprint=fp, tp=fp.tp,
               plugins=tuple(reg.plugin_set))
