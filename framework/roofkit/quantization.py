"""The precision a Hugging Face ``quantization_config`` stores its weights in.

``precision_from_hf(config)`` reads the config's own keys (``quant_method``, ``bits``,
``group_size``, the bitsandbytes flags, ``weight_block_size``, ``quant_algo``) and names the
registered precision with those bytes: AWQ int4 g128 -> ``awq-int4-g128``, GPTQ int8 g32 ->
``gptq-int8-g32``, bitsandbytes 4-bit NF4 with double quantisation -> ``nf4-dq``. A
combination no precision describes is refused with the keys it read, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import SpecError

#: group sizes the builtin AWQ/GPTQ precisions cover
GROUP_SIZES = (32, 64, 128)


def _refuse(where: str, method: str, why: str) -> SpecError:
    return SpecError(f"quantization_config ({method}): {why} @ {where}")


def precision_from_hf(config: Mapping, *, where: str = "config.json") -> str:
    """The precision name for ``config``: a whole ``config.json`` mapping (its
    ``quantization_config`` is read) or the ``quantization_config`` itself; ``where`` names
    the file in errors. Returns ``"bf16"``-style names only for unquantised configs when
    ``torch_dtype`` says so."""
    if not isinstance(config, Mapping):
        raise SpecError(f"quantization_config must be a table, not {type(config).__name__} "
                        f"@ {where}")
    qc = config.get("quantization_config", config if "quant_method" in config else None)
    if qc is None:
        dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
        return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}.get(dtype, dtype)
    if not isinstance(qc, Mapping):
        raise SpecError(f"quantization_config must be a table @ {where}:quantization_config")
    method = str(qc.get("quant_method", "")).lower()
    key = f"{where}:quantization_config"
    if method in ("awq", "gptq"):
        return _group(qc, method, key)
    if method == "bitsandbytes":
        return _bitsandbytes(qc, key)
    if method == "fp8":
        return "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method == "modelopt":
        algo = str(qc.get("quant_algo", "")).upper()
        names = {"FP8": "fp8", "NVFP4": "nvfp4"}
        if algo in names:
            return names[algo]
        raise _refuse(f"{key}.quant_algo", method, f"quant_algo {algo!r} has no precision; "
                      f"known: {', '.join(names)}")
    if method == "compressed-tensors":
        return _compressed(qc, key)
    raise _refuse(f"{key}.quant_method", method or "none",
                  "quant_method must be one of awq, gptq, bitsandbytes, fp8, mxfp4, modelopt, "
                  "compressed-tensors")


def _group(qc: Mapping, method: str, key: str) -> str:
    bits = qc.get("bits", qc.get("w_bit"))
    group = qc.get("group_size", qc.get("q_group_size"))
    allowed_bits = (4,) if method == "awq" else (4, 8)
    if bits not in allowed_bits:
        raise _refuse(f"{key}.bits", method, f"bits = {bits!r}; the {method} precisions have "
                      f"{' or '.join(map(str, allowed_bits))} bits")
    if group not in GROUP_SIZES:
        raise _refuse(f"{key}.group_size", method, f"group_size = {group!r}; the {method} "
                      f"precisions have groups of {', '.join(map(str, GROUP_SIZES))} (a "
                      "per-channel group, -1, has no precision yet)")
    if method == "awq" and qc.get("zero_point", True) is False:
        raise _refuse(f"{key}.zero_point", method, "zero_point = false has no precision "
                      "(the awq precisions count a 4-bit zero point per group)")
    return f"{method}-int{bits}-g{group}"


def _bitsandbytes(qc: Mapping, key: str) -> str:
    if qc.get("load_in_8bit"):
        return "bnb-int8"
    if not qc.get("load_in_4bit"):
        raise _refuse(key, "bitsandbytes", "neither load_in_4bit nor load_in_8bit is true")
    kind = str(qc.get("bnb_4bit_quant_type", "fp4")).lower()
    if kind not in ("nf4", "fp4"):
        raise _refuse(f"{key}.bnb_4bit_quant_type", "bitsandbytes",
                      f"bnb_4bit_quant_type = {kind!r}; one of nf4, fp4")
    name = "nf4" if kind == "nf4" else "bnb-fp4"
    return f"{name}-dq" if qc.get("bnb_4bit_use_double_quant") else name


def _compressed(qc: Mapping, key: str) -> str:
    """compressed-tensors: FP8 weights (W8A8 or W8A16) map to fp8; other schemes refused."""
    groups = qc.get("config_groups") or {}
    weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, Mapping)]
    if weights and all(w.get("type") == "float" and w.get("num_bits") == 8 for w in weights):
        return "fp8"
    raise _refuse(f"{key}.config_groups", "compressed-tensors",
                  "only 8-bit float weight groups map to a precision (fp8)")
