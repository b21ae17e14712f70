"""Serving estimates: TTFT, inter-token latency as the context grows, end-to-end latency and
throughput of a batch of requests on one node, on the datasheet or the calibrated basis.

``roofkit.serve(workload, device, batch=..., input_len=..., output_len=..., tp=...)`` returns a
:class:`ServingEstimate`; :func:`validate` predicts every published measurement in
``specs/validation`` on both bases and reports the errors.

The model work of every step is the circuit's (:mod:`roofkit.circuit`: templates, op-cost
rules, tensor parallelism, the device roofline and cost model of the basis); this package
adds only what is serving's own: the request-level account (:mod:`.estimate`), host and
engine step overheads (:mod:`.overhead`) and the validation command (:mod:`.validation`).
"""

from __future__ import annotations

from ..circuit.roofline import BASES
from .estimate import ServingEstimate, estimate, max_load


def serve(workload, device, batch: int = 1, input_len: int = 128, output_len: int = 128,
          tp: int = 1, precision: str | None = None, kv_cache_dtype: str = "bf16",
          basis: str = "auto", registry=None, *, engine: str | None = None,
          require_fit: bool = False, engine_version: str | None = None) -> ServingEstimate:
    """Estimate serving ``batch`` requests of ``input_len`` prompt tokens that each generate
    ``output_len`` tokens, on ``tp`` devices of one node (the circuit's tensor parallelism:
    weights, heads and KV sharded, two all-reduces per transformer layer).

    :param precision: weight format (default: the workload's ``formats.default``, else bf16).
    :param kv_cache_dtype: KV-cache format (``bf16``, ``fp8``…).
    :param basis: ``calibrated`` (measured achievable constants, ``specs/calibration``),
        ``datasheet`` (spec ceilings) or ``auto`` (the default: calibrated where the device
        has a calibration, else datasheet); the estimate names the basis used.
    :param engine: an engine profile of the host calibration (``vllm``) whose measured
        per-step host time is added on the calibrated basis, or of ``specs/engines``
        (``llama.cpp``, ``tensorrt-llm``) whose kernel profiles cost the nodes they cover.
    :param engine_version: the engine version whose kernel profiles apply (default: the
        profile's own).
    :param require_fit: raise :class:`~roofkit.OOMError` when weights and KV do not fit.
    """
    return estimate(workload, device, batch=batch, input_len=input_len, output_len=output_len,
                    tp=tp, precision=precision, kv_cache_dtype=kv_cache_dtype, basis=basis,
                    engine=engine, engine_version=engine_version,
                    registry=registry, require_fit=require_fit)


def validate(registry=None, cases=None):
    """Predict every validation case on both bases: a :class:`~.validation.Report`."""
    from .validation import run

    return run(registry=registry, cases=cases)


__all__ = ["BASES", "ServingEstimate", "estimate", "max_load", "serve", "validate"]
