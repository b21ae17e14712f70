"""Validation specs: one published measurement each, with its exact configuration and source.

``roofkit validate`` predicts every case on the datasheet and the calibrated basis and
prints the signed error. A case names the workload and device keys of the catalogue, the
metric and its measured value, the configuration the publisher ran (engine, precision,
parallelism, batch, lengths) and where the number was read (URL, place, notes).
"""

from __future__ import annotations

from typing import Literal

import attrs

from ..errors import closest
from .common import catalogue_problems, check_key, measured_problems, precision_problems
from .fields import count, number, positive

Kind = Literal["serving", "throughput", "kernel", "training"]
Metric = Literal["ttft_ms", "itl_ms", "e2e_ms", "output_tokens_per_s", "kernel_ms", "step_s",
                 "mfu", "samples_per_s"]
Batching = Literal["static", "max_load", ""]
Admission = Literal["grow", "reserve", ""]
ThroughputBasis = Literal["total", "per_gpu", ""]

#: what each metric means, for tables and the README
METRICS = {
    "ttft_ms": "time to first token (prefill of the batch), ms",
    "itl_ms": "inter-token latency, mean over the output, ms",
    "e2e_ms": "end-to-end latency of the batch, ms",
    "output_tokens_per_s": "generated tokens per second",
    "kernel_ms": "time of one operator, ms",
    "step_s": "training iteration time, s",
    "mfu": "model FLOPs utilization, fraction",
    "samples_per_s": "samples per second",
}


#: devices of one run: ~6x the largest published training run (Llama 3 405B: 16,384 GPUs)
MAX_DEVICES = 100_000
#: sequences of one batch or run, and tokens of one sequence: 10M is ~10x the longest
#: context a published serving benchmark uses (1M tokens)
MAX_BATCH = 10_000_000
MAX_TOKENS = 100_000_000
MAX_REQUESTS = 100_000_000


@attrs.frozen
class CaseSource:
    """Where the measurement was read: URL, the place in it, caveats."""

    url: str
    where: str
    notes: str = ""


@attrs.frozen
class CaseConfig:
    """The configuration the publisher ran. ``engine`` is their words; the structured
    fields are what the estimator reads (``runtime`` names an engine profile of the host
    calibration, and through it the kernel profiles of ``specs/engines`` at
    ``engine_version``; ``batching = "max_load"`` an offline run with every request
    queued)."""

    engine: str
    runtime: str = ""
    engine_version: str = ""  # the engine version whose kernel profiles apply
    precision: str | None = None
    precision_note: str = ""
    kv_dtype: str | None = None
    tp: int = count(default=1, maximum=MAX_DEVICES)
    pp: int = count(default=1, maximum=MAX_DEVICES)
    dp: int = count(default=1, maximum=MAX_DEVICES)
    gpus: int = count(default=1, maximum=MAX_DEVICES)
    batch: int | None = count(default=None, maximum=MAX_BATCH)
    concurrency: int | None = count(default=None, maximum=MAX_BATCH)
    input_len: int | None = count(default=None, maximum=MAX_TOKENS)
    output_len: int | None = count(default=None, maximum=MAX_TOKENS)
    tokens: int | None = count(default=None, maximum=MAX_TOKENS)
    node: str = ""
    op: str = ""
    batching: Batching = ""
    batching_note: str = ""
    kv_admission: Admission = ""
    kv_admission_note: str = ""
    throughput_basis: ThroughputBasis = ""
    num_requests: int | None = count(default=None, maximum=MAX_REQUESTS)
    benchmark: str = ""
    scenario: str = ""
    dataset: str = ""
    model: str = ""
    model_checkpoint: str = ""
    power_limit: str = ""
    global_batch: int | None = count(default=None, maximum=MAX_REQUESTS)
    micro_batch: int | None = count(default=None, maximum=MAX_BATCH)
    seq_len: int | None = count(default=None, maximum=MAX_TOKENS)
    pipeline_interleaving: int | None = count(default=None, maximum=1000)
    activation_recompute: str = ""
    sequence_parallel: bool | None = None


@attrs.frozen
class ValidationCase:
    """One published measurement to predict. ``not_predicted`` gives the reason when the
    estimator does not predict it (a training step, lengths that vary per sample…); such a
    case is listed, never scored. ``superseded_by`` names the case holding the same
    publisher's later measurement of the same configuration with a later version of the
    same engine: this one is still predicted and listed, and only the later one is scored.
    ``unscored`` gives the reason a case is predicted and listed but not scored: the run
    depends on something the estimate does not model and the source leaves open. ``cause``
    is one line saying why the prediction misses, where that is known (``roofkit validate
    --misses``)."""

    name: str = attrs.field(validator=check_key)
    kind: Kind
    workload: str
    device: str
    metric: Metric
    config: CaseConfig
    #: a measured figure: positive; 1e12 bounds every metric's unit (ms, tokens/s, s)
    value: float = number(positive(1e12))
    source: CaseSource
    workload_note: str = ""
    not_predicted: str = ""
    superseded_by: str = ""
    unscored: str = ""
    cause: str = ""

    @property
    def nodes(self) -> int:
        """Machines the measurement ran on (one 8-GPU node at most here)."""
        per_node = 8
        return max(1, -(-max(self.config.gpus, self.config.tp) // per_node))

    def problems(self) -> list[tuple[str, str]]:
        out = measured_problems(self.source.url, self.value)
        if self.metric == "mfu" and self.value > 1:
            out.append(("value", f"an mfu is a fraction in (0, 1], got {self.value}"))
        c = self.config
        for f in ("tp", "pp", "dp", "gpus"):
            if getattr(c, f) < 1:
                out.append((f"config.{f}", f"{f} must be at least 1"))
        for f in ("batch", "input_len", "output_len", "tokens", "concurrency"):
            v = getattr(c, f)
            if v is not None and v < 1:
                out.append((f"config.{f}", f"{f} must be at least 1, got {v}"))
        if self.kind == "kernel" and not c.node:
            out.append(("config.node", "a kernel case names the circuit node it times "
                        "(`node = \"gate_up\"`)"))
        if self.metric == "output_tokens_per_s" and not c.throughput_basis:
            out.append(("config.throughput_basis", "say whether the throughput is 'total' or "
                        "'per_gpu'"))
        return out


def check(case: ValidationCase, tables) -> list[tuple[str, str]]:
    """Cross-checks against the registry: the workload, device and precisions exist."""
    out = [] if case.not_predicted else catalogue_problems(case, tables)
    cals = tables.get("calibration")
    runtime = case.config.runtime
    if runtime and cals is not None:
        engines = sorted({e for key in cals if getattr(cals[key], "device", "") is None
                          for e in cals[key].engines})
        profiles = tables.get("engines") or {}
        if runtime not in engines and runtime.lower() not in profiles:
            engines = sorted({*engines, *profiles})
            near = closest(runtime, engines)
            hint = f"did you mean {', '.join(map(repr, near))}? " if near else ""
            out.append(("config.runtime", f"runtime {runtime!r} names no engine profile of the "
                        f"host calibration or of specs/engines; {hint}profiles: "
                        f"{', '.join(engines) or 'none'}"))
    return out + precision_problems(case.config, tables)
