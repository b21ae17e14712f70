"""What each sweep column means: its unit (in its name), a description and, for outputs, the
direction in which it is better (``max`` or ``min``), which ``pareto`` and ``best_by`` use
when not told otherwise.
"""

from __future__ import annotations

from ..errors import SpecError, closest

#: column -> (description, better direction or None)
COLUMNS: dict[str, tuple[str, str | None]] = {
    # inputs
    "workload": ("workload key", None),
    "device": ("device key", None),
    "precision": ("numeric format (canonical name)", None),
    "tp": ("tensor-parallel degree (devices per replica)", None),
    "seq_len": ("tokens per training sequence (Engine training)", None),
    "context": ("tokens of context per sequence (decode: KV length; prefill: prompt tokens)",
                None),
    "batch_size": ("samples (sequences) per batch", None),
    "efficiency": ("declared compute efficiency (Engine)", None),
    # Engine outputs
    "latency_ms": ("batch latency (Engine) or step latency (decode, prefill), ms", "min"),
    "latency_compute_ms": ("compute term F / (eta * F_peak), ms", "min"),
    "latency_memory_ms": ("memory term bytes / BW, ms", "min"),
    "latency_overhead_ms": ("fixed overhead T_dispatch + L * T_layer * m, ms", "min"),
    "throughput_per_s": ("samples (tokens, for decode and prefill) per second", "max"),
    "energy_j": ("energy of one batch (engine) or one step on all tp devices (decode, "
                 "prefill), J", "min"),
    "memory_footprint_bytes": ("bytes the configuration needs on each device", "min"),
    "capacity_bytes": ("bytes the device offers to it", "max"),
    "feasible": ("the footprint fits the device", "max"),
    "reason": ("why the point fits or does not", None),
    "bottleneck": ("the larger of the roofline terms", None),
    "overhead_dominated": ("the fixed overhead exceeds both roofline terms", "min"),
    "mfu": ("model FLOPs utilization", "max"),
    "hfu": ("hardware FLOPs utilization", "max"),
    "bandwidth_path": ("memory tier that bounds the memory term", None),
    "peak_flops_per_s": ("compute peak used (before efficiency), FLOP/s", "max"),
    "bandwidth_bytes_per_s": ("bandwidth of the selected memory path, B/s", "max"),
    "basis": ("what the device numbers rest on: datasheet or calibrated (measured) "
              "constants", None),
    "compute_slot": ("compute slot(s) whose peak was used (decode, prefill: of the matrix "
                     "nodes, joined by +)", None),
    "fell_back": ("the device lacks the precision's slot; the peak of a fallback slot "
                  "(Engine: the device's default; circuit: the precision's fallback chain) "
                  "is used", "min"),
    # circuit outputs
    "flops": ("FLOPs of the step", "min"),
    "bytes_moved": ("bytes moved by the step", "min"),
    "weights_bytes": ("weight bytes of the model at the precision", "min"),
    "kv_bytes": ("KV-cache and recurrent-state bytes of the batch", "min"),
    "itl_ms": ("inter-token latency: the decode step at the batch and context, ms", "min"),
    "ttft_ms": ("time to first token as the prefill of the prompt (no queueing), ms", "min"),
}

#: unit suffixes of column names: ``latency`` finds ``latency_ms``, ``throughput`` finds
#: ``throughput_per_s``.
UNIT_SUFFIXES = ("ms", "us", "s", "per_s", "bytes", "bytes_per_s", "flops_per_s", "j", "w")

#: words accepted for boolean columns in queries
ALIASES = {"fits": "feasible"}


def resolve_column(name: str, known) -> str:
    """The column ``name`` refers to: itself, an alias (``fits``), or the one known column
    that is ``name`` plus a unit suffix (``latency`` -> ``latency_ms``). Unknown names raise
    :class:`SpecError` listing the known columns."""
    known = list(known)
    text = name.strip()
    if text in known:
        return text
    alias = ALIASES.get(text)
    if alias in known:
        return alias
    hits = [k for k in known for u in UNIT_SUFFIXES if k == f"{text}_{u}"]
    if len(hits) == 1:
        return hits[0]
    near = closest(text, known)
    hint = f" Did you mean {', '.join(repr(n) for n in near)}?" if near else ""
    other = [c for c in COLUMNS if c == text or any(c == f"{text}_{u}" for u in UNIT_SUFFIXES)]
    if other and not near:
        hint = (f" {other[0]!r} is a column of another mode (engine: mfu, hfu...; "
                f"decode: itl_ms; prefill: ttft_ms).")
    raise SpecError(f"unknown column {text!r}.{hint} Known columns: {', '.join(known)}")


def direction_of(column: str, given: str | None = None) -> str:
    """``max`` or ``min`` for ``column``: ``given`` when set, else the column's declared
    direction; columns without one (inputs, labels) must be told."""
    if given is not None:
        g = str(given).strip().lower()
        if g in ("max", "maximize", "+", "high", "higher"):
            return "max"
        if g in ("min", "minimize", "-", "low", "lower"):
            return "min"
        raise SpecError(f"direction for {column!r} must be 'max' or 'min', got {given!r}")
    declared = COLUMNS.get(column, (None, None))[1]
    if declared is None:
        raise SpecError(f"column {column!r} has no natural direction; say which is better "
                        f"with '{column}:max' or '{column}:min'")
    return declared


def split_direction(spec: str) -> tuple[str, str | None]:
    """``'latency_ms:min'`` -> (``'latency_ms'``, ``'min'``); ``'mfu'`` -> (``'mfu'``, None)."""
    name, sep, direction = str(spec).partition(":")
    return name.strip(), (direction.strip() or None) if sep else None
