"""Serving-under-load validation cases (``specs/load_cases/*.toml``): one published
latency or throughput of an engine under a request load, with the engine profile, layout and
request pattern the simulator runs (:mod:`roofkit.load.validation` predicts them)."""

from __future__ import annotations

from typing import Literal

import attrs

from ..errors import RoofkitError
from .common import catalogue_problems, check_key, measured_problems, precision_problems
from .fields import count, number, positive

Metric = Literal["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "output_tokens_per_s",
                 "requests_per_s"]
Statistic = Literal["mean", "p50", "p90", "p99"]

#: metric -> the family its error is summarised in
FAMILIES = {"ttft_ms": "ttft", "tpot_ms": "tpot", "itl_ms": "tpot", "e2e_ms": "e2e",
            "output_tokens_per_s": "throughput", "requests_per_s": "throughput"}


@attrs.frozen
class LoadSource:
    url: str
    where: str
    notes: str = ""


@attrs.frozen
class LoadConfig:
    """What the publisher ran, and the simulator's reading of it."""

    engine: str  # the publisher's words
    profile: str  # an engine profile of specs/engines the simulator runs
    profile_note: str = ""
    precision: str | None = None
    kv_dtype: str | None = None
    tp: int = count(default=1, maximum=100_000)
    dp: int = count(default=1, maximum=100_000)
    concurrency: int | None = count(default=None)
    rate: float | None = number(positive(1e9), default=None, doc="requests per second")
    input_len: int = count(default=128, maximum=10**8)
    output_len: int = count(default=128, maximum=10**8)
    #: a length distribution the client drew from (``uniform:1:1024``, as ``roofkit simulate
    #: --input-len``); ``input_len``/``output_len`` then name the client's setting
    input_lengths: str = ""
    output_lengths: str = ""
    requests: int | None = count(default=None, maximum=10**8)
    disagg: str = ""
    max_num_seqs: int | None = count(default=None)
    max_batched_tokens: int | None = count(default=None, maximum=10**8)
    throughput_basis: Literal["total", "per_gpu", ""] = ""
    #: whether the run went through the engine profile's API server (false: an offline
    #: benchmark that hands the prompts to the engine in process)
    frontend: bool = True
    #: the latency bounds the measured run met (``ttft_p99=2s,tpot_p99=200ms``, the syntax of
    #: ``roofkit simulate --slo``); validation says whether the simulated run meets them
    latency_bounds: str = ""


@attrs.frozen
class LoadCase:
    """One published measurement under load; ``cause``: one line saying why the prediction
    misses, where that is known (``roofkit validate --misses``)."""

    name: str = attrs.field(validator=check_key)
    workload: str
    device: str
    metric: Metric
    value: float = number(positive(1e12))
    config: LoadConfig
    source: LoadSource
    statistic: Statistic = "mean"
    unscored: str = ""
    cause: str = ""

    def problems(self) -> list[tuple[str, str]]:
        out = measured_problems(self.source.url, self.value)
        c = self.config
        if (c.concurrency is None) == (c.rate is None):
            out.append(("config", "give exactly one of config.concurrency and config.rate"))
        for f in ("tp", "dp", "input_len", "output_len"):
            if getattr(c, f) < 1:
                out.append((f"config.{f}", f"{f} must be at least 1"))
        for f in ("input_lengths", "output_lengths"):
            spec = getattr(c, f)
            if spec:
                from ..load.requests import lengths

                try:
                    lengths(spec)
                except RoofkitError as exc:
                    out.append((f"config.{f}", f"{exc}; give a distribution as "
                                "'uniform:LO:HI' or 'normal:MEAN:STD'"))
        if c.latency_bounds:
            from ..load.simulate import parse_slo

            try:
                parse_slo(c.latency_bounds)
            except RoofkitError as exc:
                out.append(("config.latency_bounds", f"{exc}; give e.g. "
                            "'ttft_p99=2s,tpot_p99=200ms'"))
        if self.metric in ("output_tokens_per_s", "requests_per_s") and not c.throughput_basis:
            out.append(("config.throughput_basis", "say whether the throughput is 'total' or "
                        "'per_gpu'"))
        return out


def check(case: LoadCase, tables) -> list[tuple[str, str]]:
    """Cross-checks: the workload, device, engine profile and precisions exist."""
    out = catalogue_problems(case, tables)
    engines = tables.get("engines")
    if engines is not None and case.config.profile not in engines:
        out.append(("config.profile", f"unknown engine profile {case.config.profile!r}; "
                    f"one of {', '.join(sorted(engines))}"))
    return out + precision_problems(case.config, tables)


