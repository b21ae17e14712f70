"""Every modeling coefficient of :mod:`roofkit.engine`, in one place, each with its source.

These are assumptions of the single-device roofline (``Engine.solve``), not facts about a
device: device numbers live in ``specs/devices``. Change one here and every solve follows.
"""

from __future__ import annotations

# -- latency equation -------------------------------------------------------------------
#: Activation traffic per sample as a fraction of the weight bytes: the memory term reads
#: W * (1 + ACTIVATION_TRAFFIC_PER_SAMPLE * B). A declared heuristic, not an architecture trace.
ACTIVATION_TRAFFIC_PER_SAMPLE = 0.1

#: Launch multiplier of the per-layer tax: a training step launches forward, grad-activation
#: and grad-weight kernels per layer, inference only the forward ones.
TRAINING_LAUNCH_MULTIPLIER = 3
INFERENCE_LAUNCH_MULTIPLIER = 1

# -- training work (forward-equivalents per sample) ---------------------------------------
#: One forward and a backward of twice its cost (Kaplan et al. 2020, the 6·N·D rule).
TRAINING_FORWARD_EQUIVALENTS = 3
#: Full activation recomputation runs the forward again in the backward pass.
RECOMPUTE_FORWARD_EQUIVALENTS = 4

# -- training memory ----------------------------------------------------------------------
#: Adam mixed precision: FP32 master weights, first and second moments, 4 B each
#: (Rajbhandari et al. 2020, "ZeRO", section 3.1: K = 12).
ADAM_STATE_BYTES_PER_PARAM = 12.0
#: LoRA rank and adapted projections per layer (Q, K, V, O) of the adapter approximation:
#: trainable = 2 * r * hidden * (4 * layers); gradients and optimizer state scale by
#: trainable / params (Hu et al. 2021, "LoRA", section 4).
LORA_RANK = 16
LORA_PROJECTIONS_PER_LAYER = 4
#: Activation bytes per layer from Korthikanti et al. (2023), "Reducing Activation
#: Recomputation in Large Transformer Models", section 4.1, whose constants assume 2-byte
#: activations: without recomputation s*b*h*34 + 5*a*s^2*b; with full recomputation
#: (only each layer's input kept) s*b*h*2. Other element sizes scale by bytes / 2.
ACTIVATION_BYTES_SBH = 34.0
ACTIVATION_BYTES_ATTENTION = 5.0
ACTIVATION_BYTES_SBH_FULL_RECOMPUTE = 2.0
ACTIVATION_REFERENCE_ELEMENT_BYTES = 2.0
#: Workloads without a transformer's dims train with weights + gradients (each P * e) + the
#: Adam state (ADAM_STATE_BYTES_PER_PARAM * P): M = 2 * W + 12 * P, no activation term
#: (the reference names none for them) …
#: … and with the LoRA approximation, weights plus a tenth for adapters and their state
#: (the reference's "1.1-times-weights heuristic").
GENERIC_LORA_WEIGHT_MULTIPLE = 1.1

# -- bandwidth path -------------------------------------------------------------------------
# No coefficient: offload uses the device spec's [host_link] and nothing else. A device
# without one (a microcontroller, a unified-memory SoC) has no offload path, so a footprint
# beyond its memory (and, in inference, its flash) cannot run; no PCIe link is assumed.

# -- power and energy ------------------------------------------------------------------------
#: Average power = TDP * (ENERGY_IDLE_FRACTION + ENERGY_DYNAMIC_FRACTION * HFU): an
#: energy-proportional model with a fixed idle floor (Barroso & Hölzle 2007, "The Case for
#: Energy-Proportional Computing", IEEE Computer 40(12)).
ENERGY_IDLE_FRACTION = 0.30
ENERGY_DYNAMIC_FRACTION = 0.70


def energy(tdp, hfu, seconds):
    """Joules over ``seconds`` at hardware FLOPs utilization ``hfu`` (floats or arrays):
    ``E = TDP * (ENERGY_IDLE_FRACTION + ENERGY_DYNAMIC_FRACTION * HFU) * t``; ``hfu = 0`` is
    a device waiting (host work), at the idle floor."""
    return tdp * (ENERGY_IDLE_FRACTION + ENERGY_DYNAMIC_FRACTION * hfu) * seconds

# -- validation ranges ---------------------------------------------------------------------
EFFICIENCY_MIN = 1e-9
EFFICIENCY_MAX = 1.0
ZERO_STAGES = (0, 1, 2, 3)
