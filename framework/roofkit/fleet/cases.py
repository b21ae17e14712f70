"""Training validation cases (``specs/training/*.toml``): one published training run each,
with its model, cluster, layout, batch, sequence, precision and recomputation, the measured
step time and the exact place it was read."""

from __future__ import annotations

from typing import Literal

import attrs

from ..schema.common import check_key, measured_problems
from ..schema.fields import count, number, positive
from ..schema.validation import CaseSource

Metric = Literal["step_s", "tokens_per_s"]


@attrs.frozen
class CaseLayout:
    """The layout the publisher ran (``roofkit train`` arguments)."""

    tp: int = count(default=1, maximum=100_000)
    pp: int = count(default=1, maximum=100_000)
    vpp: int = count(default=1, maximum=1000)
    dp: int = count(default=1, maximum=10**7)
    cp: int = count(default=1, maximum=100_000)
    ep: int = count(default=1, maximum=100_000)
    micro_batch: int = count(default=1, maximum=10**6)
    global_batch: int = count(default=1, maximum=10**8)
    seq_len: int = count(default=2048, maximum=10**8)
    precision: str = "bf16"
    recompute: str = "none"
    zero: int = count(default=0, minimum=0, maximum=3)
    lora: int = count(default=0, minimum=0, maximum=100_000, doc="LoRA rank (0: none)")
    qlora: bool = False
    attention: str = "flash"
    dropout: bool = False
    sequence_parallel: bool = True
    dp_overlap: bool = True
    kernels: str = "fused"
    lora_targets: str = "attention"
    lora_dropout: bool = False
    uneven_stages: bool = False
    pp_scatter: bool = True
    fp32_accumulation: bool = False


@attrs.frozen
class TrainingCase:
    """A published training measurement. ``unscored`` gives the reason a case is predicted
    and listed but not scored (a device without a calibration, a run the estimate does not
    model and the source leaves open); ``cause``: one line saying why the prediction misses,
    where that is known (``roofkit validate --kind training --misses``)."""

    name: str = attrs.field(validator=check_key)
    workload: str
    cluster: str
    devices: int = count(maximum=10**7)
    metric: Metric
    value: float = number(positive(1e12))
    layout: CaseLayout
    source: CaseSource
    engine: str = ""
    unscored: str = ""
    notes: str = ""
    cause: str = ""

    def problems(self) -> list[tuple[str, str]]:
        out = measured_problems(self.source.url, self.value)
        lo = self.layout
        if lo.tp * lo.pp * lo.cp * lo.dp != self.devices:
            out.append(("layout", f"tp * pp * cp * dp = {lo.tp * lo.pp * lo.cp * lo.dp} is "
                        f"not the {self.devices} devices of the case"))
        return out


def check(case: TrainingCase, tables) -> list[tuple[str, str]]:
    """The workload and the cluster exist (an ad hoc NxDEVICE names a known device)."""
    from .cluster import parse_ad_hoc

    out = []
    workloads = tables.get("workloads")
    if workloads is not None and case.workload not in workloads:
        out.append(("workload", f"unknown workload {case.workload!r}"))
    clusters, devices = tables.get("clusters"), tables.get("devices")
    if clusters is not None and case.cluster not in clusters:
        parsed = parse_ad_hoc(case.cluster)
        if parsed is None or (devices is not None and parsed[1] not in devices):
            out.append(("cluster", f"unknown cluster {case.cluster!r} (a catalogue cluster "
                        "or NxDEVICE)"))
    return out
