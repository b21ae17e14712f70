"""Training memory on one device: weights, gradients, optimizer state and activations.

Transformer (template workloads with a hidden width and heads)::

    M = W/z3 + G*f/z2 + O*f/z1 + A
    W = G = P * e            weights and gradients at the element size e of the precision
    O = 12 * P               Adam: FP32 master weights, first and second moments
    f = min(2 * r * h * 4 * L / P, 1) with LoRA (rank r = 16, Q/K/V/O adapted), else 1
    z1, z2, z3 = dp_size from ZeRO stage 1, 2, 3 on (else 1): optimizer state, gradients,
                 then weights sharded over the data-parallel group (Rajbhandari et al. 2020)
    A = L * (34*s*b*h + 5*a*s^2*b) * e/2   without recomputation
    A = L * 2*s*b*h * e/2                  with full activation recomputation
                                           (Korthikanti et al. 2023, section 4.1)

Any other workload (no transformer dims)::

    M = W + G + O = 2 * P * e + 12 * P      weights, gradients, Adam state
    M = 1.1 * W                             with the LoRA approximation

Coefficients live in :mod:`roofkit.engine.calibration`.
"""

from __future__ import annotations

from . import calibration as cal


def transformer_training_memory(params: float, element_bytes: float, *, layers: int,
                                hidden: float, heads: float, batch: int, seq_len: int,
                                zero_stage: int, dp_size: int, lora: bool,
                                recompute: bool) -> dict[str, float]:
    """Per-device training bytes by component (``weights``, ``gradients``, ``optimizer``,
    ``activations``) and their ``total``. ``batch`` and ``seq_len`` may be numpy arrays
    (the vectorized sweep calls this same function)."""
    weights = params * element_bytes
    grads = params * element_bytes
    optimizer = params * cal.ADAM_STATE_BYTES_PER_PARAM
    if lora:
        adapter = 2.0 * cal.LORA_RANK * hidden * cal.LORA_PROJECTIONS_PER_LAYER * layers
        fraction = min(adapter / params, 1.0)
        grads *= fraction
        optimizer *= fraction
    if zero_stage >= 1:
        optimizer /= dp_size
    if zero_stage >= 2:
        grads /= dp_size
    if zero_stage >= 3:
        weights /= dp_size
    s, b, h = seq_len * 1.0, batch * 1.0, float(hidden)
    scale = element_bytes / cal.ACTIVATION_REFERENCE_ELEMENT_BYTES
    if recompute:
        per_layer = cal.ACTIVATION_BYTES_SBH_FULL_RECOMPUTE * s * b * h
    else:
        per_layer = (cal.ACTIVATION_BYTES_SBH * s * b * h
                     + cal.ACTIVATION_BYTES_ATTENTION * heads * s * s * b)
    activations = layers * per_layer * scale
    return {"weights": weights, "gradients": grads, "optimizer": optimizer,
            "activations": activations, "total": weights + grads + optimizer + activations}


def generic_training_memory(params: float, element_bytes: float, *, lora: bool) -> float:
    """Training bytes of a workload without transformer dims: weights + gradients + Adam
    state, ``2 * P * e + 12 * P``, or ``1.1 * P * e`` with the LoRA approximation."""
    weights = params * element_bytes
    if lora:
        return weights * cal.GENERIC_LORA_WEIGHT_MULTIPLE
    return 2.0 * weights + params * cal.ADAM_STATE_BYTES_PER_PARAM
