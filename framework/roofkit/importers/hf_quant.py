"""A checkpoint's quantization config -> the workload's per-role ``[formats]`` table.

Read from ``config.json``'s ``quantization_config`` or a ModelOpt ``hf_quant_config.json``:

========================  ===============================  =====================
method                    weights                          GEMM-input activations
========================  ===============================  =====================
``fp8`` (block or tensor)  fp8 (E4M3)                       fp8 when dynamic/static
``mxfp4`` (gpt-oss)        mxfp4 on the MoE experts only    bf16
``awq``, ``gptq``          awq/gptq-int4/8-g32/64/128       fp16 (weight-only)
``compressed-tensors``     by ``format`` and num_bits       by input_activations
ModelOpt ``quant_algo``    FP8, NVFP4, W4A16_AWQ, W4A8_AWQ  fp8, nvfp4, bf16, fp8
``bitsandbytes``           nf4, bnb-fp4 (-dq), bnb-int8     bf16 / int8
========================  ===============================  =====================

Modules a config keeps unquantized (``modules_to_not_convert``, ``ignore``,
``exclude_modules``) become roles pinned to bf16. AWQ, GPTQ and bitsandbytes name the
registered group-scaled formats (:func:`roofkit.quantization.precision_from_hf`, scales and
zero points counted); the integer schemes of ModelOpt (W4A16/W4A8 AWQ) and
compressed-tensors map to the plain ``int4``/``int8``, and the notes say how many bits a
weight their scales add.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from ..errors import Problem, SpecError


@attrs.define
class Quant:
    formats: dict = attrs.field(factory=dict)
    notes: list = attrs.field(factory=list)
    source: str = ""  # a sentence for the provenance of [formats]


#: module-name fragments -> the template weight role they name (first match wins)
_ROLE_PATTERNS = (
    ("lm_head", "lm_head"), ("embed", "embedding"), ("wte", "embedding"),
    ("shared_expert", "shared_experts"), ("router", "router"), (r"mlp\.gate\b", "router"),
    ("experts", "experts"), ("linear_attn", "linear_attention"), ("mixer", "ssm"),
    ("self_attn", "attention"), ("attn", "attention"), (r"\b[qkvo]_proj", "attention"),
    ("mlp", "mlp"), ("gate_proj", "mlp"), ("up_proj", "mlp"), ("down_proj", "mlp"),
)


def role_of_module(name: str) -> str | None:
    n = name.lower()
    for pat, role in _ROLE_PATTERNS:
        if re.search(pat, n):
            return role
    return None


def _excluded(modules, file: str, key: str, q: Quant) -> None:
    if modules is None:
        return
    if not isinstance(modules, list):
        raise SpecError(Problem(file, key, f"{key} must be a list of module names"))
    for m in modules:
        role = role_of_module(str(m))
        if role is None:
            q.notes.append(f"{key} entry {m!r} names no weight role; costed at the "
                           "checkpoint's quantized format")
        elif re.search(r"layers\.\d", str(m)):
            q.notes.append(f"{key} entry {m!r} keeps only some layers' {role} in 16 bits; "
                           "every layer's is costed quantized")
        elif re.search(r"(q|k|v|o|qkv|gate|up|down|gate_up)_proj$", str(m)):
            q.notes.append(f"{key} entry {m!r} keeps one projection of the {role} weights in "
                           "16 bits; the role is costed quantized")
        else:
            q.formats.setdefault(role, "bf16")


def _int_weights(bits, group, file: str, key: str, method: str, q: Quant) -> str:
    if bits not in (4, 8):
        raise SpecError(Problem(file, f"{key}.bits", f"{method} with {bits} bits is not "
                                "mapped (4 or 8)"))
    fmt = f"int{bits}"
    if group and group > 0:
        extra = 16 / group
        q.notes.append(f"{method} int{bits} with group_size {group:g}: an fp16 scale (and "
                       f"zero point) per group adds about {extra:.3g} bits a weight, which "
                       f"roofkit's {fmt} (no group scale) leaves out")
    return fmt


def _fp8(qc: Mapping, file: str, key: str, q: Quant) -> None:
    fmt = str(qc.get("fmt", "e4m3")).lower()
    if fmt not in ("e4m3", "float8_e4m3fn"):
        raise SpecError(Problem(file, f"{key}.fmt", f"fp8 fmt {fmt!r} is not mapped (e4m3)"))
    q.formats["default"] = "fp8"
    block = qc.get("weight_block_size")
    q.source = (f"config quantization_config: quant_method fp8, fmt {fmt}"
                + (f", weight_block_size {block}" if block else ""))
    _excluded(qc.get("modules_to_not_convert"), file, f"{key}.modules_to_not_convert", q)


def _mxfp4(qc: Mapping, file: str, key: str, q: Quant) -> None:
    # transformers' Mxfp4HfQuantizer converts the MoE expert weights only
    q.source = "config quantization_config: quant_method mxfp4 (MoE expert weights)"
    _excluded(qc.get("modules_to_not_convert"), file, f"{key}.modules_to_not_convert", q)
    if q.formats.get("experts") != "bf16":
        q.formats["experts"] = "mxfp4"


def _weight_only(qc: Mapping, file: str, key: str, method: str, q: Quant) -> None:
    """AWQ, GPTQ and bitsandbytes: the registered group-scaled format with its real bytes
    (:func:`roofkit.quantization.precision_from_hf`), which declares the 16-bit activations
    it computes beside."""
    from ..quantization import precision_from_hf

    q.formats["default"] = precision_from_hf(qc, where=file)
    keys = ("bits", "group_size", "zero_point", "load_in_4bit", "load_in_8bit",
            "bnb_4bit_quant_type", "bnb_4bit_use_double_quant")
    said = ", ".join(f"{k} {qc[k]}" for k in keys if k in qc)
    q.source = f"config quantization_config: quant_method {method}" + (f", {said}" if said
                                                                          else "")
    skip = "llm_int8_skip_modules" if method == "bitsandbytes" else "modules_to_not_convert"
    _excluded(qc.get(skip), file, f"{key}.{skip}", q)


def _compressed(qc: Mapping, file: str, key: str, q: Quant) -> None:
    groups = qc.get("config_groups") or {}
    if len(groups) != 1:
        raise SpecError(Problem(file, f"{key}.config_groups", (
            f"{len(groups)} config_groups: only one quantization scheme per checkpoint is "
            "mapped")))
    (gname, g), = groups.items()
    w = g.get("weights") or {}
    a = g.get("input_activations") or {}
    fmt = str(qc.get("format", "")).lower()
    wbits, wtype = w.get("num_bits"), w.get("type", "int")
    if fmt.startswith("nvfp4") or (wbits == 4 and wtype == "float" and w.get("group_size") == 16):
        weights = "nvfp4"
    elif fmt.startswith("mxfp4"):
        weights = "mxfp4"
    elif wbits == 8 and wtype == "float":
        weights = "fp8"
    elif wtype == "int":
        weights = _int_weights(wbits, w.get("group_size"), file,
                               f"{key}.config_groups.{gname}.weights", "compressed-tensors", q)
    else:
        raise SpecError(Problem(file, f"{key}.config_groups.{gname}.weights", (
            f"weights of {wbits} bits, type {wtype!r} (format {fmt!r}) are not mapped")))
    q.formats["default"] = weights
    if not a:
        q.formats["activations"] = "bf16"
    elif a.get("num_bits") == 4 and a.get("type") == "float":
        q.formats["activations"] = "nvfp4" if weights == "nvfp4" else "mxfp4"
    elif a.get("num_bits") == 8:
        q.formats["activations"] = "fp8" if a.get("type") == "float" else "int8"
    if q.formats.get("activations") == weights:
        q.formats.pop("activations")
    kv = qc.get("kv_cache_scheme") or {}
    if kv.get("num_bits") == 8 and kv.get("type") == "float":
        q.formats["kv"] = "fp8"
    q.source = f"config quantization_config: compressed-tensors format {fmt or '?'}"
    _excluded(qc.get("ignore"), file, f"{key}.ignore", q)


_MODELOPT = {
    "FP8": ("fp8", None), "NVFP4": ("nvfp4", None), "W4A16_AWQ": ("int4", "bf16"),
    "W4A8_AWQ": ("int4", "fp8"), "INT8_SQ": ("int8", None), "W8A16": ("int8", "bf16"),
}


def _modelopt(qc: Mapping, file: str, key: str, q: Quant) -> None:
    algo = qc.get("quant_algo")
    if algo not in _MODELOPT:
        raise SpecError(Problem(file, f"{key}.quant_algo", (
            f"ModelOpt quant_algo {algo!r} is not mapped; mapped: {', '.join(_MODELOPT)}")))
    weights, act = _MODELOPT[algo]
    if weights == "int4":
        _int_weights(4, qc.get("group_size", 128), file, key, f"ModelOpt {algo}", q)
    q.formats["default"] = weights
    if act:
        q.formats["activations"] = act
    kv = qc.get("kv_cache_quant_algo")
    if kv == "FP8":
        q.formats["kv"] = "fp8"
    elif kv not in (None, "NONE"):
        raise SpecError(Problem(file, f"{key}.kv_cache_quant_algo", (
            f"ModelOpt kv_cache_quant_algo {kv!r} is not mapped (FP8)")))
    q.source = f"ModelOpt quantization: quant_algo {algo}" + (f", KV {kv}" if kv else "")
    _excluded(qc.get("exclude_modules"), file, f"{key}.exclude_modules", q)


def quant_formats(qc: Mapping | None, file: str, key: str = "quantization_config") -> Quant:
    """The formats of a quantization config (``None``: unquantized, no formats)."""
    q = Quant()
    if qc is None:
        return q
    if not isinstance(qc, Mapping):
        raise SpecError(Problem(file, key, f"{key} must be a table"))
    if "quantization" in qc and isinstance(qc["quantization"], Mapping):  # hf_quant_config
        _modelopt(qc["quantization"], file, "quantization", q)
        return q
    method = str(qc.get("quant_method", "")).lower()
    if method == "fp8":
        _fp8(qc, file, key, q)
    elif method == "mxfp4":
        _mxfp4(qc, file, key, q)
    elif method in ("awq", "gptq", "bitsandbytes"):
        _weight_only(qc, file, key, method, q)
    elif method == "compressed-tensors":
        _compressed(qc, file, key, q)
    elif method == "modelopt":
        _modelopt(qc, file, key, q)
    else:
        raise SpecError(Problem(file, f"{key}.quant_method", (
            f"quant_method {method!r} is not mapped; mapped: fp8, mxfp4, awq, gptq, "
            "compressed-tensors, modelopt, bitsandbytes")))
    return q
